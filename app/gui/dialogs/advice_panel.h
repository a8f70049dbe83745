#pragma once
// The What-if dialog's advisor: a memory budget in, core's answer out (the
// fastest per-layer mix predicted to fit, the best uniform policy beside
// it, or how far the smallest one misses), or without a budget the
// frontier. Then the policy as the PyTorch code that applies it (core's
// policyModules and pytorchCode), "Copy as code", and "Record with this
// policy": the user's job recorded again with the policy applied
// (ApplyRecorder), so that the measured run opens beside the prediction.

#include <QString>
#include <QStringList>
#include <QWidget>
#include <optional>

#include "loading/advice_runner.h"
#include "loading/apply_recorder.h"
#include "loading/run.h"
#include "memscope/whatif/advisor.h"
#include "memscope/whatif/whatif.h"

class QLabel;
class QLineEdit;
class QListWidget;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;

namespace memscope::gui {

// The advisor's answer as the panel shows it (rich text): the choice and the
// best uniform policy, a faster one that needs code of the user's own,
// "nothing fits", or the frontier; every figure labelled predicted.
QString adviceAnswerHtml(const Advice& advice);

class AdvicePanel : public QWidget {
    Q_OBJECT
public:
    explicit AdvicePanel(RunPtr run, QWidget* parent = nullptr);
    ~AdvicePanel() override;

    // The budget as typed ("12GiB", "" = the frontier); the parser's error, "" when it parses.
    void setBudget(const QString& text);
    QString budgetError() const { return budgetError_; }
    void advise();
    void cancelAdvice();
    bool isAdvising() const { return runner_->isBusy(); }
    // Blocks until a running advice has finished and its answer is shown.
    void waitForAdvice();
    // The answer as shown ("" before one), the frontier's rows, the status line.
    QString answerText() const;
    QStringList frontierRows() const;
    QString statusText() const;
    const std::optional<AdviceOutcome>& outcome() const { return outcome_; }

    // The policy whose code is shown and which "Record" applies; `predicted`
    // its predicted run when one is at hand (shown beside the measured one).
    void showPolicy(const WhatIfPolicy& policy, RunPtr predicted = {});
    QString codePolicy() const { return codePolicy_; }
    QString codeText() const;
    QString codeNeeds() const;  // "PyTorch 2.1 or newer", "" without code
    void copyCode();

    bool canRecord() const;
    QString recordToolTip() const;
    // The program run for "Record with this policy" (tests: a fake memscope-cli).
    void setCliProgram(const QString& program) { cli_ = program; }
    void setRecordGracePeriod(int ms) { recorder_->setGracePeriod(ms); }
    void recordWithPolicy();
    void cancelRecording();
    bool isRecording() const { return recorder_->isRunning(); }
    QStringList recordOutput() const;
    QString recordError() const { return recordError_; }
    const ApplyPlan& recordPlan() const { return recorder_->plan(); }
    QPushButton* recordButton() const { return record_; }

signals:
    // The applied run's traces were recorded: show them beside `predicted`
    // (null when none) and the run advised from.
    void measuredBesidePrediction(memscope::gui::RunPtr source, memscope::gui::RunPtr predicted,
                                  const QStringList& traces);

private:
    void updateState();
    void onAdvice(AdviceOutcome outcome);
    void onAdviceFailed(const QString& message, bool cancelled);
    void showFrontier(const Advice& advice);

    RunPtr run_;
    AdviceRunner* runner_ = nullptr;
    ApplyRecorder* recorder_ = nullptr;
    std::optional<AdviceOutcome> outcome_;
    std::optional<int64_t> budget_;
    QString budgetError_;
    QString cli_;
    bool waiting_ = false;
    // The policy shown: its name, whether policyModules applies it (else why not), its predicted
    // run.
    QString codePolicy_;
    QString codeProblem_;
    RunPtr codePredicted_;
    QString needs_;
    QString recordError_;
    QLineEdit* budgetEdit_ = nullptr;
    QLabel* budgetErrorLabel_ = nullptr;
    QPushButton* advise_ = nullptr;
    QPushButton* cancelAdvice_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QLabel* status_ = nullptr;
    QLabel* answer_ = nullptr;
    QListWidget* frontier_ = nullptr;
    QLabel* codeTitle_ = nullptr;
    QPlainTextEdit* code_ = nullptr;
    QLabel* needsLabel_ = nullptr;
    QPushButton* copy_ = nullptr;
    QPushButton* record_ = nullptr;
    QPushButton* cancelRecord_ = nullptr;
    QPlainTextEdit* recordLog_ = nullptr;
    QLabel* recordErrorLabel_ = nullptr;
    std::vector<WhatIfPolicy> frontierPolicies_;  // parallel to frontier_'s rows
};

}  // namespace memscope::gui
