// The What-if dialog's advisor: a budget in, core's answer shown (or the
// frontier, or how far nothing fits), the policy as PyTorch code that can be
// copied, and "Record with this policy" through a fake memscope-cli: the
// arguments it gets, the measured run opened beside the prediction on
// success, record's last lines on failure, and cancel.
#include <QClipboard>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <atomic>

#include "compare/compare_view.h"
#include "compare/summary_model.h"
#include "dialogs/advice_panel.h"
#include "dialogs/whatif_dialog.h"
#include "gui_test_traces.h"
#include "loading/advice_runner.h"
#include "loading/apply_recorder.h"
#include "loading/run_loader.h"
#include "memscope/whatif/policy_modules.h"
#include "window/main_window.h"

using namespace memscope;
using namespace memscope::gui;

namespace {

constexpr int kWaitMs = 30000;

// The measured full-save run as `memscope-cli record` keeps it: with the
// job's command line (the hook's "command", joined at spaces).
// A CPU run (judged by live bytes: on this small GPU run the allocator
// model's segments round every policy to one reserved peak).
Trace cpuSource() {
    Trace t = guitest::makeWhatIfSourceTrace();
    t.metadata.setProperty("device", "cpu");
    return t;
}

Trace recordedSource() {
    Trace t = cpuSource();
    t.metadata.setProperty("command", "python3 train.py --steps 3");
    return t;
}

RunPtr load(const QString& path) {
    auto run = loadRun(path, {});
    return run.ok() ? *run : RunPtr();
}

QString runColumnText(const SummaryTableModel* m, int row) {
    return m->data(m->index(row, 0), SummaryTableModel::RawRole).toString();
}

}  // namespace

class AdviceTest : public QObject {
    Q_OBJECT
private:
    QTemporaryDir dir_;
    QString source_;   // recorded, with a command
    QString plain_;    // the same run without a command
    QString applied_;  // what the fake record writes: a measured applied run

