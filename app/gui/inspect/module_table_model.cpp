#include "inspect/module_table_model.h"

#include <QStringList>
#include <algorithm>
#include <numeric>

#include "common/category_colors.h"
#include "common/format.h"
#include "common/module_text.h"

namespace memscope::gui {

QString categoriesText(const std::array<int64_t, kCategoryCount>& bytes, int max) {
    std::array<int, kCategoryCount> order{};
    std::iota(order.begin(), order.end(), 0);
    // Largest change first, by magnitude: deltas can be negative.
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return std::llabs(bytes[size_t(a)]) > std::llabs(bytes[size_t(b)]);
    });
    QStringList parts;
    for (int c : order) {
        if (bytes[size_t(c)] == 0 || parts.size() >= max) continue;
        parts << QStringLiteral("%1 %2").arg(categoryLabel(kAllCategories[size_t(c)]),
                                             formatBytes(double(bytes[size_t(c)])));
    }
    return parts.join(QStringLiteral(", "));
}

ModuleTableModel::ModuleTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void ModuleTableModel::setBreakdown(ModuleBreakdown breakdown) {
    beginResetModel();
    breakdown_ = std::move(breakdown);
    endResetModel();
}

int ModuleTableModel::rowOf(ModuleId module) const {
    for (size_t i = 0; i < breakdown_.rows.size(); ++i)
        if (breakdown_.rows[i].module == module) return int(i);
    return -1;
}

int ModuleTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(breakdown_.rows.size());
}

int ModuleTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant ModuleTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case Module:
            return QStringLiteral("Module") + moduleSourceSuffix(breakdown_.source);
        case Bytes:
            return QStringLiteral("Bytes");
        case Share:
            return QStringLiteral("Share");
        case Categories:
            return QStringLiteral("Categories inside");
        case Recomputed:
            return QStringLiteral("Recomputed");
        case Count:
            return QStringLiteral("Allocations");
        default:
            return {};
    }
}

QVariant ModuleTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || size_t(index.row()) >= breakdown_.rows.size()) return {};
    const ModuleBytes& r = breakdown_.rows[size_t(index.row())];
    if (role == ModuleRole) return r.module.value;
    if (role == RawRole) {
        switch (index.column()) {
            case Bytes:
                return qint64(r.bytes);
            case Recomputed:
                return qint64(r.recomputed_bytes);
            case Count:
                return r.count;
            case Share:
                return breakdown_.total > 0 ? double(r.bytes) / double(breakdown_.total) : 0.0;
            default:
                return {};
        }
    }
    if (role == Qt::TextAlignmentRole)
        return index.column() == Module || index.column() == Categories
                   ? QVariant()
                   : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
    switch (index.column()) {
        case Module:
            return toQString(r.path);
        case Bytes:
            return formatBytes(double(r.bytes));
        case Share:
            return breakdown_.total > 0
                       ? QStringLiteral("%1%").arg(
                             100.0 * double(r.bytes) / double(breakdown_.total), 0, 'f', 1)
                       : QString();
        case Categories:
            return categoriesText(r.by_category);
        case Recomputed:
            return r.recomputed_bytes ? formatBytes(double(r.recomputed_bytes)) : QString();
        case Count:
            return r.count;
        default:
            return {};
    }
}

}  // namespace memscope::gui
