// What if…: the window's side of core's policy prediction. The dialog or the
// command line starts it; the predicted runs then join the compare view
// beside the runs that are open.
#include <QCoreApplication>
#include <QLabel>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QTabWidget>
#include <QThread>
#include <algorithm>

#include "compare/compare_view.h"
#include "compare/summary_model.h"
#include "dialogs/whatif_dialog.h"
#include "run_view/run_view.h"
#include "window/main_window.h"

namespace memscope::gui {

namespace {

const Prediction* predictionOf(const RunPtr& run) {
    if (!run || run->parts.empty() || !run->parts.front().trace) return nullptr;
    const auto& p = run->parts.front().trace->prediction;
    return p ? &*p : nullptr;
}

}  // namespace

RunPtr MainWindow::whatIfSource() const {
    if (RunView* v = currentRunView()) return predictionOf(v->run()) ? nullptr : v->run();
    if (compare_ && tabs_->currentWidget() == compare_) {
        const auto& entries = compare_->summaryModel()->entries();
        const int b = compare_->summaryModel()->baseline();
        if (b >= 0 && size_t(b) < entries.size() && !entries[size_t(b)].predicted)
            return entries[size_t(b)].run;
        for (const CompareEntry& e : entries)
            if (!e.predicted) return e.run;
    }
    return nullptr;
}

void MainWindow::whatIfDialog() {
    if (!openWhatIfDialog())
        QMessageBox::information(
            this, QStringLiteral("What if…"),
            QStringLiteral("Open a measured run first (one saving every activation, with its "
                           "layers' modules and training steps): What if… predicts other "
                           "checkpointing policies from it."));
}

WhatIfDialog* MainWindow::openWhatIfDialog() {
    RunPtr run = whatIfSource();
    if (!run) return nullptr;
    auto* dialog = new WhatIfDialog(run, this);
    dialog->setObjectName(QStringLiteral("whatIfDialog"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &WhatIfDialog::predictionsReady, this, &MainWindow::showPredictions);
    connect(dialog, &WhatIfDialog::measuredBesidePrediction, this,
            &MainWindow::showMeasuredBesidePrediction);
    dialog->open();
    return dialog;
}

bool MainWindow::startWhatIf(RunPtr run, std::vector<WhatIfPolicy> policies) {
    if (!run || whatIf_->isBusy()) return false;
    whatIfPending_ = true;
    status_->setText(QStringLiteral("Predicting other policies from %1…").arg(run->name));
    progress_->setRange(0, std::max<int>(1, int(policies.size())));
    progress_->setValue(0);
    progress_->setVisible(true);
    cancel_->setVisible(true);
    if (!whatIf_->start(std::move(run), std::move(policies))) {
        whatIfPending_ = false;
        return false;
    }
    return true;
}

void MainWindow::whatIfAfterLoad(std::vector<WhatIfPolicy> policies) {
    whatIfAfterLoad_ = std::move(policies);
}

void MainWindow::waitForWhatIf() {
    while (whatIfPending_) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        if (whatIfPending_) QThread::msleep(1);
    }
    QCoreApplication::processEvents();
}

void MainWindow::showPredictions(const WhatIfOutcome& outcome) {
    // What is compared stays, and the open runs join it, less earlier
    // predictions of the same policies from the same run: predicting again
    // replaces them.
    std::vector<RunPtr> base;
    if (compare_) base = compare_->runs();
    for (const RunPtr& r : runs()) base.push_back(r);
    auto replaced = [&](const RunPtr& r) {
        const Prediction* old = predictionOf(r);
        if (!old) return false;
        return std::any_of(outcome.predicted.begin(), outcome.predicted.end(),
                           [&](const RunPtr& n) {
                               const Prediction* p = predictionOf(n);
                               return p && p->policy == old->policy && p->source == old->source;
                           });
    };
    std::vector<RunPtr> shown;
    auto add = [&](const RunPtr& r) {
        if (r && std::find(shown.begin(), shown.end(), r) == shown.end()) shown.push_back(r);
    };
    add(outcome.source);
    for (const RunPtr& r : base)
        if (!replaced(r)) add(r);
    for (const RunPtr& r : outcome.predicted) add(r);
    showCompare(shown);
}

void MainWindow::showMeasuredBesidePrediction(RunPtr source, RunPtr predicted,
                                              const QStringList& traces) {
    if (traces.isEmpty()) return;
    Batch batch{traces, true};
    if (source) batch.alongside.push_back(std::move(source));
    if (predicted) batch.alongside.push_back(std::move(predicted));
    queue_.push_back(std::move(batch));
    if (!loading_) startNextLoad();
}

}  // namespace memscope::gui
