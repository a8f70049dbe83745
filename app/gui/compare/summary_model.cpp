#include "compare/summary_model.h"

#include <QFont>
#include <algorithm>

#include "common/format.h"
#include "memscope/report/compare_report.h"

namespace memscope::gui {

SummaryTableModel::SummaryTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void SummaryTableModel::setRuns(std::vector<CompareEntry> entries, int baseline, AlignMode align,
                                PeakScope scope) {
    beginResetModel();
    entries_ = std::move(entries);
    std::vector<CompareInput> inputs;
    for (const CompareEntry& e : entries_) {
        const RunRef ref{e.run ? e.run->trace(e.device) : nullptr,
                         e.run ? e.run->timeline(e.device) : nullptr};
        const QString path = e.run && !e.run->paths.isEmpty() ? e.run->paths.front() : QString();
        inputs.push_back({path.toStdString(), e.shownName().toStdString(), ref});
    }
    table_ = buildCompareTable(inputs, size_t(std::max(0, baseline)), align, scope);
    for (size_t i = 0; i < entries_.size() && i < table_.rows.size(); ++i) {
        entries_[i].summary = table_.rows[i].summary;
        const Trace* t = table_.rows[i].run.trace;
        entries_[i].predicted = t && t->prediction;
    }
    columns_ = table_.columns();
    checks_ = memscope::predictionChecks(table_);
    // Beside the baseline's difference, where the eye compares peaks.
    whys_.assign(table_.rows.size(), std::nullopt);
    for (size_t r = 0; r < table_.rows.size(); ++r) whys_[r] = table_.why(r);
    // Beside the baseline's difference, where the eye compares peaks: the
    // prediction's check, then why the peak changed.
    const auto delta =
        std::find(columns_.begin(), columns_.end(), CompareColumn{CompareColumnKind::PeakDelta});
    int next =
        int(delta == columns_.end() ? columns_.size() : size_t(delta - columns_.begin()) + 1);
    auto any = [](const auto& v) {
        return std::any_of(v.begin(), v.end(), [](const auto& x) { return bool(x); });
    };
    checkColumn_ = any(checks_) ? next++ : -1;
    whyColumn_ = any(whys_) ? next : -1;
    endResetModel();
}

void SummaryTableModel::setBaseline(int baseline) {
    setRuns(std::move(entries_), baseline, table_.align, table_.scope);
}

int SummaryTableModel::predictionCheckColumn() const {
    return checkColumn_;
}

int SummaryTableModel::coreColumn(int section) const {
    if (section < 0 || section == checkColumn_ || section == whyColumn_) return -1;
    int at = section;
    for (int extra : {checkColumn_, whyColumn_})
        if (extra >= 0 && section > extra) --at;
    return size_t(at) < columns_.size() ? at : -1;
}

CompareColumn SummaryTableModel::column(int section) const {
    const int at = coreColumn(section);
    return at >= 0 ? columns_[size_t(at)] : CompareColumn{};
}

int SummaryTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(table_.rows.size());
}

int SummaryTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid()
               ? 0
               : int(columns_.size()) + (checkColumn_ >= 0 ? 1 : 0) + (whyColumn_ >= 0 ? 1 : 0);
}

QVariant SummaryTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (role != Qt::DisplayRole) return {};
    if (orientation == Qt::Vertical) return section + 1;
    if (section == predictionCheckColumn()) return QStringLiteral("vs measured");
    if (section == whyColumn_) return QStringLiteral("Why");
    const int at = coreColumn(section);
    if (at < 0) return {};
    return toQString(table_.header(columns_[size_t(at)]));
}

QVariant SummaryTableModel::checkData(size_t row, int role) const {
    const auto& check = row < checks_.size() ? checks_[row] : std::nullopt;
    if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
    if (!check) return {};
    if (role == RawRole) return check->delta_fraction;
    if (role == Qt::DisplayRole) return toQString(predictionCheckCell(*check));
    if (role == Qt::ToolTipRole && check->measured_row < table_.rows.size())
        return QStringLiteral("predicted peak %1 than measured in %2")
            .arg(check->delta_bytes >= 0
                     ? QStringLiteral("%1 more").arg(formatBytes(double(check->delta_bytes)))
                     : QStringLiteral("%1 less").arg(formatBytes(double(-check->delta_bytes))),
                 toQString(table_.rows[check->measured_row].name));
    return {};
}

QVariant SummaryTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || size_t(index.row()) >= table_.rows.size()) return {};
    const size_t row = size_t(index.row());
    const bool predicted = row < entries_.size() && entries_[row].predicted;
    if (role == PredictedRole) return predicted;
    if (index.column() == predictionCheckColumn()) return checkData(row, role);
    if (index.column() == whyColumn_) {
        const auto& why = row < whys_.size() ? whys_[row] : std::nullopt;
        if (why && (role == Qt::DisplayRole || role == Qt::ToolTipRole || role == RawRole))
            return toQString(*why);
        return {};
    }
    const int at = coreColumn(index.column());
    if (at < 0) return {};
    const CompareColumn c = columns_[size_t(at)];
    const bool isBaseline = row == table_.baseline;
    if (role == Qt::FontRole && (predicted || isBaseline)) {
        // Predicted rows read in italics throughout, so a glance tells them apart.
        QFont f;
        f.setBold(isBaseline && c.kind == CompareColumnKind::Run);
        f.setItalic(predicted);
        return f;
    }
    if (role == Qt::ToolTipRole && predicted && c.kind == CompareColumnKind::Run)
        return predictionTooltip(row);
    if (role == Qt::TextAlignmentRole)
        return c.kind == CompareColumnKind::Run || c.kind == CompareColumnKind::PeakPhase
                   ? QVariant()
                   : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
    if (role == RawRole) return toQString(table_.raw(row, c));
    if (role == Qt::DisplayRole || role == Qt::ToolTipRole) return toQString(table_.cell(row, c));
    return {};
}

QString SummaryTableModel::predictionTooltip(size_t row) const {
    const Trace* t = table_.rows[row].run.trace;
    if (!t || !t->prediction) return {};
    const Prediction& p = *t->prediction;
    QStringList lines;
    lines << QStringLiteral(
                 "Predicted, not measured: policy %1 from %2 (measured policy %3; "
                 "layers %4)")
                 .arg(toQString(p.policy), toQString(p.source),
                      p.measured_policy.empty() ? QStringLiteral("not recorded")
                                                : toQString(p.measured_policy),
                      toQString(p.layers_source));
    for (const std::string& a : p.assumptions) lines << QStringLiteral("• ") + toQString(a);
    return lines.join(QLatin1Char('\n'));
}

QString SummaryTableModel::toCsv() const {
    return toQString(memscope::toCsv(table_));
}

QString SummaryTableModel::toTextTable() const {
    return toQString(memscope::toText(table_));
}

}  // namespace memscope::gui
