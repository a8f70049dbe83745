#include "compare/module_compare.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QVBoxLayout>

#include "common/format.h"
#include "common/module_text.h"
#include "inspect/module_table_model.h"

namespace memscope::gui {

ModuleDeltaModel::ModuleDeltaModel(QObject* parent) : QAbstractTableModel(parent) {}

void ModuleDeltaModel::setDeltas(std::vector<ModuleDelta> deltas, QString baseline,
                                 QString candidate) {
    beginResetModel();
    deltas_ = std::move(deltas);
    baseline_ = std::move(baseline);
    candidate_ = std::move(candidate);
    endResetModel();
}

int ModuleDeltaModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(deltas_.size());
}

int ModuleDeltaModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant ModuleDeltaModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case Module:
            return QStringLiteral("Module");
        case Baseline:
            return baseline_.isEmpty() ? QStringLiteral("Baseline")
                                       : QStringLiteral("%1 (baseline)").arg(baseline_);
        case Candidate:
            return candidate_.isEmpty() ? QStringLiteral("Candidate") : candidate_;
        case Change:
            return QStringLiteral("Change");
        case ByCategory:
            return QStringLiteral("Change by category");
        default:
            return {};
    }
}

QVariant ModuleDeltaModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || size_t(index.row()) >= deltas_.size()) return {};
    const ModuleDelta& d = deltas_[size_t(index.row())];
    if (role == RawRole) {
        switch (index.column()) {
            case Baseline:
                return qint64(d.baseline_bytes);
            case Candidate:
                return qint64(d.candidate_bytes);
            case Change:
                return qint64(d.delta);
            default:
                return {};
        }
    }
    if (role == Qt::TextAlignmentRole)
        return index.column() == Module || index.column() == ByCategory
                   ? QVariant()
                   : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
    switch (index.column()) {
        case Module:
            return toQString(d.path);
        case Baseline:
            return formatBytes(double(d.baseline_bytes));
        case Candidate:
            return formatBytes(double(d.candidate_bytes));
        case Change:
            return (d.delta > 0 ? QStringLiteral("+") : QString()) + formatBytes(double(d.delta));
        case ByCategory:
            return categoriesText(d.delta_by_category);
        default:
            return {};
    }
}

ModuleComparePanel::ModuleComparePanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout;
    candidateBox_ = new QComboBox(this);
    bar->addWidget(new QLabel(QStringLiteral("Candidate:"), this));
    bar->addWidget(candidateBox_);
    bar->addStretch(1);
    layout->addLayout(bar);
    head_ = new QLabel(this);
    head_->setWordWrap(true);
    head_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(head_);
    model_ = new ModuleDeltaModel(this);
    view_ = new QTableView(this);
    view_->setModel(model_);
    view_->verticalHeader()->hide();
    view_->horizontalHeader()->setStretchLastSection(true);
    layout->addWidget(view_, 1);
    connect(candidateBox_, &QComboBox::currentIndexChanged, this, [this](int i) {
        if (i >= 0) setCandidate(candidateBox_->itemData(i).toInt());
    });
}

void ModuleComparePanel::setEntries(const std::vector<CompareEntry>& entries, int baseline) {
    entries_ = entries;
    baseline_ = baseline;
    breakdowns_.clear();
    // By layer at each run's own peak: the grouping `compare --json` uses.
    for (const CompareEntry& e : entries_) {
        const Trace* trace = e.run ? e.run->trace(e.device) : nullptr;
        const DeviceTimeline* tl = e.run ? e.run->timeline(e.device) : nullptr;
        const ModuleAttribution* attribution = e.run ? e.run->moduleAttribution(e.device) : nullptr;
        breakdowns_.push_back(trace && tl && attribution ? modulesAtPeak(*trace, *attribution, *tl)
                                                         : ModuleBreakdown{});
    }
    const int was = candidate_;
    const QSignalBlocker block(candidateBox_);
    candidateBox_->clear();
    candidate_ = -1;
    for (int i = 0; i < int(entries_.size()); ++i) {
        if (i == baseline_) continue;
        candidateBox_->addItem(entries_[size_t(i)].shownName(), i);
        if (i == was || candidate_ < 0) {
            candidate_ = i;
            candidateBox_->setCurrentIndex(candidateBox_->count() - 1);
        }
    }
    update();
}

void ModuleComparePanel::setCandidate(int index) {
    if (index == baseline_ || index < 0 || size_t(index) >= entries_.size()) return;
    candidate_ = index;
    const int at = candidateBox_->findData(index);
    if (at >= 0 && candidateBox_->currentIndex() != at) {
        const QSignalBlocker block(candidateBox_);
        candidateBox_->setCurrentIndex(at);
    }
    update();
}

void ModuleComparePanel::update() {
    const bool ok = candidate_ >= 0 && size_t(candidate_) < breakdowns_.size() &&
                    size_t(baseline_) < breakdowns_.size();
    if (!ok) {
        model_->setDeltas({}, {}, {});
        head_->setText(QStringLiteral("Compare two runs or more for their change by module."));
        view_->setVisible(false);
        return;
    }
    const ModuleBreakdown& base = breakdowns_[size_t(baseline_)];
    const ModuleBreakdown& cand = breakdowns_[size_t(candidate_)];
    const QString baseName = entries_[size_t(baseline_)].shownName();
    const QString candName = entries_[size_t(candidate_)].shownName();
    const bool baseHas = base.source != ModuleSource::None;
    const bool candHas = cand.source != ModuleSource::None;
    if (!baseHas && !candHas) {
        model_->setDeltas({}, {}, {});
        head_->setText(noModulesMessage());
        view_->setVisible(false);
        return;
    }
    std::vector<ModuleDelta> deltas = compareModules(memscope::Baseline<ModuleBreakdown>{base},
                                                     memscope::Candidate<ModuleBreakdown>{cand});
    QStringList lines;
    // One side without modules: its whole peak is "outside", which says
    // nothing about the layers; the table still shows the other's.
    if (!baseHas) lines << QStringLiteral("%1 (baseline): %2").arg(baseName, noModulesMessage());
    if (!candHas) lines << QStringLiteral("%1: %2").arg(candName, noModulesMessage());
    const bool inferred =
        base.source == ModuleSource::Inferred || cand.source == ModuleSource::Inferred;
    lines << QStringLiteral(
                 "<b>%1</b> against the baseline <b>%2</b>, at each run's peak, by "
                 "layer%3:")
                 .arg(candName.toHtmlEscaped(), baseName.toHtmlEscaped(),
                      inferred ? QStringLiteral(" (modules inferred)") : QString());
    for (const std::string& l : describeModuleChanges(deltas))
        lines << QStringLiteral("&nbsp;&nbsp;") + toQString(l).toHtmlEscaped();
    head_->setText(lines.join(QStringLiteral("<br>")));
    model_->setDeltas(std::move(deltas), baseName, candName);
    view_->setVisible(true);
    view_->resizeColumnsToContents();
}

QString ModuleComparePanel::headline() const {
    return head_->text();
}

bool ModuleComparePanel::showsTable() const {
    return !view_->isHidden();
}

}  // namespace memscope::gui
