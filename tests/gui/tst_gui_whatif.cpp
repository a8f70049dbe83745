// What if…: from a measured full-save run, core's predictions of other
// checkpointing policies reach the compare view through the GUI's path (the
// worker, the dialog, the command line), marked predicted everywhere: named
// "(predicted)", flagged in the table, hatched in the plots, diamonds on the
// policy map, and checked against a measured run of the same policy.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "compare/compare_view.h"
#include "compare/policy_map.h"
#include "compare/summary_model.h"
#include "dialogs/whatif_dialog.h"
#include "gui_test_traces.h"
#include "loading/run_loader.h"
#include "loading/whatif_runner.h"
#include "memscope/timeline/allocator_replay.h"
#include "run_view/timeline_plot.h"
#include "window/app_options.h"
#include "window/main_window.h"
#include "window/screenshot.h"

using namespace memscope;
using namespace memscope::gui;

namespace {

std::vector<WhatIfPolicy> policies(const std::string& list) {
    const std::vector<std::string> words{list};
    auto parsed = parseWhatIfPolicies(words);
    return parsed.ok() ? std::move(*parsed) : std::vector<WhatIfPolicy>{};
}

QString runColumnText(const SummaryTableModel* m, int row) {
    return m->data(m->index(row, 0), SummaryTableModel::RawRole).toString();
}

}  // namespace

class WhatIfTest : public QObject {
    Q_OBJECT
private:
    QTemporaryDir dir_;
    QString source_;  // the measured full-save run, with modules
    QString block_;   // a measured block run (no modules needed)

