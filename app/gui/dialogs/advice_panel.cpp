#include "dialogs/advice_panel.h"

#include <QClipboard>
#include <QCoreApplication>
#include <QDateTime>
#include <QFileInfo>
#include <QFontDatabase>
#include <QGroupBox>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QThread>
#include <QVBoxLayout>
#include <algorithm>

#include "common/format.h"
#include "loading/whatif_runner.h"
#include "memscope/base/units.h"
#include "memscope/whatif/policy_modules.h"
#include "memscope/whatif/pytorch_code.h"

namespace memscope::gui {

namespace {

// One policy's predicted figures, as the answer and the frontier show them.
QString figures(const AdvisedPolicy& a, bool byReserved) {
    return QStringLiteral("predicted peak %1%2, step %3 ms (×%4), recompute %5 ms per step")
        .arg(formatBytes(double(a.judged_bytes)),
             byReserved ? QStringLiteral(" reserved") : QString())
        .arg(a.row.step_ms, 0, 'f', 2)
        .arg(a.row.step_time_ratio, 0, 'f', 2)
        .arg(double(a.row.recompute_ns) / 1e6, 0, 'f', 2);
}

QString name(const AdvisedPolicy& a) {
    return toQString(a.label()).toHtmlEscaped();  // with the allocator's settings, where any
}

}  // namespace

QString adviceAnswerHtml(const Advice& advice) {
    QStringList parts;
    const bool reserved = advice.by_reserved;
    if (!advice.budget_bytes) {
        parts << QStringLiteral(
                     "<b>Predicted frontier</b>: %1 policies no other one beats in "
                     "both memory and time (fastest first). Pick one for its code.")
                     .arg(advice.frontier.size());
    } else if (advice.choice) {
        const AdvisedPolicy& c = *advice.choice;
        parts << QStringLiteral("<b>Predicted to fit %1: %2</b>%3<br>%4")
                     .arg(formatBytes(double(*advice.budget_bytes)), name(c),
                          c.uniform ? QStringLiteral(" (a uniform policy: no mix is faster)")
                                    : QString(),
                          figures(c, reserved));
        if (advice.best_uniform && advice.best_uniform->policy.name != c.policy.name) {
            const AdvisedPolicy& u = *advice.best_uniform;
            const double faster =
                u.row.step_ms > 0 ? 100.0 * (u.row.step_ms - c.row.step_ms) / u.row.step_ms : 0;
            const int64_t lower = u.judged_bytes - c.judged_bytes;
            parts << QStringLiteral(
                         "Best uniform policy: <b>%1</b>, %2; the answer's step is "
                         "%3% faster, its peak %4 %5.")
                         .arg(name(u), figures(u, reserved))
                         .arg(faster, 0, 'f', 1)
                         .arg(formatBytes(double(lower < 0 ? -lower : lower)),
                              lower < 0 ? QStringLiteral("higher") : QStringLiteral("lower"));
        } else if (!advice.best_uniform) {
            parts << QStringLiteral("No uniform policy fits.");
        }
        if (advice.by_hand)
            parts << QStringLiteral("Faster still, with code of your own: <b>%1</b>, %2 (%3).")
                         .arg(name(*advice.by_hand), figures(*advice.by_hand, reserved),
                              toQString(advice.by_hand_reason).toHtmlEscaped());
    } else if (advice.by_hand) {
        parts << QStringLiteral("<b>Only %1 fits %2</b>, %3, and it needs code of your own (%4).")
                     .arg(name(*advice.by_hand), formatBytes(double(*advice.budget_bytes)),
                          figures(*advice.by_hand, reserved),
                          toQString(advice.by_hand_reason).toHtmlEscaped());
    } else {
        parts << QStringLiteral("<b>Nothing fits %1</b>; the smallest is %2 over")
                     .arg(formatBytes(double(*advice.budget_bytes)),
                          formatBytes(double(advice.short_by_bytes)));
        if (advice.closest)
            parts.back() += QStringLiteral(": <b>%1</b>, %2.")
                                .arg(name(*advice.closest), figures(*advice.closest, reserved));
        else
            parts.back() += QLatin1Char('.');
    }
    if (!advice.line.empty())
        parts << QStringLiteral("<i>%1</i>").arg(toQString(advice.line).toHtmlEscaped());
    parts << QStringLiteral("%1 whole runs simulated; every figure is predicted.")
                 .arg(advice.simulations);
    return parts.join(QStringLiteral("<br>"));
}

AdvicePanel::AdvicePanel(RunPtr run, QWidget* parent)
    : QWidget(parent), run_(std::move(run)), cli_(memscopeCliProgram()) {
    runner_ = new AdviceRunner(this);
    recorder_ = new ApplyRecorder(this);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);

