#pragma once
// Core's by-module breakdown (modulesAtPeak) as a table: module, bytes,
// share of the total, the categories inside it, what recompute made of it.
// Every figure is a ModuleBytes field; the model only formats it.

#include <QAbstractTableModel>

#include "memscope/analysis/module_breakdown.h"

namespace memscope::gui {

class ModuleTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Module, Bytes, Share, Categories, Recomputed, Count, ColumnCount };
    static constexpr int RawRole = Qt::UserRole + 1;     // Bytes, Recomputed, Count: the number
    static constexpr int ModuleRole = Qt::UserRole + 2;  // the row's ModuleId value

    explicit ModuleTableModel(QObject* parent = nullptr);
    void setBreakdown(ModuleBreakdown breakdown);
    const ModuleBreakdown& breakdown() const { return breakdown_; }
    ModuleId moduleAt(int row) const { return breakdown_.rows[size_t(row)].module; }
    // The row of a group, -1 if none.
    int rowOf(ModuleId module) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

private:
    ModuleBreakdown breakdown_;
};

// "activation 1.20 GiB, temporary 12.0 MiB": a row's categories, largest first.
QString categoriesText(const std::array<int64_t, kCategoryCount>& bytes, int max = 3);

}  // namespace memscope::gui
