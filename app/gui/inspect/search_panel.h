#pragma once
// Search allocations of the current run's device by address or stack text; the
// query runs on a worker thread and a newer query cancels an older one.

#include <QFutureWatcher>
#include <QWidget>
#include <atomic>
#include <memory>

#include "loading/run.h"
#include "memscope/view/allocation_search.h"

class QLabel;
class QLineEdit;
class QTableView;

namespace memscope::gui {

class AllocationListModel;

class SearchPanel : public QWidget {
    Q_OBJECT
public:
    explicit SearchPanel(QWidget* parent = nullptr);
    ~SearchPanel() override;
    void setSource(RunPtr run, DeviceRef ref);
    void search(const QString& query);
    void focusQuery();
    AllocationListModel* model() const { return model_; }
    void waitForIdle();

signals:
    void allocationChosen(uint32_t interval);
    void searchFinished(int shown, int total);

private:
    QLineEdit* query_ = nullptr;
    QLabel* status_ = nullptr;
    QTableView* view_ = nullptr;
    AllocationListModel* model_ = nullptr;
    RunPtr run_;
    DeviceRef ref_;
    // What the running search was started on: its interval indexes mean
    // nothing for another run, so a result for a stale source is dropped.
    RunPtr searched_run_;
    DeviceRef searched_ref_;
    std::shared_ptr<std::atomic<bool>> cancel_;
    QFutureWatcher<SearchResult> watcher_;
};

}  // namespace memscope::gui