    auto* adviseBox = new QGroupBox(QStringLiteral("Advise for a memory budget"), this);
    auto* adviseLayout = new QVBoxLayout(adviseBox);
    auto* row = new QHBoxLayout;
    row->addWidget(new QLabel(QStringLiteral("Budget:"), adviseBox));
    budgetEdit_ = new QLineEdit(adviseBox);
    budgetEdit_->setObjectName(QStringLiteral("budget"));
    budgetEdit_->setPlaceholderText(QStringLiteral("e.g. 12GiB, 800MB; empty: the frontier"));
    row->addWidget(budgetEdit_, 1);
    advise_ = new QPushButton(QStringLiteral("Advise"), adviseBox);
    cancelAdvice_ = new QPushButton(QStringLiteral("Cancel"), adviseBox);
    row->addWidget(advise_);
    row->addWidget(cancelAdvice_);
    adviseLayout->addLayout(row);
    budgetErrorLabel_ = new QLabel(adviseBox);
    budgetErrorLabel_->setStyleSheet(QStringLiteral("color: #c03030"));
    budgetErrorLabel_->setVisible(false);
    adviseLayout->addWidget(budgetErrorLabel_);
    progress_ = new QProgressBar(adviseBox);
    progress_->setRange(0, 1);
    progress_->setValue(0);
    adviseLayout->addWidget(progress_);
    status_ = new QLabel(adviseBox);
    status_->setWordWrap(true);
    adviseLayout->addWidget(status_);
    answer_ = new QLabel(adviseBox);
    answer_->setWordWrap(true);
    answer_->setTextFormat(Qt::RichText);
    answer_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    adviseLayout->addWidget(answer_);
    frontier_ = new QListWidget(adviseBox);
    frontier_->setVisible(false);
    frontier_->setMinimumHeight(frontier_->fontMetrics().lineSpacing() * 5);
    adviseLayout->addWidget(frontier_);
    layout->addWidget(adviseBox);

    auto* codeBox = new QGroupBox(QStringLiteral("Apply it"), this);
    auto* codeLayout = new QVBoxLayout(codeBox);
    codeTitle_ = new QLabel(QStringLiteral("Advise, or pick a policy, to see its code."), codeBox);
    codeTitle_->setWordWrap(true);
    codeLayout->addWidget(codeTitle_);
    code_ = new QPlainTextEdit(codeBox);
    code_->setObjectName(QStringLiteral("code"));
    code_->setReadOnly(true);
    code_->setLineWrapMode(QPlainTextEdit::NoWrap);
    code_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    code_->setMinimumHeight(code_->fontMetrics().lineSpacing() * 8);
    codeLayout->addWidget(code_, 1);
    auto* codeRow = new QHBoxLayout;
    needsLabel_ = new QLabel(codeBox);
    codeRow->addWidget(needsLabel_, 1);
    copy_ = new QPushButton(QStringLiteral("Copy as code"), codeBox);
    record_ = new QPushButton(QStringLiteral("Record with this policy"), codeBox);
    cancelRecord_ = new QPushButton(QStringLiteral("Cancel recording"), codeBox);
    codeRow->addWidget(copy_);
    codeRow->addWidget(record_);
    codeRow->addWidget(cancelRecord_);
    codeLayout->addLayout(codeRow);
    recordLog_ = new QPlainTextEdit(codeBox);
    recordLog_->setReadOnly(true);
    recordLog_->setMaximumBlockCount(500);
    recordLog_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    recordLog_->setMaximumHeight(recordLog_->fontMetrics().lineSpacing() * 6);
    recordLog_->setVisible(false);
    codeLayout->addWidget(recordLog_);
    recordErrorLabel_ = new QLabel(codeBox);
    recordErrorLabel_->setWordWrap(true);
    recordErrorLabel_->setStyleSheet(QStringLiteral("color: #c03030"));
    recordErrorLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    recordErrorLabel_->setVisible(false);
    codeLayout->addWidget(recordErrorLabel_);
    layout->addWidget(codeBox, 1);