    void open(MainWindow& w, const QStringList& paths) const {
        w.resize(1400, 900);
        w.show();
        w.openPaths(paths, false);
        w.waitForLoads();
    }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        source_ = guitest::writeTrace(guitest::makeWhatIfSourceTrace(),
                                      dir_.filePath(QStringLiteral("full.memscope")));
        block_ = guitest::writeTrace(guitest::makeTrainerLikeTrace("block"),
                                     dir_.filePath(QStringLiteral("block.memscope")));
        QVERIFY(!source_.isEmpty() && !block_.isEmpty());
    }

    // The dialog lists core's layers and default policies before anything
    // runs, and shows the parser's error for a policy it cannot read.
    void dialogListsLayersAndPolicies() {
        auto run = makeRun(guitest::makeWhatIfSourceTrace(), QStringLiteral("full.memscope"));
        QVERIFY(run.ok());
        WhatIfDialog d(*run);
        QCOMPARE(d.layerNames(), (QStringList{QStringLiteral("h.0"), QStringLiteral("h.1"),
                                              QStringLiteral("h.2"), QStringLiteral("h.3")}));
        QVERIFY(d.chainProblem().isEmpty());
        QVERIFY(d.offeredPolicies().contains(QStringLiteral("block")));
        auto chosen = d.policies();
        QVERIFY(chosen.ok());
        QCOMPARE(int(chosen->size()), int(d.offeredPolicies().size()));  // all checked
        d.setExtraPolicies(QStringLiteral("no-such-policy"));
        QVERIFY(!d.policyError().isEmpty());
        QVERIFY(!d.policies().ok());
        d.setExtraPolicies(QStringLiteral("layers:0,2"));
        QVERIFY2(d.policyError().isEmpty(), qPrintable(d.policyError()));
        chosen = d.policies();
        QVERIFY(chosen.ok());
        QCOMPARE(QString::fromStdString(chosen->back().name), QStringLiteral("layers:0,2"));
    }

    // Without modules there is no chain: the dialog says why instead of layers.
    void dialogSaysWhyWithoutLayers() {
        auto run = makeRun(guitest::makeSimpleTrace(), QStringLiteral("plain.memscope"));
        QVERIFY(run.ok());
        WhatIfDialog d(*run);
        QVERIFY(d.layerNames().isEmpty());
        QVERIFY(!d.chainProblem().isEmpty());
        QVERIFY(d.offeredPolicies().isEmpty());
    }

    // The window's path: predicted runs join the compare view, named and
    // flagged predicted, hatched, and diamonds on the policy map.
    void predictionsJoinTheCompareView() {
        MainWindow w(false);
        open(w, {source_});
        QCOMPARE(int(w.runs().size()), 1);
        QVERIFY(w.startWhatIf(w.runs().front(), policies("block,sqrt")));
        w.waitForWhatIf();
        CompareView* c = w.compareView();
        QVERIFY2(c, qPrintable(w.errors().join(QLatin1Char('\n'))));
        SummaryTableModel* m = c->summaryModel();
        QCOMPARE(m->rowCount(), 3);
        QCOMPARE(runColumnText(m, 0), QStringLiteral("mlp full"));
        QVERIFY(!m->data(m->index(0, 1), SummaryTableModel::PredictedRole).toBool());
        QStringList names;
        for (int r = 1; r < 3; ++r) {
            names << runColumnText(m, r);
            QVERIFY(m->data(m->index(r, 1), SummaryTableModel::PredictedRole).toBool());
            QVERIFY(m->entries()[size_t(r)].predicted);
            QVERIFY(m->data(m->index(r, 0), Qt::FontRole).value<QFont>().italic());
        }
        QCOMPARE(names, (QStringList{QStringLiteral("block (predicted)"),
                                     QStringLiteral("sqrt (predicted)")}));
        // Core's figures, shown as they are: checkpointing each layer frees
        // its inner activations in forward.
        QVERIFY(m->entries()[1].summary.peak_bytes < m->entries()[0].summary.peak_bytes);
        // Only the measured run is drawn plain.
        QCOMPARE(c->plotCount(), 3);
        c->plotAt(1)->renderNow();
        QVERIFY(!c->plotAt(0)->isPredicted());
        QVERIFY(c->plotAt(1)->isPredicted() && c->plotAt(2)->isPredicted());
        QVERIFY(c->plotAt(1)->drawsPredictedHatch());
        QVERIFY(!c->plotAt(0)->drawsPredictedHatch());
        // Their reserved bytes are the allocator model's, drawn as predicted.
        QVERIFY(c->plotAt(1)->drawsPredictedReserved());
        QVERIFY(!c->plotAt(0)->drawsPredictedReserved());
        // The allocator panel replays a predicted run's own (modelled)
        // segments: every block it holds at the end lies in one of them.
        const CompareEntry& predicted = m->entries()[1];
        const Trace* pt = predicted.run->trace(predicted.device);
        const DeviceTimeline* ptl = predicted.run->timeline(predicted.device);
        QVERIFY(pt && ptl);
        auto state = allocatorStateAt(*pt, *ptl, ptl->end);
        QVERIFY(state.ok());
        QVERIFY(!state->segments.empty());
        QVERIFY(state->loose_blocks.empty());
        // No measured block run is open: nothing to check against.
        QCOMPARE(m->predictionCheckColumn(), -1);
        // The map: every run has a step time; the two predictions are diamonds.
        PolicyMap* map = c->policyMap();
        QCOMPARE(map->pointCount(), size_t(3));
        QCOMPARE(map->predictedCount(), size_t(2));
        for (size_t i = 0; i < map->pointCount(); ++i)
            QCOMPARE(map->isPredicted(i), m->entries()[size_t(map->entryOfPoint(i))].predicted);
        // Predicting again replaces the earlier predictions of those policies.
        QVERIFY(w.startWhatIf(m->entries()[0].run, policies("block")));
        w.waitForWhatIf();
        QCOMPARE(c->summaryModel()->rowCount(), 3);
    }

    // With a measured block run open too, the table checks the prediction
    // against it (core's predictionChecks), and only that row.
    void vsMeasuredColumn() {
        MainWindow w(false);
        open(w, {source_, block_});
        QCOMPARE(int(w.runs().size()), 2);
        QVERIFY(w.startWhatIf(w.runs().front(), policies("block,sqrt")));
        w.waitForWhatIf();
        CompareView* c = w.compareView();
        QVERIFY(c);
        SummaryTableModel* m = c->summaryModel();
        QCOMPARE(m->rowCount(), 4);
        const int col = m->predictionCheckColumn();
        QVERIFY(col >= 0);
        QCOMPARE(m->headerData(col, Qt::Horizontal).toString(), QStringLiteral("vs measured"));
        int checked = 0;
        for (int r = 0; r < m->rowCount(); ++r) {
            const QString text = m->data(m->index(r, col)).toString();
            if (runColumnText(m, r) == QLatin1String("block (predicted)")) {
                QVERIFY2(text.endsWith(QLatin1Char('%')), qPrintable(text));
                const auto& check = m->predictionChecks()[size_t(r)];
                QVERIFY(check);
                QCOMPARE(runColumnText(m, int(check->measured_row)), QStringLiteral("block"));
                ++checked;
            } else {
                QVERIFY2(text.isEmpty(), qPrintable(text));
            }
        }
        QCOMPARE(checked, 1);
    }

    // The dialog's path: Predict on the worker, the result table, the runs handed on.
    void dialogPredictsAndHandsOn() {
        MainWindow w(false);
        open(w, {source_});
        WhatIfDialog* d = w.openWhatIfDialog();
        QVERIFY(d);
        for (int i = 0; i < int(d->offeredPolicies().size()); ++i) d->setPolicyChecked(i, false);
        d->setPolicyChecked(int(d->offeredPolicies().indexOf(QStringLiteral("block"))), true);
        d->setExtraPolicies(QStringLiteral("layers:1,3 segments:99"));
        QSignalSpy ready(d, &WhatIfDialog::predictionsReady);
        d->start();
        d->waitForFinished();
        QCOMPARE(ready.count(), 1);
        // The measured row, block, layers:1,3 and the refused segments:99.
        QCOMPARE(d->resultRows(), 4);
        QCOMPARE(d->refusals().size(), 1);
        QVERIFY2(d->refusals().front().startsWith(QStringLiteral("segments:99: ")),
                 qPrintable(d->refusals().join(QLatin1Char('\n'))));
        QApplication::processEvents();
        CompareView* c = w.compareView();
        QVERIFY(c);
        QCOMPARE(c->summaryModel()->rowCount(), 3);
        QCOMPARE(runColumnText(c->summaryModel(), 2), QStringLiteral("layers:1,3 (predicted)"));
        d->close();
    }

    // Cancel: the worker stops at the next policy; the window stays usable.
    void cancelLeavesNothingHalfDone() {
        MainWindow w(false);
        open(w, {source_});
        WhatIfRunner runner;
        QSignalSpy failed(&runner, &WhatIfRunner::failed);
        QSignalSpy finished(&runner, &WhatIfRunner::finished);
        QVERIFY(runner.start(w.runs().front(), {}));
        runner.cancel();
        runner.waitForFinished();
        QTRY_COMPARE(failed.count() + finished.count(), 1);
        if (failed.count()) QVERIFY(failed.front().at(1).toBool());  // said "cancelled"
        QVERIFY(!runner.isBusy());
    }

    void commandLine() {
        const QString f = QStringLiteral("run.memscope");
        AppOptions o = parseOptions({QStringLiteral("memscope"), QStringLiteral("--whatif"),
                                     QStringLiteral("block,sqrt"), f});
        QVERIFY2(o.error.isEmpty(), qPrintable(o.error));
        QVERIFY(o.whatif);
        QCOMPARE(int(o.whatif->size()), 2);
        o = parseOptions(
            {QStringLiteral("memscope"), QStringLiteral("--whatif"), QStringLiteral("default"), f});
        QVERIFY(o.error.isEmpty() && o.whatif && o.whatif->empty());
        o = parseOptions(
            {QStringLiteral("memscope"), QStringLiteral("--whatif"), QStringLiteral("bogus"), f});
        QVERIFY(o.error.contains(QStringLiteral("--whatif")));
        o = parseOptions({QStringLiteral("memscope"), QStringLiteral("--whatif"),
                          QStringLiteral("block"), QStringLiteral("--compare-tab"),
                          QStringLiteral("policy-map"), QStringLiteral("--screenshot"),
                          QStringLiteral("out.png"), f});
        QVERIFY2(o.error.isEmpty(), qPrintable(o.error));
    }

    // `memscope --whatif block,sqrt --screenshot OUT.png FILE` renders the comparison.
    void screenshotWithPredictions() {
        AppOptions o;
        o.paths = {source_};
        o.whatif = policies("block,sqrt");
        o.compare_tab = QStringLiteral("policy-map");
        o.screenshot = dir_.filePath(QStringLiteral("whatif.png"));
        o.size = QSize(1200, 800);
        QCOMPARE(runScreenshot(o), 0);
        const QImage image(o.screenshot);
        QVERIFY(!image.isNull());
        QCOMPARE(image.width() * 800, image.height() * 1200);  // at the screen's pixel ratio
    }
};

QTEST_MAIN(WhatIfTest)
#include "tst_gui_whatif.moc"
