#include "dialogs/whatif_dialog.h"

#include <QCoreApplication>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QThread>
#include <QVBoxLayout>
#include <algorithm>

#include "common/format.h"
#include "dialogs/advice_panel.h"

namespace memscope::gui {

namespace {

enum ResultColumn { kPolicy, kPeak, kDelta, kStep, kNotes, kColumns };

QTableWidgetItem* cell(const QString& text, bool number = false) {
    auto* item = new QTableWidgetItem(text);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    if (number) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

}  // namespace

WhatIfDialog::WhatIfDialog(RunPtr run, QWidget* parent) : QDialog(parent), run_(std::move(run)) {
    setWindowTitle(QStringLiteral("What if… other checkpointing policies"));
    runner_ = new WhatIfRunner(this);
    auto* layout = new QVBoxLayout(this);
    auto* intro = new QLabel(this);
    intro->setWordWrap(true);
    layout->addWidget(intro);

    // The layers the prediction would checkpoint, found by core, before anything runs.
    const RunPart* part = run_ ? whatIfPart(*run_) : nullptr;
    if (!part) {
        chainProblem_ = QStringLiteral("the run holds no trace");
    } else {
        const DeviceTimeline* busiest = run_->timeline(run_->busiestDevice());
        auto chain = findLayerChain(*part->trace, busiest ? busiest->device : int16_t(0));
        if (chain.ok())
            chain_ = std::move(*chain);
        else
            chainProblem_ = toQString(chain.message());
    }
    intro->setText(
        QStringLiteral("Predicts the memory of other activation-checkpointing policies from "
                       "<b>%1</b>, measured saving every activation. The predicted runs open "
                       "in the compare view, hatched and named \"(predicted)\".")
            .arg(run_ ? run_->name.toHtmlEscaped() : QString()));

    auto* form = new QFormLayout;
    layers_ = new QListWidget(this);
    layers_->setFlow(QListView::LeftToRight);
    layers_->setWrapping(true);
    layers_->setMaximumHeight(layers_->fontMetrics().lineSpacing() * 4);
    layers_->setSelectionMode(QAbstractItemView::NoSelection);
    QString layersTitle = QStringLiteral("Layers:");
    if (chain_) {
        for (const ChainLayer& l : chain_->layers) layers_->addItem(toQString(l.name));
        layersTitle = QStringLiteral("Layers (%1, %2):")
                          .arg(toQString(toString(chain_->source)))
                          .arg(chain_->layers.size());
        offered_ = defaultWhatIfPolicies(*chain_);
    } else {
        // Nothing can be predicted: say why where the layers would be.
        auto* item = new QListWidgetItem(QStringLiteral("none found: %1").arg(chainProblem_));
        item->setForeground(QColor(0xc0, 0x30, 0x30));
        layers_->setWrapping(false);
        layers_->setWordWrap(true);
        layers_->addItem(item);
    }
    form->addRow(layersTitle, layers_);
    policyList_ = new QListWidget(this);
    for (const WhatIfPolicy& p : offered_) {
        auto* item = new QListWidgetItem(toQString(p.name), policyList_);
        item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
        item->setCheckState(Qt::Checked);
    }
    policyList_->setMinimumHeight(policyList_->fontMetrics().lineSpacing() * 6);
    form->addRow(QStringLiteral("Policies:"), policyList_);
    extra_ = new QLineEdit(this);
    extra_->setPlaceholderText(
        QStringLiteral("more, e.g. sequential:4 every:2 selective save:aten::mm layers:0,2"));
    // What each name means, as `whatif --help` says it.
    extra_->setToolTip(toQString(whatIfPolicyMeanings()));
    form->addRow(QStringLiteral("Also predict:"), extra_);
    extraError_ = new QLabel(this);
    extraError_->setWordWrap(true);
    extraError_->setStyleSheet(QStringLiteral("color: #c03030"));
    extraError_->setVisible(false);
    form->addRow(QString(), extraError_);
    layout->addLayout(form);

    progress_ = new QProgressBar(this);
    progress_->setRange(0, 1);
    progress_->setValue(0);
    layout->addWidget(progress_);
    status_ = new QLabel(this);
    status_->setWordWrap(true);
    layout->addWidget(status_);
    results_ = new QTableWidget(0, kColumns, this);
    results_->setHorizontalHeaderLabels({QStringLiteral("Policy"), QStringLiteral("Predicted peak"),
                                         QStringLiteral("vs measured"), QStringLiteral("Step time"),
                                         QStringLiteral("Notes")});
    results_->horizontalHeader()->setStretchLastSection(true);
    results_->verticalHeader()->hide();
    results_->setMinimumHeight(120);
    results_->setSelectionBehavior(QAbstractItemView::SelectRows);
    results_->setSelectionMode(QAbstractItemView::SingleSelection);
    results_->setToolTip(QStringLiteral("Select a policy to see its code below."));
    advice_ = new AdvicePanel(run_, this);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(results_);
    split->addWidget(advice_);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 2);
    layout->addWidget(split, 1);

