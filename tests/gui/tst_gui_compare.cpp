// Compare: four trainer-like policy runs show four plots on one y scale and the
// right summary table; alignment modes; difference curve; CSV; the screenshot
// command.
#include <qcustomplot.h>

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "common/format.h"
#include "compare/compare_view.h"
#include "compare/difference_plot.h"
#include "compare/policy_map.h"
#include "compare/summary_model.h"
#include "compare/theory_charts.h"
#include "dialogs/generate_dialog.h"
#include "gui_test_traces.h"
#include "loading/run_loader.h"
#include "memscope/inference/inference.h"
#include "memscope/whatif/policy_frontier.h"
#include "run_view/run_view.h"
#include "run_view/timeline_plot.h"
#include "run_view/zoom_state.h"
#include "window/app_options.h"
#include "window/main_window.h"
#include "window/screenshot.h"

using namespace memscope;
using namespace memscope::gui;

namespace {
const char* const kPolicies[] = {"full", "block", "selective", "opt-in-bwd"};

// The model column that shows a kind of figure.
int col(const SummaryTableModel* m, CompareColumnKind kind) {
    for (int c = 0; c < m->columnCount(); ++c)
        if (m->column(c).kind == kind) return c;
    return -1;
}
}  // namespace

class CompareTest : public QObject {
    Q_OBJECT
private:
    QTemporaryDir dir_;
    QStringList paths_;

