// One run: hover text at a known point, go to peak, pinning, search, the
// allocator state at the cursor, stacking by allocation, export, the
// out-of-memory marker and banner.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <climits>
#include <cmath>

#include "allocator/allocator_view.h"
#include "common/category_colors.h"
#include "gui_test_traces.h"
#include "inspect/inspector_view.h"
#include "inspect/models.h"
#include "inspect/search_panel.h"
#include "loading/run_loader.h"
#include "memscope_test/event_builder.h"
#include "run_view/overview_strip.h"
#include "run_view/phase_bands.h"
#include "run_view/run_view.h"
#include "run_view/timeline_plot.h"
#include "run_view/zoom_state.h"

using namespace memscope;
using namespace memscope::gui;

namespace {

void addEvent(Trace& t, int64_t time, EventKind kind, uint64_t address, uint64_t size) {
    t.events.push_back(testsupport::makeEvent(time, kind, address, size));
}

void addPhase(Trace& t, const char* name, PhaseKind kind, int64_t start, int64_t end,
              int16_t device = -1, bool inferred = false) {
    Phase p;
    p.name = t.internString(name);
    p.kind = kind;
    p.device = device;
    p.start = start;
    p.end = end;
    p.inferred = inferred;
    t.addPhase(p);
}

}  // namespace

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
        addPhase(t, "run", PhaseKind::Step, 0, 10000);  // long: must not hide the later ones
        for (int i = 0; i < 100; ++i)
            addPhase(t, i == 42 ? "forward 42" : "forward", PhaseKind::Forward, i * 100,
                     i * 100 + 50);
        addPhase(t, "block 3", PhaseKind::Block, 4210, 4220);
        const PhaseBandData d = buildPhaseBands(t, 0);
        const AxisMap map = AxisMap::linear(0, 1.0);
        QCOMPARE(phasesAt(d, map, 4215), QStringLiteral("run / forward 42 / block 3"));
        QCOMPARE(phasesAt(d, map, 4260), QStringLiteral("run"));
        QCOMPARE(phasesAt(d, map, 20000), QString());
        QCOMPARE(int(d.firstReaching(1, 4200)), 42);  // 42 earlier passes skipped
    }

    // The loader builds each device's phase strip (not the first paint): a
    // step logged after the passes it holds, phases of another device left
    // out, each row by start, inferred phases named so.
    void phaseBandsAreBuiltWithTheRun() {
        Trace t = guitest::makeSimpleTrace();
        addPhase(t, "forward 1", PhaseKind::Forward, 60, 70, 0);
        addPhase(t, "backward 1", PhaseKind::Backward, 70, 80, -1, /*inferred=*/true);
        addPhase(t, "step 1", PhaseKind::Step, 60, 85);  // logged when it closed
        addPhase(t, "elsewhere", PhaseKind::Forward, 61, 62, 1);
        auto r = makeRun(std::move(t), QStringLiteral("bands.memscope"));
        QVERIFY2(r.ok(), r.ok() ? "" : r.message().c_str());
        const DeviceRef ref = (*r)->busiestDevice();
        const std::shared_ptr<const PhaseBandData> d = (*r)->phaseBands(ref);
        QVERIFY(d);
        QCOMPARE(int(d->itemCount()), 6);  // 3 of makeSimpleTrace, 3 here
        for (const auto& row : d->rows)
            for (size_t k = 1; k < row.size(); ++k) QVERIFY(row[k - 1].start <= row[k].start);
        QCOMPARE(int(d->rows[0].size()), 2);  // step 0, step 1
        QCOMPARE(QString::fromStdString(d->nameOf(d->rows[0][1])), QStringLiteral("step 1"));
        const AxisMap map = AxisMap::linear(0, 1.0);
        QCOMPARE(phasesAt(*d, map, 75), QStringLiteral("step 1 / backward 1 (inferred)"));
        QVERIFY(!(*r)->phaseBands(DeviceRef{0, 99}));
    }

    // The overview draws each pixel column's range: a spike one event long
    // in a long, low run still reaches the top of its column.
    void overviewShowsAOneEventSpike() {
        Trace t;
        for (int i = 0; i < 20000; ++i) {
            addEvent(t, 10 * i, EventKind::Alloc, 0x1000, 100);
            addEvent(t, 10 * i + 5, EventKind::FreeCompleted, 0x1000, 100);
        }
        // The spike, three fifths of the way along: 1 MB for 1 ns of 200 us.
        addEvent(t, 120002, EventKind::Alloc, 0x9000, 1 << 20);
        addEvent(t, 120003, EventKind::FreeCompleted, 0x9000, 1 << 20);
        std::stable_sort(t.events.begin(), t.events.end(),
                         [](const Event& a, const Event& b) { return a.time < b.time; });
        auto r = makeRun(std::move(t), QStringLiteral("spike.memscope"));
        QVERIFY2(r.ok(), r.ok() ? "" : r.message().c_str());
        RunView view(*r);
        view.resize(1000, 600);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        auto* strip = view.findChild<OverviewStrip*>();
        QVERIFY(strip);
        // The brush (the visible range) over the first twentieth only.
        ZoomState* zoom = view.zoom();
        zoom->setRange(zoom->begin(), zoom->begin() + (zoom->end() - zoom->begin()) / 20);
        const QImage image = strip->grab().toImage();
        const QColor base = strip->palette().color(QPalette::Base);
        // Columns whose top fifth holds the curve: only those at the spike.
        std::vector<int> tall;
        for (int x = image.width() / 10; x < image.width(); ++x)
            for (int y = 2; y < image.height() / 5 + 3; ++y)
                if (image.pixelColor(x, y) != base &&
                    image.pixelColor(x, y) != strip->palette().color(QPalette::Window)) {
                    tall.push_back(x);
                    break;
                }
        QVERIFY2(!tall.empty(), "the spike is not drawn");
        QVERIFY2(tall.size() <= 3, qPrintable(QStringLiteral("%1 tall columns").arg(tall.size())));
        const double at = double(tall.front()) / image.width();
        QVERIFY2(std::abs(at - 0.6) < 0.02, qPrintable(QString::number(at)));
    }

    // A hostile trace whose events span more than 2^63 ns used to draw an
    // empty plot (int64 overflow on the way to the axis): it must draw, with a
    // finite range and the live bytes under the cursor.
    void spanPastInt64RangeIsDrawn() {
        Trace t;
        t.metadata.name = "huge span";
        addEvent(t, INT64_MIN + 10, EventKind::Alloc, 0x1000, 100);
        addEvent(t, 0, EventKind::Alloc, 0x2000, 200);
        addEvent(t, INT64_MAX - 10, EventKind::FreeCompleted, 0x1000, 100);
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
        QVERIFY(view.viewMode() == ViewMode::Allocation);
    }

    // The simple trace recorded its categories: it opens stacked by category.
    void recordedCategoriesOpenByCategory() { QVERIFY(view_->viewMode() == ViewMode::Category); }

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

    void categoryBandsDrawnWhereTheirBytesAre() {
        // By category the band layer rasters the stack: at t = 25, activation
        // (A, 100 B) at the bottom, gradient (B, 300 B) above it, nothing
        // above the 400 B total. The hover reads the same heights.
        view_->setViewMode(ViewMode::Category);
        TimelinePlot* plot = view_->plot();
        plot->setFixedYMax(500);  // the stack, not the reserved line, fills the plot
        plot->renderNow();
        const QImage img = plot->grab().toImage();
        const QRgb activation = categoryColor(Category::Activation).rgb();
        const QRgb gradient = categoryColor(Category::Gradient).rgb();
        QCOMPARE(QColor(img.pixel(plot->coordToPixel(sx(25), 50))).rgb(), activation);
        QCOMPARE(QColor(img.pixel(plot->coordToPixel(sx(25), 250))).rgb(), gradient);
        QVERIFY(QColor(img.pixel(plot->coordToPixel(sx(25), 450))).rgb() != gradient);
        plot->setFixedYMax(0);
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

    void opensOnTheOomWithItsMarkAndReport() {
        QVERIFY(view_->plot()->oomMarks().empty());
        QVERIFY(view_->oomText().isEmpty());
        Trace t = guitest::makeSimpleTrace();
        Event oom = t.events.back();
        oom.time = 55;
        oom.kind = EventKind::Oom;
        oom.address = 0;
        oom.size = 0x8000;  // more than the whole segment
        t.events.push_back(oom);
        t.attributes.push_back(EventAttribute{t.events.size() - 1, t.internString("device_free"),
                                              t.internString("1024")});
        auto r = makeRun(std::move(t), QStringLiteral("oom.memscope"));
        QVERIFY2(r.ok(), r.ok() ? "" : r.message().c_str());
        RunView view(*r);
        view.resize(1000, 600);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        const double x = view.plot()->axisMap().forward(55);
        QCOMPARE(view.plot()->oomMarks().size(), size_t(1));
        QCOMPARE(view.plot()->oomMarks().front(), x);
        // Opened centred on the OOM, zoomed in, the cursor on it.
        QVERIFY(view.zoom()->begin() < x && x < view.zoom()->end());
        QVERIFY(view.zoom()->end() - view.zoom()->begin() <
                0.5 * (view.zoom()->fullEnd() - view.zoom()->fullBegin()));
        QCOMPARE(view.zoom()->cursor(), x);
        const QString text = view.oomText();
        QVERIFY2(text.startsWith(QStringLiteral("out of memory on device 0")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("asked for          32.0 KiB")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("device free        1.00 KiB")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("memory full")), qPrintable(text));
        // The details end with what would have fit, the allocator model's answer.
        QVERIFY2(text.contains(QStringLiteral("what would have fit (predicted by the "
                                              "caching-allocator model")),
                 qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("expandable_segments:True: would not have served")),
                 qPrintable(text));
        view.zoom()->reset();
        QVERIFY(view.goToOom());
        QVERIFY(view.zoom()->begin() < x && x < view.zoom()->end());
    }

    void anEndStateAloneHasAReportAndASensibleRange() {
        const QString path = QDir(guitest::fixturesDir())
                                 .filePath(QStringLiteral(
                                     "snapshots/legacy_block_history_oom__LLM-inference.pickle"));
        if (!QFileInfo::exists(path))
            QSKIP(qPrintable(QStringLiteral("fixtures folder missing: ") + guitest::fixturesDir()));
        auto r = loadRun(path, TaskContext{});
        QVERIFY2(r.ok(), r.ok() ? "" : r.message().c_str());
        RunView view(*r);
        view.resize(1000, 600);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.plot()->renderNow();
        QVERIFY(view.plot()->oomMarks().empty());  // no moment to mark
        QVERIFY2(view.oomText().contains(QStringLiteral("end state on device 0")),
                 qPrintable(view.oomText()));
        // One event: the axis spans at least one unit around it, never a
        // sliver of a nanosecond or QCustomPlot's fallback.
        const double span = view.zoom()->fullEnd() - view.zoom()->fullBegin();
        QVERIFY2(span >= 1.0, qPrintable(QString::number(span)));
        QVERIFY(view.zoom()->fullBegin() <= view.plot()->axisMap().forward(0));
        // Go to peak has nothing to zoom into: the axis stays whole (it was
        // -0.025..0.025 events).
        view.goToPeak();
        QCOMPARE(view.zoom()->end() - view.zoom()->begin(), span);
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

    // 12,000 segments: rows aggregate groups of them, a row zooms in, and an
    // address search finds its segment.
    void allocatorMapWithManySegments() {
        Trace t;
        t.metadata.name = "segments";
        constexpr uint64_t kBase = 0x7f0000000000;
        for (int i = 0; i < 12000; ++i) {
            Event e;
            e.time = i;
            e.kind = EventKind::SegmentAlloc;
            e.address = kBase + uint64_t(i) * (4u << 20);
            e.size = 2u << 20;
            t.events.push_back(e);
            if (i % 2) {
                e.kind = EventKind::Alloc;
                e.size = 1u << 20;
                t.events.push_back(e);
            }
        }
        auto r = makeRun(std::move(t), QStringLiteral("segments.memscope"));
        QVERIFY2(r.ok(), r.ok() ? "" : r.message().c_str());
        AllocatorView view;
        view.resize(900, 400);
        view.setSource(*r, DeviceRef{});
        view.waitForIdle();
        QVERIFY(view.snapshot());
        QCOMPARE(view.snapshot()->segments.size(), size_t(12000));
        QVERIFY(view.aggregated());
        QCOMPARE(view.zoomedRow(), -1);
        QImage img(view.size(), QImage::Format_ARGB32);
        view.render(&img);
        const uint64_t target = kBase + 7777ull * (4u << 20) + 100;
        QVERIFY(view.searchAddress(QStringLiteral("0x%1").arg(target, 0, 16)));
        QVERIFY(view.zoomedRow() > 0);
        view.render(&img);  // the zoomed row with its marker
        QVERIFY(!view.searchAddress(QStringLiteral("0x10")));
        QVERIFY(!view.searchAddress(QStringLiteral("not an address")));
        view.zoomToRow(-1);
        view.render(&img);
    }

    void stackByAllocation() {
        view_->setViewMode(ViewMode::Allocation);
        view_->plot()->renderNow();
        // Every live allocation is drawn: at t = 25, A (100 B) then B (300 B)
        // on top of it, each a band of its own, coloured by its site.
        const AllocationLayout& l = view_->plot()->allocationLayout();
        const LayoutColumn* c = columnAt(l, 25);
        QVERIFY(c);
        QCOMPARE(int(c->last - c->first), 2);
        QCOMPARE(l.drawnSegments()[c->first].top, uint64_t(100));
        QCOMPARE(l.drawnSegments()[c->first + 1].top, uint64_t(400));
        QVERIFY(l.drawnSegments()[c->first].site != l.drawnSegments()[c->first + 1].site);
        // Hover text is headed by the allocation's user frame.
        const QString high = view_->plot()->hoverTextAt(sx(25), 250);
        QVERIFY2(high.contains(QStringLiteral("0x2000")), qPrintable(high));
        const QString first = high.section(QLatin1Char('\n'), 0, 0);
        QVERIFY2(first.startsWith(QStringLiteral("backward")) &&
                     first.contains(QStringLiteral("engine.py:7")),
                 qPrintable(high));
        QVERIFY2(view_->plot()->hoverTextAt(sx(25), 50).startsWith(QStringLiteral("forward")),
                 qPrintable(view_->plot()->hoverTextAt(sx(25), 50)));
        // What is hit is what is drawn, and pinning B brings it forward in
        // the highlight colour.
        TimelinePlot* plot = view_->plot();
        QCOMPARE(plot->allocationAt(sx(25), 250).value_or(99), uint32_t(1));
        const QRgb highlight = plot->palette().color(QPalette::Highlight).rgb();
        auto highlighted = [&] {
            const QImage img = plot->grab().toImage();
            const QPoint p = plot->coordToPixel(sx(25), 250);
            int n = 0;
            for (int dx = -20; dx <= 20; ++dx) n += img.pixel(p + QPoint(dx, 0)) == highlight;
            return n;
        };
        QCOMPARE(highlighted(), 0);
        plot->setPinned(1);
        plot->renderNow();
        QVERIFY(highlighted() > 30);
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