    auto* buttons = new QDialogButtonBox(this);
    predict_ = buttons->addButton(QStringLiteral("Predict"), QDialogButtonBox::AcceptRole);
    cancel_ = buttons->addButton(QStringLiteral("Cancel prediction"), QDialogButtonBox::ActionRole);
    buttons->addButton(QDialogButtonBox::Close);
    layout->addWidget(buttons);
    connect(predict_, &QPushButton::clicked, this, &WhatIfDialog::start);
    connect(cancel_, &QPushButton::clicked, runner_, &WhatIfRunner::cancel);
    connect(buttons->button(QDialogButtonBox::Close), &QPushButton::clicked, this, [this] {
        runner_->cancel();
        reject();
    });
    connect(policyList_, &QListWidget::itemChanged, this, &WhatIfDialog::updateState);
    connect(extra_, &QLineEdit::textChanged, this, &WhatIfDialog::updateState);
    connect(runner_, &WhatIfRunner::progress, this, [this](int done, int total) {
        progress_->setRange(0, std::max(1, total));
        progress_->setValue(done);
        status_->setText(QStringLiteral("Predicted %1 of %2 policies…").arg(done).arg(total));
    });
    connect(runner_, &WhatIfRunner::finished, this, &WhatIfDialog::onFinished);
    connect(runner_, &WhatIfRunner::failed, this, &WhatIfDialog::onFailed);
    connect(results_, &QTableWidget::itemSelectionChanged, this, &WhatIfDialog::onResultSelected);
    connect(advice_, &AdvicePanel::measuredBesidePrediction, this,
            &WhatIfDialog::measuredBesidePrediction);
    resize(820, 900);
    updateState();
}

WhatIfDialog::~WhatIfDialog() = default;  // the runner cancels and waits

QStringList WhatIfDialog::layerNames() const {
    QStringList out;
    if (chain_)
        for (const ChainLayer& l : chain_->layers) out << toQString(l.name);
    return out;
}

QStringList WhatIfDialog::offeredPolicies() const {
    QStringList out;
    for (const WhatIfPolicy& p : offered_) out << toQString(p.name);
    return out;
}

void WhatIfDialog::setPolicyChecked(int index, bool checked) {
    if (QListWidgetItem* item = policyList_->item(index))
        item->setCheckState(checked ? Qt::Checked : Qt::Unchecked);
}

void WhatIfDialog::setExtraPolicies(const QString& text) {
    extra_->setText(text);
}

QString WhatIfDialog::policyError() const {
    return policyError_;
}

Result<std::vector<WhatIfPolicy>> WhatIfDialog::policies() const {
    std::vector<WhatIfPolicy> out;
    for (int i = 0; i < policyList_->count() && size_t(i) < offered_.size(); ++i)
        if (policyList_->item(i)->checkState() == Qt::Checked) out.push_back(offered_[size_t(i)]);
    // Words as a command line gives them; core's parser keeps "layers:0,2,4" one policy.
    std::vector<std::string> words;
    for (const QString& w : extra_->text().split(QLatin1Char(' '), Qt::SkipEmptyParts))
        words.push_back(w.toStdString());
    if (words.empty()) return out;
    auto typed = parseWhatIfPolicies(words);
    if (!typed.ok()) return typed.error();
    for (WhatIfPolicy& p : *typed) {
        const bool known = std::any_of(out.begin(), out.end(),
                                       [&](const WhatIfPolicy& o) { return o.name == p.name; });
        if (!known) out.push_back(std::move(p));
    }
    return out;
}

void WhatIfDialog::updateState() {
    const auto chosen = policies();
    policyError_ = chosen.ok() ? QString() : toQString(chosen.message());
    extraError_->setText(policyError_);
    extraError_->setVisible(!policyError_.isEmpty());
    const bool running = runner_->isBusy();
    predict_->setEnabled(!running && chosen.ok() && !chosen->empty());
    cancel_->setEnabled(running);
    policyList_->setEnabled(!running);
    extra_->setEnabled(!running);
}

void WhatIfDialog::start() {
    auto chosen = policies();
    if (!chosen.ok() || chosen->empty() || runner_->isBusy()) return;
    refusals_.clear();
    results_->setRowCount(0);
    const int n = int(chosen->size());
    progress_->setRange(0, n);
    progress_->setValue(0);
    status_->setText(QStringLiteral("Predicting %1 policies…").arg(n));
    waiting_ = runner_->start(run_, std::move(*chosen));
    updateState();
}

void WhatIfDialog::waitForFinished() {
    runner_->waitForFinished();
    // The result arrives as a queued signal: deliver it.
    while (waiting_) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        if (waiting_) QThread::msleep(1);
    }
}