    // A fake memscope-cli: writes its arguments to ARGS, prints a line, then `body`.
    QString fakeCli(const QString& name, const QString& body) const {
        const QString path = dir_.filePath(name);
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly)) return {};
        f.write(QStringLiteral("#!/bin/sh\nprintf '%s\\n' \"$@\" > '%1'\npwd >> '%1'\n"
                               "echo 'memscope-cli record: recording the job'\n%2\n")
                    .arg(dir_.filePath(name + QStringLiteral(".args")), body)
                    .toLocal8Bit());
        f.close();
        f.setPermissions(f.permissions() | QFileDevice::ExeOwner);
        return path;
    }

    QStringList argsOf(const QString& cli) const {
        QFile f(cli + QStringLiteral(".args"));
        if (!f.open(QIODevice::ReadOnly)) return {};
        return QString::fromLocal8Bit(f.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    }

    // Advises with `budget` and waits for the answer.
    static void advise(AdvicePanel* p, const QString& budget) {
        p->setBudget(budget);
        p->advise();
        p->waitForAdvice();
    }

    // A budget only the smallest policies fit: the answer checkpoints layers.
    static QString fittingBudget(AdvicePanel* p) {
        advise(p, QString());
        if (!p->outcome() || p->outcome()->advice->frontier.empty()) return {};
        int64_t smallest = INT64_MAX;
        for (const AdvisedPolicy& a : p->outcome()->advice->frontier)
            smallest = std::min(smallest, a.judged_bytes);
        return QString::number(smallest);
    }

private slots:
    void aFasterPolicyThatNeedsCodeOfYourOwnIsNamed() {
        Advice a;
        a.budget_bytes = 100 << 20;
        AdvisedPolicy chunked;
        chunked.policy = *parseWhatIfPolicy("segments:2");
        chunked.judged_bytes = 90 << 20;
        a.by_hand = chunked;
        a.by_hand_reason = "it checkpoints h.0 to h.3 as one region";
        QString html = adviceAnswerHtml(a);
        QVERIFY2(html.contains(QStringLiteral("Only segments:2 fits")), qPrintable(html));
        QVERIFY(html.contains(QStringLiteral("as one region")));
        QVERIFY(!html.contains(QStringLiteral("Nothing fits")));
        AdvisedPolicy mix;
        mix.policy = *parseWhatIfPolicy("layers:0,1");
        mix.judged_bytes = 95 << 20;
        mix.allocator_conf = "expandable_segments:True";
        a.choice = mix;
        html = adviceAnswerHtml(a);
        QVERIFY2(html.contains(QStringLiteral(
                     "layers:0,1 with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")),
                 qPrintable(html));
        QVERIFY(html.contains(QStringLiteral("Faster still, with code of your own")));
    }

    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        source_ =
            guitest::writeTrace(recordedSource(), dir_.filePath(QStringLiteral("full.memscope")));
        plain_ = guitest::writeTrace(cpuSource(), dir_.filePath(QStringLiteral("plain.memscope")));
        Trace applied = guitest::makeTrainerLikeTrace("block");
        applied.metadata.name = "train.py (applied: layers)";
        applied.metadata.setProperty("applied_policy", "layers");
        applied_ = guitest::writeTrace(applied, dir_.filePath(QStringLiteral("applied.memscope")));
        QVERIFY(!source_.isEmpty() && !plain_.isEmpty() && !applied_.isEmpty());
    }

    // Without a budget: the frontier, as a list, every figure predicted.
    void noBudgetListsTheFrontier() {
        WhatIfDialog d(load(source_));
        AdvicePanel* p = d.advicePanel();
        advise(p, QString());
        QVERIFY2(p->outcome(), qPrintable(p->statusText()));
        QVERIFY(p->answerText().contains(QStringLiteral("frontier")));
        QVERIFY(p->answerText().contains(QStringLiteral("predicted")));
        const QStringList rows = p->frontierRows();
        QCOMPARE(rows.size(), int(p->outcome()->advice->frontier.size()));
        QVERIFY(!rows.isEmpty());
        QVERIFY(rows.front().contains(QStringLiteral("predicted peak")));
        QVERIFY(p->codeText().isEmpty());  // nothing picked yet
    }

    // A budget: core's answer, its code with the module paths, the version
    // it needs, Copy as code; and a screenshot of it.
    void budgetAnswersWithCode() {
        WhatIfDialog d(load(source_));
        AdvicePanel* p = d.advicePanel();
        const QString budget = fittingBudget(p);
        QVERIFY(!budget.isEmpty());
        advise(p, budget);
        QVERIFY2(p->budgetError().isEmpty(), qPrintable(p->budgetError()));
        QVERIFY2(p->outcome() && p->outcome()->advice->choice, qPrintable(p->answerText()));
        const Advice& a = *p->outcome()->advice;
        const QString choice = QString::fromStdString(a.choice->policy.name);
        QVERIFY2(p->answerText().contains(choice.toHtmlEscaped()), qPrintable(p->answerText()));
        QVERIFY(p->answerText().contains(QStringLiteral("Predicted to fit")));
        QVERIFY(p->answerText().contains(QStringLiteral("step")));
        QVERIFY(p->answerText().contains(QStringLiteral("recompute")));
        if (a.best_uniform && a.best_uniform->policy.name != a.choice->policy.name)
            QVERIFY(p->answerText().contains(QStringLiteral("Best uniform policy")));
        QVERIFY(p->frontierRows().isEmpty());
        // A predicted run of the answer, kept for the comparison.
        QVERIFY(p->outcome()->predicted);
        QVERIFY(p->outcome()->predicted->parts.front().trace->prediction);
        // The code names every module core wraps.
        QCOMPARE(p->codePolicy(), choice);
        const QString code = p->codeText();
        QVERIFY(!code.isEmpty());
        const RunPtr run = load(source_);
        auto modules = policyModules(a.choice->policy, *run->parts.front().trace);
        QVERIFY2(modules.ok(), modules.ok() ? "" : modules.message().c_str());
        QVERIFY2(!modules->modules.empty(),
                 qPrintable(p->answerText() + QStringLiteral("\n") + code));
        for (const CheckpointedModule& m : modules->modules)
            QVERIFY2(code.contains(QString::fromStdString(m.path)), qPrintable(code));
        QVERIFY(p->codeNeeds().contains(QStringLiteral("PyTorch")));
        p->copyCode();
        QCOMPARE(QGuiApplication::clipboard()->text(), code);
        // The dialog as the user sees it, answered.
        d.resize(900, 980);
        d.show();
        QVERIFY(QTest::qWaitForWindowExposed(&d));
        const QString shot = QStringLiteral("/tmp/memscope_advice_dialog.png");
        QVERIFY(d.grab().save(shot));
    }

    // A budget nothing fits in: how far the smallest misses.
    void impossibleBudgetSaysHowFar() {
        WhatIfDialog d(load(source_));
        AdvicePanel* p = d.advicePanel();
        advise(p, QStringLiteral("1KiB"));
        QVERIFY(p->outcome());
        const Advice& a = *p->outcome()->advice;
        QVERIFY(!a.choice);
        QVERIFY(a.short_by_bytes > 0);
        QVERIFY2(p->answerText().contains(QStringLiteral("Nothing fits")),
                 qPrintable(p->answerText()));
        QVERIFY(p->answerText().contains(QStringLiteral("over")));
        // A budget that does not parse is the parser's error, and Advise waits for a good one.
        p->setBudget(QStringLiteral("lots"));
        QVERIFY(!p->budgetError().isEmpty());
    }

    // Cancel: core stops at the next simulation with a Cancelled error; the
    // panel says so (or shows the answer, when it came first).
    void cancelStopsTheAdvice() {
        const RunPtr run = load(source_);
        std::atomic<bool> stop{true};
        TaskContext ctx;
        ctx.cancel = &stop;
        auto r = runAdvice(run, int64_t(1024), ctx);
        QVERIFY(!r.ok());
        QVERIFY2(QString::fromStdString(r.message()).contains(QStringLiteral("cancel")),
                 r.message().c_str());
        WhatIfDialog d(run);
        AdvicePanel* p = d.advicePanel();
        p->setBudget(QStringLiteral("1KiB"));
        p->advise();
        p->cancelAdvice();
        p->waitForAdvice();
        QVERIFY(!p->isAdvising());
        QVERIFY2(p->statusText() == QStringLiteral("Advice cancelled.") || p->outcome(),
                 qPrintable(p->statusText()));
    }

    // A table row's policy shows its code too.
    void resultRowShowsItsCode() {
        WhatIfDialog d(load(source_));
        for (int i = 0; i < int(d.offeredPolicies().size()); ++i) d.setPolicyChecked(i, false);
        d.setPolicyChecked(int(d.offeredPolicies().indexOf(QStringLiteral("block"))), true);
        d.start();
        d.waitForFinished();
        QCOMPARE(d.resultRows(), 2);
        d.selectResultRow(1);
        QCOMPARE(d.advicePanel()->codePolicy(), QStringLiteral("block"));
        QVERIFY(d.advicePanel()->codeText().contains(QStringLiteral("h.0")));
    }

    // Record is for runs `memscope-cli record` made: their trace keeps the command.
    void recordNeedsTheCommand() {
        WhatIfDialog plain(load(plain_));
        AdvicePanel* p = plain.advicePanel();
        advise(p, fittingBudget(p));
        QVERIFY(!p->codeText().isEmpty());
        QVERIFY(!p->canRecord());
        QVERIFY(!p->recordButton()->isEnabled());
        QVERIFY2(p->recordButton()->toolTip().contains(QStringLiteral("memscope-cli record")),
                 qPrintable(p->recordButton()->toolTip()));
        WhatIfDialog recorded(load(source_));
        p = recorded.advicePanel();
        QVERIFY(!p->recordButton()->isEnabled());  // no policy yet
        advise(p, fittingBudget(p));
        QVERIFY(p->canRecord());
        QVERIFY(p->recordButton()->isEnabled());
    }

    // The argument list, the folder and where it runs.
    void planBuildsTheArguments() {
        const RunPtr run = load(source_);
        const QDateTime at(QDate(2026, 12, 7), QTime(16, 5, 1));
        auto plan = planApplyRecord(*run, QStringLiteral("layers:0-2+opt-in-bwd"),
                                    QStringLiteral("/opt/memscope-cli"), at);
        QVERIFY2(plan.ok(), plan.ok() ? "" : plan.message().c_str());
        const QString out =
            QDir(QFileInfo(source_).absolutePath())
                .filePath(QStringLiteral("applied-layers_0-2_opt-in-bwd-20261207-160501"));
        QCOMPARE(plan->program, QStringLiteral("/opt/memscope-cli"));
        QCOMPARE(plan->out_dir, out);
        QCOMPARE(plan->arguments,
                 (QStringList{QStringLiteral("record"), QStringLiteral("--apply"),
                              QStringLiteral("layers:0-2+opt-in-bwd"), QStringLiteral("--from"),
                              QFileInfo(source_).absoluteFilePath(), QStringLiteral("-o"), out,
                              QStringLiteral("--"), QStringLiteral("python3"),
                              QStringLiteral("train.py"), QStringLiteral("--steps"),
                              QStringLiteral("3")}));
        // No working directory recorded: the run file's folder, said.
        QVERIFY(plan->working_dir_guessed);
        QCOMPARE(plan->working_dir, QFileInfo(source_).absolutePath());
        QVERIFY(plan->command_split_at_spaces);
        QCOMPARE(plan->notes.size(), 2);
        QVERIFY(
            !planApplyRecord(*load(plain_), QStringLiteral("block"), QStringLiteral("x"), at).ok());
    }

    // The whole path: record succeeds, and the measured applied run opens in
    // the compare view beside the prediction and the run advised from.
    void recordOpensTheMeasuredRunBesideThePrediction() {
        MainWindow w(false);
        w.resize(1400, 900);
        w.show();
        w.openPaths({source_}, false);
        w.waitForLoads();
        WhatIfDialog* d = w.openWhatIfDialog();
        QVERIFY(d);
        AdvicePanel* p = d->advicePanel();
        advise(p, fittingBudget(p));
        QVERIFY(p->canRecord());
        const QString cli = fakeCli(
            QStringLiteral("cli-ok.sh"),
            QStringLiteral("out=''\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=\"$2\"; [ \"$1\" "
                           "= -- ] && break; shift; done\ncp '%1' \"$out/train.memscope\"\n"
                           "echo \"memscope: 1 trace in $out\"\nexit 0")
                .arg(applied_));
        p->setCliProgram(cli);
        QSignalSpy done(d, &WhatIfDialog::measuredBesidePrediction);
        p->recordWithPolicy();
        QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, kWaitMs);
        QVERIFY(p->recordError().isEmpty());
        QVERIFY(
            p->recordOutput().contains(QStringLiteral("memscope-cli record: recording the job")));
        // The arguments it got, and where it ran.
        const QStringList args = argsOf(cli);
        QVERIFY(args.size() > 8);
        QCOMPARE(args.mid(0, 3), (QStringList{QStringLiteral("record"), QStringLiteral("--apply"),
                                              p->codePolicy()}));
        QCOMPARE(args.mid(args.size() - 5, 4),
                 (QStringList{QStringLiteral("python3"), QStringLiteral("train.py"),
                              QStringLiteral("--steps"), QStringLiteral("3")}));
        QCOMPARE(QFileInfo(args.back()).canonicalFilePath(),
                 QFileInfo(QFileInfo(source_).absolutePath()).canonicalFilePath());
        w.waitForLoads();
        CompareView* c = w.compareView();
        QVERIFY(c);
        const SummaryTableModel* m = c->summaryModel();
        QCOMPARE(m->rowCount(), 3);
        QCOMPARE(runColumnText(m, 0), QStringLiteral("mlp full"));
        QVERIFY(m->entries()[1].predicted);
        QCOMPARE(runColumnText(m, 1), p->codePolicy() + QStringLiteral(" (predicted)"));
        QVERIFY(!m->entries()[2].predicted);
        QCOMPARE(runColumnText(m, 2), QStringLiteral("train.py (applied: layers)"));
        d->close();
    }

    // Record fails: its last lines, in an error the user can act on.
    void recordFailureShowsItsLastLines() {
        WhatIfDialog d(load(source_));
        AdvicePanel* p = d.advicePanel();
        advise(p, fittingBudget(p));
        p->setCliProgram(
            fakeCli(QStringLiteral("cli-fail.sh"),
                    QStringLiteral("echo 'train.py: CUDA out of memory' >&2\nexit 1")));
        QSignalSpy done(&d, &WhatIfDialog::measuredBesidePrediction);
        p->recordWithPolicy();
        QTRY_VERIFY_WITH_TIMEOUT(!p->recordError().isEmpty(), kWaitMs);
        QVERIFY(p->recordError().contains(QStringLiteral("exit status 1")));
        QVERIFY2(p->recordError().contains(QStringLiteral("CUDA out of memory")),
                 qPrintable(p->recordError()));
        QCOMPARE(done.count(), 0);
        QVERIFY(p->canRecord());  // it can be tried again
        // A program that is not there.
        p->setCliProgram(dir_.filePath(QStringLiteral("no-such-cli")));
        p->recordWithPolicy();
        QTRY_VERIFY_WITH_TIMEOUT(p->recordError().contains(QStringLiteral("Cannot run")), kWaitMs);
    }

    // Cancel: SIGTERM, then SIGKILL after the grace period for a job that ignores it.
    void recordCancel() {
        WhatIfDialog d(load(source_));
        AdvicePanel* p = d.advicePanel();
        advise(p, fittingBudget(p));
        p->setRecordGracePeriod(200);
        p->setCliProgram(fakeCli(QStringLiteral("cli-slow.sh"),
                                 QStringLiteral("trap '' TERM\nwhile :; do sleep 0.05; done")));
        p->recordWithPolicy();
        QTRY_VERIFY_WITH_TIMEOUT(
            p->recordOutput().contains(QStringLiteral("memscope-cli record: recording the job")),
            kWaitMs);
        QVERIFY(p->isRecording());
        p->cancelRecording();
        QTRY_VERIFY_WITH_TIMEOUT(!p->isRecording(), kWaitMs);
        QCOMPARE(p->recordError(), QStringLiteral("Recording cancelled."));
    }
};

QTEST_MAIN(AdviceTest)
#include "tst_gui_advice.moc"
