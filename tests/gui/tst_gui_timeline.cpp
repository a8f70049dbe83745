// One run: hover text at a known point, go to peak, pinning, search, the
// allocator state at the cursor, stacking by allocation, export.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <climits>
#include <cmath>

#include "allocator_view.h"
#include "gui_test_traces.h"
#include "inspector_view.h"
#include "models.h"
#include "phase_bands.h"
#include "run_loader.h"
#include "run_view.h"
#include "search_panel.h"
#include "timeline_plot.h"
#include "zoom_state.h"

using namespace memscope;
using namespace memscope::gui;

class TimelineTest : public QObject {
    Q_OBJECT
private:
    RunPtr run_;
    std::unique_ptr<RunView> view_;
    double sx(int64_t t) const { return view_->plot()->axisMap().forward(t); }

private slots:
    void init() {
        auto r = makeRun(guitest::makeSimpleTrace(), QStringLiteral("simple.memscope"));
        QVERIFY2(r.ok(), r.ok() ? "" : r.message().c_str());
        run_ = *r;
        view_ = std::make_unique<RunView>(run_);
        view_->resize(1000, 600);
        view_->show();
        QVERIFY(QTest::qWaitForWindowExposed(view_.get()));
        view_->plot()->renderNow();
    }
    void cleanup() { view_.reset(); }

    void phasesUnderTheCursorIgnoreEarlierAndLongPhases() {
        Trace t;
        auto phase = [&](const char* name, PhaseKind kind, int64_t start, int64_t end) {
            Phase p;
            p.name = t.internString(name);
            p.kind = kind;
            p.start = start;
            p.end = end;
            t.addPhase(p);
        };
        phase("run", PhaseKind::Step, 0, 10000);  // long: must not hide the later ones
        for (int i = 0; i < 100; ++i)
            phase(i == 42 ? "forward 42" : "forward", PhaseKind::Forward, i * 100, i * 100 + 50);
        phase("block 3", PhaseKind::Block, 4210, 4220);
        const PhaseBandData d = buildPhaseBands(t, 0);
        const AxisMap map = AxisMap::linear(0, 1.0);
        QCOMPARE(phasesAt(d, map, 4215), QStringLiteral("run / forward 42 / block 3"));
        QCOMPARE(phasesAt(d, map, 4260), QStringLiteral("run"));
        QCOMPARE(phasesAt(d, map, 20000), QString());
        QCOMPARE(int(d.firstReaching(1, 4200)), 42);  // 42 earlier passes skipped
    }

    // A hostile trace whose events span more than 2^63 ns used to draw an
    // empty plot (int64 overflow on the way to the axis): it must draw, with a
    // finite range and the live bytes under the cursor.
    void spanPastInt64RangeIsDrawn() {
        Trace t;
        t.metadata.name = "huge span";
        auto add = [&](int64_t time, EventKind kind, uint64_t address, uint64_t size) {
            Event e;
            e.time = time;
            e.kind = kind;
            e.address = address;
            e.size = size;
            t.events.push_back(e);
        };
        add(INT64_MIN + 10, EventKind::Alloc, 0x1000, 100);
        add(0, EventKind::Alloc, 0x2000, 200);
        add(INT64_MAX - 10, EventKind::FreeCompleted, 0x1000, 100);
        auto r = makeRun(std::move(t), QStringLiteral("huge.memscope"));
        QVERIFY2(r.ok(), r.ok() ? "" : r.message().c_str());
        RunView view(*r);
        view.resize(1000, 600);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.plot()->renderNow();
        const ZoomState* z = view.zoom();
        QVERIFY(std::isfinite(z->fullBegin()) && std::isfinite(z->fullEnd()));
        QVERIFY(z->fullEnd() > z->fullBegin());
        const double mid = view.plot()->axisMap().forward(INT64_MAX / 2);
        QVERIFY(z->fullBegin() < mid && mid < z->fullEnd());
        const QString text = view.plot()->hoverTextAt(mid, 10);
        QVERIFY2(text.contains(QStringLiteral("live 300 B")), qPrintable(text));
        // No recorded categories: it opens by allocation, not as one "unknown" block.
        QVERIFY(view.stackMode() == StackMode::ByAllocation);
    }

