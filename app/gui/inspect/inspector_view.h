#pragma once
// The pinned allocation: its figures and lifetime, its whole stack (noise
// frames hidden unless asked) and its address neighbours when it was allocated.

#include <QWidget>

#include "loading/run.h"

class QCheckBox;
class QLabel;
class QListView;
class QTableView;

namespace memscope::gui {

class AllocationListModel;
class StackFrameModel;

class InspectorView : public QWidget {
    Q_OBJECT
public:
    explicit InspectorView(QWidget* parent = nullptr);
    void setAllocation(RunPtr run, DeviceRef ref, uint32_t interval);
    void clear();
    QString summaryText() const;
    StackFrameModel* stackModel() const { return stack_; }
    AllocationListModel* neighbourModel() const { return neighbours_; }

signals:
    void neighbourActivated(uint32_t interval);

private:
    void updateNoiseLabel();
    QLabel* summary_ = nullptr;
    QCheckBox* noise_ = nullptr;
    StackFrameModel* stack_ = nullptr;
    AllocationListModel* neighbours_ = nullptr;
    QListView* stackView_ = nullptr;
    QTableView* neighbourView_ = nullptr;
};

}  // namespace memscope::gui