    // The window at the size the checks expect, with every run loaded.
    void openAllRuns(MainWindow& w) const {
        w.resize(1600, 1000);
        w.show();
        w.openPaths(paths_, true);
        w.waitForLoads();
    }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        for (const char* p : kPolicies)
            paths_ << guitest::writeTrace(
                guitest::makeTrainerLikeTrace(p),
                dir_.filePath(QStringLiteral("mlp-%1.memscope").arg(QLatin1String(p))));
        QVERIFY(!paths_.contains(QString()));
    }

    void fourRunsFourPlotsRightTable() {
        MainWindow w(false);
        openAllRuns(w);
        QVERIFY2(w.errors().isEmpty(), qPrintable(w.errors().join(QLatin1Char('\n'))));
        CompareView* c = w.compareView();
        QVERIFY(c);
        QCOMPARE(c->plotCount(), 4);
        SummaryTableModel* m = c->summaryModel();
        QCOMPARE(m->rowCount(), 4);
        // Each row's peak is its own timeline's peak; all plots share one y scale.
        for (int r = 0; r < 4; ++r) {
            QCOMPARE(
                m->data(m->index(r, col(m, CompareColumnKind::Run)), SummaryTableModel::RawRole)
                    .toString(),
                QLatin1String(kPolicies[r]));
            const DeviceTimeline* tl = c->plotAt(r)->timeline();
            QCOMPARE(
                m->data(m->index(r, col(m, CompareColumnKind::Peak)), SummaryTableModel::RawRole)
                    .toLongLong(),
                qint64(tl->peak.bytes));
        }
        auto peak = [&](int r) {
            return m->data(m->index(r, col(m, CompareColumnKind::Peak)), SummaryTableModel::RawRole)
                .toLongLong();
        };
        // full saves the most activations; block checkpointing the least.
        QVERIFY(peak(0) > peak(2));
        QVERIFY(peak(2) > peak(1));
        QCOMPARE(
            m->data(m->index(1, col(m, CompareColumnKind::PeakDelta)), SummaryTableModel::RawRole)
                .toLongLong(),
            peak(1) - peak(0));
        QCOMPARE(m->data(m->index(1, col(m, CompareColumnKind::RecomputeOverhead)),
                         SummaryTableModel::RawRole)
                     .toDouble(),
                 0.33);
        QVERIFY(
            m->data(m->index(0, col(m, CompareColumnKind::StepTime)), SummaryTableModel::RawRole)
                .toDouble() > 0);
        QVERIFY(!m->data(m->index(0, col(m, CompareColumnKind::PeakPhase))).toString().isEmpty());

#ifdef MEMSCOPE_CLI
        // The GUI's table and `memscope-cli compare` show the same numbers.
        QProcess cli;
        cli.start(QStringLiteral(MEMSCOPE_CLI),
                  QStringList{QStringLiteral("compare"), QStringLiteral("--csv")} + paths_);
        QVERIFY(cli.waitForFinished(60000));
        QCOMPARE(cli.exitCode(), 0);
        QCOMPARE(QString::fromUtf8(cli.readAllStandardOutput()), m->toCsv());
        // And per phase.
        c->setScope(PeakScope{TrainingPhase::Backward});
        cli.start(QStringLiteral(MEMSCOPE_CLI),
                  QStringList{QStringLiteral("compare"), QStringLiteral("--csv"),
                              QStringLiteral("--phase"), QStringLiteral("backward")} +
                      paths_);
        QVERIFY(cli.waitForFinished(60000));
        QCOMPARE(QString::fromUtf8(cli.readAllStandardOutput()), m->toCsv());
        QVERIFY(m->headerData(col(m, CompareColumnKind::Peak), Qt::Horizontal)
                    .toString()
                    .contains(QStringLiteral("backward")));
        c->setScope({});
#endif

        // Align by step: the shared axis spans the three steps.
        c->setAlignMode(AlignMode::Step);
        QVERIFY(qAbs(c->zoom()->fullEnd() - 3.0) < 0.01);
        c->setAlignMode(AlignMode::Phase);
        QVERIFY(qAbs(c->zoom()->fullEnd() - 3.0) < 0.01);
        c->setGridLayout(false);
        c->setBaseline(1);
        QCOMPARE(m->baseline(), 1);
        QVERIFY(c->differencePlot()->pointCount() > 2);

        const QString csv = dir_.filePath(QStringLiteral("table.csv"));
        QString error;
        QVERIFY2(c->exportCsv(csv, &error), qPrintable(error));
        QFile f(csv);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QList<QByteArray> lines = f.readAll().trimmed().split('\n');
        QCOMPARE(lines.size(), 5);
        QVERIFY(lines[0].startsWith("path,run,peak_bytes,"));
        QVERIFY(lines[1].contains(",full," + QByteArray::number(peak(0)) + ","));
        QVERIFY(c->exportPlots(dir_.filePath(QStringLiteral("grid.png")), &error));
    }

    void screenshotCommand() {
        AppOptions o = parseOptions(
            QStringList{QStringLiteral("memscope"), QStringLiteral("--screenshot"),
                        dir_.filePath(QStringLiteral("shot.png")), QStringLiteral("--compare")} +
            paths_);
        QVERIFY(o.error.isEmpty());
        QVERIFY(o.compare);
        QCOMPARE(runScreenshot(o), 0);
        QImage img(dir_.filePath(QStringLiteral("shot.png")));
        QVERIFY(!img.isNull());
        QVERIFY(img.width() >= 1600);
    }

    // The README's main job: generate the four policies, land in the compare view.
    void generateDialogRunsTheTrainer() {
        QString trainer =
            QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("memscope-train"));
        if (!QFileInfo(trainer).isExecutable()) trainer = qEnvironmentVariable("MEMSCOPE_TRAIN");
        if (trainer.isEmpty() || !QFileInfo(trainer).isExecutable())
            QSKIP("memscope-train is not built (set MEMSCOPE_TRAIN to run this test)");
        qputenv("MEMSCOPE_TRAIN", trainer.toLocal8Bit());
        MainWindow w(false);
        w.show();
        GenerateDialog dialog;
        QObject::connect(&dialog, &GenerateDialog::tracesReady, &w,
                         [&w](const QStringList& p) { w.openPaths(p, true); });
        dialog.setOutputFolder(dir_.filePath(QStringLiteral("generated")));
        // A sweep asks the trainer for every policy; unticked, the four of "all".
        dialog.setSweep(true);
        QVERIFY(dialog.arguments().contains(QStringLiteral("sweep")));
        dialog.setSweep(false);
        QVERIFY(dialog.arguments().contains(QStringLiteral("all")));
        dialog.start();
        QVERIFY(dialog.isRunning());
        QTRY_VERIFY_WITH_TIMEOUT(!dialog.isRunning(), 240000);
        QTRY_VERIFY_WITH_TIMEOUT(w.compareView() != nullptr, 10000);
        w.waitForLoads();
        QCOMPARE(w.compareView()->plotCount(), 4);
        QCOMPARE(w.compareView()->summaryModel()->rowCount(), 4);
    }

    // One point per run with a step time, the frontier as core computes it,
    // the composition on hover, and a click opens the run's own tab.
    void policyMapPointsFrontierAndClick() {
        MainWindow w(false);
        openAllRuns(w);
        CompareView* c = w.compareView();
        QVERIFY(c);
        PolicyMap* map = c->policyMap();
        QVERIFY(map);
        const auto& entries = c->summaryModel()->entries();
        std::vector<PolicyPoint> points;
        for (const CompareEntry& e : entries)
            if (e.summary.step_time_s)
                points.push_back(
                    {e.summary.name, e.summary.peak_bytes, *e.summary.step_time_s * 1e3});
        QCOMPARE(map->pointCount(), points.size());
        QVERIFY(map->pointCount() >= 2);
        const std::vector<bool> frontier = onFrontier(points);
        size_t on = 0;
        for (size_t i = 0; i < map->pointCount(); ++i) {
            QCOMPARE(map->onFrontier(i), bool(frontier[i]));
            on += map->onFrontier(i);
        }
        QVERIFY(on >= 1);
        // Show the map so that its axes have pixels, then hit-test and click a point.
        c->findChild<QTabWidget*>()->setCurrentWidget(map);
        QApplication::processEvents();
        map->plot()->replot();
        const QPointF at = map->pixelOf(1);
        QCOMPARE(map->pointAt(at), 1);
        QCOMPARE(map->pointAt(at + QPointF(40, 40)), -1);
        const QString text = map->describe(1);
        QVERIFY2(text.contains(toQString(points[1].name)), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("ms per step")), qPrintable(text));
        const RunPtr expected = entries[size_t(map->entryOfPoint(1))].run;
        QTest::mouseClick(map->plot(), Qt::LeftButton, {}, at.toPoint());
        auto* tabs = w.findChild<QTabWidget*>();
        QVERIFY(tabs);
        auto* view = qobject_cast<RunView*>(tabs->currentWidget());
        QVERIFY(view);
        QVERIFY(view->run() == expected);
    }

    // A chart per run of the trainer: measured activation bytes per layer
    // against core's prediction for its policy (activation_theory.h).
    void theoryChartsPerRun() {
        MainWindow w(false);
        openAllRuns(w);
        CompareView* c = w.compareView();
        QVERIFY(c);
        TheoryCharts* charts = c->theoryCharts();
        QVERIFY(charts);
        QCOMPARE(charts->chartCount(), std::size(kPolicies));
        bool sawBlock = false;
        for (size_t i = 0; i < charts->chartCount(); ++i) {
            const ActivationTheory& t = charts->theory(i);
            QCOMPARE(t.layers.size(), size_t(4));
            QCOMPARE(charts->plot(i)->plottableCount() >= 1, true);
            if (t.policy != "block") {
                // An mlp's plain layers have no published formula.
                QVERIFY(!t.predicted_total);
                QVERIFY2(charts->title(i).contains(QStringLiteral("no published formula")),
                         qPrintable(charts->title(i)));
                continue;
            }
            sawBlock = true;
            QVERIFY(t.ratio());
            QCOMPARE(*t.ratio(), 1.0);
            QVERIFY2(charts->title(i).contains(QStringLiteral("2·s·b·h")),
                     qPrintable(charts->title(i)));
            QVERIFY2(charts->title(i).contains(QStringLiteral("ratio 1.000")),
                     qPrintable(charts->title(i)));
        }
        QVERIFY(sawBlock);
        QVERIFY(charts->note().isEmpty());
        c->showTab(QStringLiteral("theory"));
        QCOMPARE(c->findChild<QTabWidget*>()->currentWidget(), charts);
    }

    void badCommandLines() {
        QVERIFY(!parseOptions({QStringLiteral("memscope"), QStringLiteral("--screenshot"),
                               QStringLiteral("x.png")})
                     .error.isEmpty());
        QVERIFY(
            !parseOptions({QStringLiteral("memscope"), QStringLiteral("--nope")}).error.isEmpty());
        const QString m = QStringLiteral("memscope"), shot = QStringLiteral("--screenshot"),
                      by = QStringLiteral("--color-by"), png = QStringLiteral("x.png"),
                      file = QStringLiteral("a.pickle");
        const AppOptions ok = parseOptions({m, shot, png, by, QStringLiteral("allocation"), file});
        QVERIFY2(ok.error.isEmpty(), qPrintable(ok.error));
        QVERIFY(ok.color_by == ViewMode::Allocation);
        const QString whole = QStringLiteral("--whole-run");
        QVERIFY(parseOptions({m, shot, png, whole, file}).whole_run);
        QVERIFY(parseOptions({m, whole, file}).error.contains(whole));
        QVERIFY(parseOptions({m, shot, png, QStringLiteral("--compare"), whole, file, file})
                    .error.contains(whole));
        QVERIFY(parseOptions({m, shot, png, by, QStringLiteral("site"), file})
                    .error.contains(QStringLiteral("site")));
        QVERIFY(!parseOptions({m, by, QStringLiteral("category"), file})
                     .error.isEmpty());  // needs --screenshot
        const QString align = QStringLiteral("--align"), cmp = QStringLiteral("--compare");
        const AppOptions aligned =
            parseOptions({m, cmp, shot, png, align, QStringLiteral("step"), file, file});
        QVERIFY2(aligned.error.isEmpty(), qPrintable(aligned.error));
        QVERIFY(aligned.align == AlignMode::Step);
        QVERIFY(parseOptions({m, cmp, shot, png, align, QStringLiteral("epoch"), file})
                    .error.contains(QStringLiteral("epoch")));
        QVERIFY(!parseOptions({m, shot, png, align, QStringLiteral("step"), file})
                     .error.isEmpty());  // needs --compare
        const QString tab = QStringLiteral("--compare-tab");
        QCOMPARE(parseOptions({m, cmp, shot, png, tab, QStringLiteral("policy-map"), file, file})
                     .compare_tab,
                 QStringLiteral("policy-map"));
        QVERIFY(parseOptions({m, cmp, shot, png, tab, QStringLiteral("map"), file})
                    .error.contains(QStringLiteral("map")));
    }

    // The compare view names runs as `memscope-cli compare` does: plot titles,
    // the table's Run column, the baseline and difference choices, the charts.
    void runsAreNamedAsTheCliNamesThem() {
        QStringList paths;
        const int64_t pids[] = {41000, 42000};
        for (int64_t pid : pids) {
            Trace t = guitest::makeSimpleTrace();
            t.metadata.name = "train.py";
            t.metadata.pid = pid;
            paths << guitest::writeTrace(
                t, dir_.filePath(QStringLiteral("memscope-%1.memscope").arg(pid)));
            QVERIFY(!paths.back().isEmpty());
        }
        MainWindow w(false);
        w.resize(1200, 800);
        w.show();
        w.openPaths(paths, true);
        w.waitForLoads();
        CompareView* c = w.compareView();
        QVERIFY(c);
        const QStringList expected{QStringLiteral("train.py (pid 41000)"),
                                   QStringLiteral("train.py (pid 42000)")};
        QCOMPARE(c->runNames(), expected);
        SummaryTableModel* m = c->summaryModel();
        QCOMPARE(m->rowCount(), 2);
        for (int r = 0; r < 2; ++r) {
            QCOMPARE(c->plotAt(r)->title(), expected[r] + QStringLiteral(" — cuda:0"));
            QCOMPARE(
                m->data(m->index(r, col(m, CompareColumnKind::Run)), SummaryTableModel::RawRole)
                    .toString(),
                expected[r]);
            QCOMPARE(m->entries()[size_t(r)].shownName(), expected[r]);
        }
#ifdef MEMSCOPE_CLI
        QProcess cli;
        cli.start(QStringLiteral(MEMSCOPE_CLI),
                  QStringList{QStringLiteral("compare"), QStringLiteral("--csv")} + paths);
        QVERIFY(cli.waitForFinished(60000));
        QCOMPARE(cli.exitCode(), 0);
        QCOMPARE(QString::fromUtf8(cli.readAllStandardOutput()), m->toCsv());
#endif
    }

    // A compare of two unlabelled snapshots, aligned by the steps memscope
    // infers: each run's steps land on the shared axis's integers.
    void alignsUnlabelledRunsByInferredSteps() {
        MainWindow w(false);
        QStringList paths;
        for (int r = 0; r < 2; ++r) {
            Trace t;
            int64_t time = 1'000'000'000;
            uint64_t address = 0x1000;
            for (int step = 0; step < 4; ++step) {
                std::vector<uint64_t> live;
                for (int k = 0; k < 12; ++k) {
                    Event e;
                    e.time = time += 1000;
                    e.kind = EventKind::Alloc;
                    e.address = address += 0x1000;
                    e.size = uint64_t(4096 * (k + 1) * (r + 1));
                    t.events.push_back(e);
                    live.push_back(e.address);
                }
                for (size_t k = live.size(); k-- > 0;) {
                    Event e;
                    e.time = time += 1000 * (r + 1);
                    e.kind = EventKind::FreeCompleted;
                    e.address = live[k];
                    e.size = uint64_t(4096 * (k + 1) * size_t(r + 1));
                    t.events.push_back(e);
                }
            }
            paths << guitest::writeTrace(
                t, dir_.filePath(QStringLiteral("unlabelled-%1.memscope").arg(r)));
            QVERIFY(!paths.back().isEmpty());
        }
        w.openPaths(paths, true);
        w.waitForLoads();
        QVERIFY(w.compareView());
        w.compareView()->setAlignMode(AlignMode::Step);
        QVERIFY(w.compareView()->alignMode() == AlignMode::Step);
        for (const RunPtr& run : w.compareView()->runs()) {
            const Trace* trace = run->trace(run->devices().front());
            QVERIFY(trace);
            QVERIFY(stepSource(*trace) == StepSource::Inferred);
        }
    }
};

QTEST_MAIN(CompareTest)
#include "tst_gui_compare.moc"