    connect(budgetEdit_, &QLineEdit::textChanged, this, &AdvicePanel::setBudget);
    connect(budgetEdit_, &QLineEdit::returnPressed, this, &AdvicePanel::advise);
    connect(advise_, &QPushButton::clicked, this, &AdvicePanel::advise);
    connect(cancelAdvice_, &QPushButton::clicked, this, &AdvicePanel::cancelAdvice);
    connect(copy_, &QPushButton::clicked, this, &AdvicePanel::copyCode);
    connect(record_, &QPushButton::clicked, this, &AdvicePanel::recordWithPolicy);
    connect(cancelRecord_, &QPushButton::clicked, this, &AdvicePanel::cancelRecording);
    connect(frontier_, &QListWidget::currentRowChanged, this, [this](int r) {
        if (r < 0 || size_t(r) >= frontierPolicies_.size()) return;
        const WhatIfPolicy& p = frontierPolicies_[size_t(r)];
        const bool chosen =
            outcome_ && outcome_->advice->choice && outcome_->advice->choice->policy.name == p.name;
        showPolicy(p, chosen ? outcome_->predicted : RunPtr());
    });
    connect(runner_, &AdviceRunner::progress, this, [this](int done, int total) {
        progress_->setRange(0, std::max(1, total));
        progress_->setValue(done);
        status_->setText(
            QStringLiteral("Advising: %1 of about %2 runs simulated…").arg(done).arg(total));
    });
    connect(runner_, &AdviceRunner::finished, this, &AdvicePanel::onAdvice);
    connect(runner_, &AdviceRunner::failed, this, &AdvicePanel::onAdviceFailed);
    connect(recorder_, &ApplyRecorder::outputLine, this,
            [this](const QString& line) { recordLog_->appendPlainText(line); });
    connect(recorder_, &ApplyRecorder::succeeded, this, [this](const QStringList& traces) {
        recordLog_->appendPlainText(
            QStringLiteral("Recorded %1 trace(s); they open beside the prediction.")
                .arg(traces.size()));
        updateState();
        emit measuredBesidePrediction(run_, codePredicted_, traces);
    });
    connect(recorder_, &ApplyRecorder::failed, this, [this](const QString& message, bool) {
        recordError_ = message;
        recordErrorLabel_->setText(message);
        recordErrorLabel_->setVisible(true);
        updateState();
    });
    updateState();
}

AdvicePanel::~AdvicePanel() = default;  // the runner cancels and waits; the recorder ends its job

void AdvicePanel::setBudget(const QString& text) {
    if (budgetEdit_->text() != text) budgetEdit_->setText(text);  // comes back here
    budget_.reset();
    budgetError_.clear();
    if (!text.trimmed().isEmpty()) {
        auto parsed = parseByteSize(text.trimmed().toStdString());
        if (parsed.ok() && *parsed > 0)
            budget_ = *parsed;
        else
            budgetError_ = parsed.ok() ? QStringLiteral("a budget of 0 bytes fits nothing")
                                       : toQString(parsed.message());
    }
    budgetErrorLabel_->setText(budgetError_);
    budgetErrorLabel_->setVisible(!budgetError_.isEmpty());
    updateState();
}

void AdvicePanel::advise() {
    if (!budgetError_.isEmpty() || runner_->isBusy() || !run_) return;
    answer_->clear();
    frontier_->clear();
    frontier_->setVisible(false);
    frontierPolicies_.clear();
    progress_->setRange(0, 0);  // busy until core's first estimate
    status_->setText(budget_ ? QStringLiteral("Advising for %1…").arg(formatBytes(double(*budget_)))
                             : QStringLiteral("Finding the frontier…"));
    waiting_ = runner_->start(run_, budget_);
    updateState();
}

void AdvicePanel::cancelAdvice() {
    runner_->cancel();
}

void AdvicePanel::waitForAdvice() {
    runner_->waitForFinished();
    while (waiting_) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        if (waiting_) QThread::msleep(1);
    }
}

QString AdvicePanel::answerText() const {
    return answer_->text();
}

QStringList AdvicePanel::frontierRows() const {
    QStringList out;
    for (int i = 0; i < frontier_->count(); ++i) out << frontier_->item(i)->text();
    return out;
}

QString AdvicePanel::statusText() const {
    return status_->text();
}

void AdvicePanel::onAdvice(AdviceOutcome outcome) {
    waiting_ = false;
    progress_->setRange(0, 1);
    progress_->setValue(1);
    const Advice& advice = *outcome.advice;
    outcome_ = std::move(outcome);
    answer_->setText(adviceAnswerHtml(advice));
    QStringList notes;
    for (const std::string& n : advice.notes) notes << toQString(n);
    answer_->setToolTip(notes.join(QLatin1Char('\n')));
    status_->setText(QStringLiteral("Advised from %1.").arg(run_->name));
    showFrontier(advice);
    if (advice.choice)
        showPolicy(advice.choice->policy, outcome_->predicted);
    else if (advice.by_hand)
        showPolicy(advice.by_hand->policy);  // its code box says why it is not applied
    else if (advice.closest)
        showPolicy(advice.closest->policy);
    updateState();
}

void AdvicePanel::onAdviceFailed(const QString& message, bool cancelled) {
    waiting_ = false;
    progress_->setRange(0, 1);
    progress_->setValue(0);
    status_->setText(cancelled ? QStringLiteral("Advice cancelled.")
                               : QStringLiteral("Could not advise: %1").arg(message));
    updateState();
}

