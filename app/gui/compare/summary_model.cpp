#include "compare/summary_model.h"

#include <QFont>

#include "common/format.h"

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
    for (size_t i = 0; i < entries_.size() && i < table_.rows.size(); ++i)
        entries_[i].summary = table_.rows[i].summary;
    columns_ = table_.columns();
    endResetModel();
}

void SummaryTableModel::setBaseline(int baseline) {
    setRuns(std::move(entries_), baseline, table_.align, table_.scope);
}

CompareColumn SummaryTableModel::column(int section) const {
    return section >= 0 && size_t(section) < columns_.size() ? columns_[size_t(section)]
                                                             : CompareColumn{};
}

int SummaryTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(table_.rows.size());
}

int SummaryTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(columns_.size());
}

QVariant SummaryTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (role != Qt::DisplayRole) return {};
    if (orientation == Qt::Vertical) return section + 1;
    if (section < 0 || size_t(section) >= columns_.size()) return {};
    return toQString(table_.header(columns_[size_t(section)]));
}

QVariant SummaryTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || size_t(index.row()) >= table_.rows.size() ||
        size_t(index.column()) >= columns_.size())
        return {};
    const CompareColumn c = columns_[size_t(index.column())];
    const size_t row = size_t(index.row());
    const bool isBaseline = row == table_.baseline;
    if (role == Qt::FontRole && isBaseline && c.kind == CompareColumnKind::Run) {
        QFont f;
        f.setBold(true);
        return f;
    }
    if (role == Qt::TextAlignmentRole)
        return c.kind == CompareColumnKind::Run || c.kind == CompareColumnKind::PeakPhase
                   ? QVariant()
                   : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
    if (role == RawRole) return toQString(table_.raw(row, c));
    if (role == Qt::DisplayRole || role == Qt::ToolTipRole) return toQString(table_.cell(row, c));
    return {};
}

QString SummaryTableModel::toCsv() const {
    return toQString(memscope::toCsv(table_));
}

QString SummaryTableModel::toTextTable() const {
    return toQString(memscope::toText(table_));
}

}  // namespace memscope::gui