int WhatIfDialog::resultRows() const {
    return results_->rowCount();
}

void WhatIfDialog::onFinished(WhatIfOutcome outcome) {
    waiting_ = false;
    report_ = outcome.report;
    predicted_ = outcome.predicted;
    if (outcome.report) showReport(*outcome.report);
    status_->setText(QStringLiteral("%1 predicted, %2 refused.%3")
                         .arg(outcome.predicted.size())
                         .arg(refusals_.size())
                         .arg(outcome.predicted.empty()
                                  ? QString()
                                  : QStringLiteral(" They are shown in the compare view.")));
    progress_->setValue(progress_->maximum());
    updateState();
    if (!outcome.predicted.empty()) emit predictionsReady(std::move(outcome));
}

void WhatIfDialog::onFailed(const QString& message, bool cancelled) {
    waiting_ = false;
    status_->setText(cancelled ? QStringLiteral("Prediction cancelled.")
                               : QStringLiteral("Could not predict: %1").arg(message));
    progress_->setValue(0);
    updateState();
}

void WhatIfDialog::showReport(const WhatIfReport& report) {
    results_->setRowCount(0);
    for (const WhatIfRow& row : report.rows) {
        const int r = results_->rowCount();
        results_->insertRow(r);
        results_->setItem(r, kPolicy, cell(toQString(row.policy)));
        if (row.refused) {
            refusals_ << QStringLiteral("%1: %2").arg(toQString(row.policy),
                                                      toQString(*row.refused));
            auto* why = cell(QStringLiteral("refused: %1").arg(toQString(*row.refused)));
            why->setForeground(QColor(0xc0, 0x30, 0x30));
            why->setToolTip(why->text());
            results_->setItem(r, kNotes, why);
            continue;
        }
        results_->setItem(r, kPeak, cell(formatBytes(double(row.peak_bytes)), true));
        if (!row.measured) {
            const QString delta = formatBytes(double(row.delta_bytes));
            results_->setItem(
                r, kDelta, cell(row.delta_bytes > 0 ? QStringLiteral("+") + delta : delta, true));
        }
        results_->setItem(r, kStep,
                          cell(QStringLiteral("%1 ms (×%2)")
                                   .arg(row.step_ms, 0, 'f', 2)
                                   .arg(row.step_time_ratio, 0, 'f', 2),
                               true));
        QStringList notes;
        if (row.on_frontier) notes << QStringLiteral("on the frontier");
        if (!row.assumptions.empty())
            notes << QStringLiteral("%1 assumption(s)").arg(row.assumptions.size());
        auto* n = cell(notes.join(QStringLiteral(", ")));
        QStringList tip;
        for (const std::string& a : row.assumptions) tip << toQString(a);
        n->setToolTip(tip.join(QLatin1Char('\n')));
        results_->setItem(r, kNotes, n);
    }
    results_->resizeColumnsToContents();
}

void WhatIfDialog::selectResultRow(int row) {
    results_->selectRow(row);
}

// A predicted row's policy, its code and its predicted run, below; the
// measured and refused rows have none.
void WhatIfDialog::onResultSelected() {
    const auto rows = results_->selectionModel()->selectedRows();
    if (rows.isEmpty() || !report_) return;
    const int r = rows.front().row();
    if (r < 0 || size_t(r) >= report_->rows.size()) return;
    const WhatIfRow& row = report_->rows[size_t(r)];
    if (row.measured || row.refused) return;
    auto policy = parseWhatIfPolicy(row.policy);
    if (!policy.ok()) return;
    RunPtr predicted;
    for (const RunPtr& p : predicted_)
        if (!p->parts.empty() && p->parts.front().trace == row.trace) predicted = p;
    advice_->showPolicy(*policy, predicted);
}

}  // namespace memscope::gui