    // The simple trace recorded its categories: it opens stacked by category.
    void recordedCategoriesOpenByCategory() { QVERIFY(view_->stackMode() == StackMode::ByCategory); }

    void hoverTextAtKnownPoint() {
        // At t = 25, A (activation, 100 B) sits under B (gradient) in category order.
        const QString low = view_->plot()->hoverTextAt(sx(25), 50);
        QVERIFY2(low.contains(QStringLiteral("100 B at 0x1000")), qPrintable(low));
        QVERIFY(low.contains(QStringLiteral("category: activation")));
        QVERIFY(low.contains(QStringLiteral("phase: step 0 / forward")));
        QVERIFY(low.contains(QStringLiteral("forward  (model.py:12)")));
        QVERIFY2(!low.contains(QStringLiteral("PyEval_EvalFrame")), "noise frames are hidden");
        QVERIFY(low.contains(QStringLiteral("live 400 B")));
        const QString high = view_->plot()->hoverTextAt(sx(25), 250);
        QVERIFY2(high.contains(QStringLiteral("300 B at 0x2000")), qPrintable(high));
        QVERIFY(high.contains(QStringLiteral("gradient")));
        // Above the stack: only the head line.
        QVERIFY(!view_->plot()->hoverTextAt(sx(25), 450).contains(QStringLiteral("category")));
    }

    void hoverByMouse() {
        TimelinePlot* plot = view_->plot();
        const QPoint p = plot->coordToPixel(sx(25), 50);
        QWidget* target = plot->childAt(p);
        QVERIFY(target);
        QSignalSpy spy(plot, &TimelinePlot::hoverChanged);
        QTest::mouseMove(target, target->mapFrom(plot, p));
        QTRY_VERIFY(spy.count() > 0);
        QTRY_VERIFY2(view_->hoverText().contains(QStringLiteral("0x1000")),
                     qPrintable(view_->hoverText()));
    }

    void goToPeak() {
        const DeviceTimeline* tl = view_->plot()->timeline();
        QCOMPARE(tl->peak.bytes, int64_t(400));
        QCOMPARE(tl->peak.time, int64_t(20));
        view_->goToPeak();
        const double px = sx(20);
        QCOMPARE(view_->peakX(), px);
        QVERIFY(view_->zoom()->begin() < px && px < view_->zoom()->end());
        QCOMPARE(view_->zoom()->cursor(), px);
        QVERIFY2(view_->hoverText().contains(QStringLiteral("live 400 B")),
                 qPrintable(view_->hoverText()));
        view_->zoom()->reset();
        QCOMPARE(view_->zoom()->begin(), view_->zoom()->fullBegin());
        QVERIFY(view_->zoom()->back());
    }

    void clickPinsIntoInspector() {
        InspectorView inspector;
        connect(view_.get(), &RunView::allocationPinned, &inspector, &InspectorView::setAllocation);
        TimelinePlot* plot = view_->plot();
        const QPoint p = plot->coordToPixel(sx(25), 50);
        QWidget* target = plot->childAt(p);
        QSignalSpy spy(view_.get(), &RunView::allocationPinned);
        QTest::mouseClick(target, Qt::LeftButton, {}, target->mapFrom(plot, p));
        QCOMPARE(spy.count(), 1);
        QVERIFY2(inspector.summaryText().contains(QStringLiteral("0x1000")),
                 qPrintable(inspector.summaryText()));
        QCOMPARE(inspector.stackModel()->rowCount(), 1);  // the noise frame is hidden
        inspector.stackModel()->setShowNoise(true);
        QCOMPARE(inspector.stackModel()->rowCount(), 2);
        // B was live next to A when A... B came later; at A's allocation only A was live.
        QCOMPARE(inspector.neighbourModel()->rowCount(), 0);
    }

