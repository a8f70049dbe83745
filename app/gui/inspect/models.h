#pragma once
// Item models of the inspector and the search panel. Each only resets its data
// from values core computed (heaptrack's resetData pattern).

#include <QAbstractTableModel>
#include <vector>

#include "loading/run.h"

namespace memscope::gui {

// The frames of one stack, innermost first; noise frames hidden unless asked.
class StackFrameModel : public QAbstractListModel {
    Q_OBJECT
public:
    explicit StackFrameModel(QObject* parent = nullptr);
    void setStack(std::shared_ptr<const Trace> trace, StackId stack);
    void setShowNoise(bool show);
    bool showNoise() const { return showNoise_; }
    int hiddenCount() const { return hidden_; }

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

private:
    void refill();
    std::shared_ptr<const Trace> trace_;
    StackId stack_;
    bool showNoise_ = false;
    int hidden_ = 0;
    std::vector<FrameId> frames_;
};

// A list of allocations of one device timeline: search results, neighbours.
class AllocationListModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Address, Size, Category, Alloc, Free, Frame, ColumnCount };
    static constexpr int IntervalRole = Qt::UserRole + 1;  // the interval index

    explicit AllocationListModel(QObject* parent = nullptr);
    void setAllocations(RunPtr run, DeviceRef ref, std::vector<uint32_t> intervals);
    uint32_t intervalAt(int row) const { return intervals_[size_t(row)]; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

private:
    RunPtr run_;
    DeviceRef ref_;
    std::vector<uint32_t> intervals_;
};

}  // namespace memscope::gui