void AdvicePanel::showFrontier(const Advice& advice) {
    frontier_->clear();
    frontierPolicies_.clear();
    // With a budget the answer says it; the frontier is the list without one.
    if (advice.budget_bytes) return;
    for (const AdvisedPolicy& a : advice.frontier) {
        frontier_->addItem(
            QStringLiteral("%1: %2").arg(toQString(a.policy.name), figures(a, advice.by_reserved)));
        frontierPolicies_.push_back(a.policy);
    }
    frontier_->setVisible(true);
}

void AdvicePanel::showPolicy(const WhatIfPolicy& policy, RunPtr predicted) {
    codePolicy_ = toQString(policy.name);
    codePredicted_ = std::move(predicted);
    codeProblem_.clear();
    needs_.clear();
    const RunPart* part = run_ ? whatIfPart(*run_) : nullptr;
    if (!part) {
        codeProblem_ = QStringLiteral("the run holds no trace");
    } else {
        auto modules = policyModules(policy, *part->trace);
        if (modules.ok()) {
            PytorchCodeOptions options;
            options.source = QFileInfo(part->path).fileName().toStdString();
            code_->setPlainText(toQString(pytorchCode(*modules, options)));
            needs_ = QStringLiteral("Needs PyTorch %1 or newer.")
                         .arg(toQString(pytorchCodeNeeds(*modules)));
        } else {
            codeProblem_ = toQString(modules.message());
        }
    }
    if (!codeProblem_.isEmpty())
        code_->setPlainText(
            QStringLiteral("# %1 cannot be applied by module: %2").arg(codePolicy_, codeProblem_));
    codeTitle_->setText(
        QStringLiteral("<b>%1</b> as PyTorch code:").arg(codePolicy_.toHtmlEscaped()));
    needsLabel_->setText(needs_);
    updateState();
}

QString AdvicePanel::codeText() const {
    return codeProblem_.isEmpty() ? code_->toPlainText() : QString();
}

QString AdvicePanel::codeNeeds() const {
    return needs_;
}

void AdvicePanel::copyCode() {
    const QString code = codeText();
    if (!code.isEmpty()) QGuiApplication::clipboard()->setText(code);
}

QString AdvicePanel::recordToolTip() const {
    if (codePolicy_.isEmpty()) return QStringLiteral("Advise, or pick a policy, first.");
    if (!codeProblem_.isEmpty())
        return QStringLiteral("%1 cannot be applied by module: %2").arg(codePolicy_, codeProblem_);
    if (!run_) return QStringLiteral("No run.");
    if (auto ok = canRecordAgain(*run_); !ok.ok())
        return QStringLiteral("Cannot record again: %1").arg(toQString(ok.message()));
    if (recorder_->isRunning()) return QStringLiteral("Recording…");
    return QStringLiteral(
               "Runs the recorded command again under memscope-cli record with %1 "
               "applied, and opens the measured run beside the prediction.")
        .arg(codePolicy_);
}

bool AdvicePanel::canRecord() const {
    return run_ && !codePolicy_.isEmpty() && codeProblem_.isEmpty() && !recorder_->isRunning() &&
           canRecordAgain(*run_).ok();
}

void AdvicePanel::recordWithPolicy() {
    if (!canRecord()) return;
    auto plan = planApplyRecord(*run_, codePolicy_, cli_, QDateTime::currentDateTime());
    recordError_.clear();
    recordErrorLabel_->setVisible(false);
    if (!plan.ok()) {
        recordError_ = toQString(plan.message());
        recordErrorLabel_->setText(recordError_);
        recordErrorLabel_->setVisible(true);
        return;
    }
    recordLog_->clear();
    recordLog_->setVisible(true);
    for (const QString& n : plan->notes) recordLog_->appendPlainText(n);
    recordLog_->appendPlainText(
        QStringLiteral("$ %1 %2 (in %3)")
            .arg(plan->program, plan->arguments.join(QLatin1Char(' ')), plan->working_dir));
    recorder_->start(*plan);
    updateState();
}

void AdvicePanel::cancelRecording() {
    recorder_->cancel();
}

QStringList AdvicePanel::recordOutput() const {
    return recordLog_->toPlainText().split(QLatin1Char('\n'), Qt::SkipEmptyParts);
}

void AdvicePanel::updateState() {
    const bool advising = runner_->isBusy();
    advise_->setEnabled(!advising && budgetError_.isEmpty() && run_);
    advise_->setText(budget_ || !budgetError_.isEmpty() ? QStringLiteral("Advise")
                                                        : QStringLiteral("Show the frontier"));
    cancelAdvice_->setEnabled(advising);
    budgetEdit_->setEnabled(!advising);
    copy_->setEnabled(!codeText().isEmpty());
    record_->setEnabled(canRecord());
    record_->setToolTip(recordToolTip());
    cancelRecord_->setEnabled(recorder_->isRunning());
}

}  // namespace memscope::gui