    void searchByAddressAndText() {
        SearchPanel panel;
        panel.setSource(run_, view_->device());
        QSignalSpy done(&panel, &SearchPanel::searchFinished);
        panel.search(QStringLiteral("0x2010"));
        QTRY_COMPARE(done.count(), 1);
        QCOMPARE(panel.model()->rowCount(), 1);
        QCOMPARE(
            panel.model()->data(panel.model()->index(0, AllocationListModel::Address)).toString(),
            QStringLiteral("0x2000"));
        panel.search(QStringLiteral("MODEL.py"));
        QTRY_COMPARE(done.count(), 2);
        QCOMPARE(panel.model()->rowCount(), 1);
        panel.search(QStringLiteral("nothing-like-this"));
        QTRY_COMPARE(done.count(), 3);
        QCOMPARE(panel.model()->rowCount(), 0);
    }

    void allocatorStateAtCursor() {
        AllocatorView view;
        view.resize(600, 300);
        view.setSource(run_, view_->device());
        view.setTime(25);
        view.waitForIdle();
        QVERIFY(view.snapshot());
        QCOMPARE(view.snapshot()->active_bytes, uint64_t(400));
        QCOMPARE(view.snapshot()->reserved_bytes, uint64_t(0x4000));
        QCOMPARE(view.snapshot()->segments.size(), size_t(1));
        QVERIFY(view.headline().contains(QStringLiteral("1 segments")));
        QImage img(view.size(), QImage::Format_ARGB32);
        view.render(&img);  // paints without crashing
    }

    void stackByAllocation() {
        view_->setStackMode(StackMode::ByAllocation);
        view_->plot()->renderNow();
        const BandSet& b = view_->plot()->bands();
        QVERIFY(b.shown.size() >= 3);
        QCOMPARE(b.bands.front().key, int64_t(-1));  // the rest at the bottom
        // By start: A, then B on top of it at t = 25.
        const QString high = view_->plot()->hoverTextAt(sx(25), 250);
        QVERIFY2(high.contains(QStringLiteral("0x2000")), qPrintable(high));
    }

    void exportFormats() {
        QTemporaryDir dir;
        for (const char* ext : {"png", "svg", "pdf"}) {
            const QString path = dir.filePath(QStringLiteral("plot.") + QLatin1String(ext));
            QString error;
            QVERIFY2(view_->plot()->exportTo(path, &error), qPrintable(error));
            QVERIFY(QFileInfo(path).size() > 100);
        }
        QString error;
        QVERIFY(!view_->plot()->exportTo(dir.filePath(QStringLiteral("plot.bmpx")), &error));
        QVERIFY(!error.isEmpty());
    }

    void wheelAndDragChangeTheRange() {
        TimelinePlot* plot = view_->plot();
        ZoomState* z = view_->zoom();
        const double w0 = z->end() - z->begin();
        z->zoomBy(0.5, (z->begin() + z->end()) / 2);
        QVERIFY(z->end() - z->begin() < w0);
        const double b0 = z->begin();
        const QPoint p = plot->coordToPixel((z->begin() + z->end()) / 2, 100);
        QWidget* target = plot->childAt(p);
        const QPoint local = target->mapFrom(plot, p);
        QTest::mousePress(target, Qt::LeftButton, {}, local);
        QMouseEvent move(QEvent::MouseMove, QPointF(local + QPoint(80, 0)),
                         target->mapToGlobal(QPointF(local + QPoint(80, 0))), Qt::NoButton,
                         Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(target, &move);
        QTest::mouseRelease(target, Qt::LeftButton, {}, local + QPoint(80, 0));
        QVERIFY2(z->begin() < b0, "dragging right shows earlier times");
    }
};

QTEST_MAIN(TimelineTest)
#include "tst_gui_timeline.moc"
