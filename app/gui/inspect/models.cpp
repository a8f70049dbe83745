#include "inspect/models.h"

#include <QFont>

#include "common/category_colors.h"
#include "common/format.h"

namespace memscope::gui {

StackFrameModel::StackFrameModel(QObject* parent) : QAbstractListModel(parent) {}

void StackFrameModel::setStack(std::shared_ptr<const Trace> trace, StackId stack) {
    beginResetModel();
    trace_ = std::move(trace);
    stack_ = stack;
    refill();
    endResetModel();
}

void StackFrameModel::setShowNoise(bool show) {
    if (show == showNoise_) return;
    beginResetModel();
    showNoise_ = show;
    refill();
    endResetModel();
}

void StackFrameModel::refill() {
    frames_.clear();
    hidden_ = 0;
    if (!trace_ || stack_.isNull() || stack_.value >= trace_->stackCount()) return;
    for (FrameId f : trace_->stack(stack_)) {
        if (!showNoise_ && isNoiseFrame(*trace_, f)) {
            ++hidden_;
            continue;
        }
        frames_.push_back(f);
    }
}

int StackFrameModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(frames_.size());
}

QVariant StackFrameModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= int(frames_.size()) || !trace_) return {};
    const FrameId f = frames_[size_t(index.row())];
    if (role == Qt::DisplayRole || role == Qt::ToolTipRole)
        return toQString(memscope::frameText(*trace_, f));
    if (role == Qt::ForegroundRole && isNoiseFrame(*trace_, f)) return QColor(Qt::gray);
    return {};
}

AllocationListModel::AllocationListModel(QObject* parent) : QAbstractTableModel(parent) {}

void AllocationListModel::setAllocations(RunPtr run, DeviceRef ref,
                                         std::vector<uint32_t> intervals) {
    beginResetModel();
    run_ = std::move(run);
    ref_ = ref;
    intervals_ = std::move(intervals);
    const DeviceTimeline* tl = run_ ? run_->timeline(ref_) : nullptr;
    if (!tl) intervals_.clear();
    std::erase_if(intervals_, [&](uint32_t i) { return i >= tl->intervals.size(); });
    endResetModel();
}

int AllocationListModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(intervals_.size());
}

int AllocationListModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant AllocationListModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case Address:
            return QStringLiteral("Address");
        case Size:
            return QStringLiteral("Size");
        case Category:
            return QStringLiteral("Category");
        case Alloc:
            return QStringLiteral("Allocated");
        case Free:
            return QStringLiteral("Freed");
        case Frame:
            return QStringLiteral("Site");
        default:
            return {};
    }
}

QVariant AllocationListModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= int(intervals_.size()) || index.column() >= ColumnCount)
        return {};
    const DeviceTimeline* tl = run_->timeline(ref_);
    const Trace* trace = run_->trace(ref_);
    const uint32_t i = intervals_[size_t(index.row())];
    const AllocationInterval& a = tl->intervals[i];
    if (role == IntervalRole) return QVariant::fromValue(i);
    if (role == Qt::TextAlignmentRole)
        return index.column() == Size ? QVariant(int(Qt::AlignRight | Qt::AlignVCenter))
                                      : QVariant();
    if (role == Qt::DecorationRole && index.column() == Category) return categoryColor(a.category);
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
    switch (index.column()) {
        case Address:
            return formatAddress(a.address);
        case Size:
            return formatBytes(double(a.size));
        case Category:
            return categoryLabel(a.category);
        case Alloc:
            return a.alloc_event == kNoEvent ? QStringLiteral("before recording")
                                             : formatRunTime(*trace, *tl, a.start);
        case Free:
            return a.free_event == kNoEvent ? QStringLiteral("never")
                                            : formatRunTime(*trace, *tl, a.end);
        case Frame:
            return toQString(siteLabel(*trace, a.stack));  // the user's frame first
        default:
            return {};
    }
}

}  // namespace memscope::gui
