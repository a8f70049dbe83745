#pragma once
// The allocator's segments and blocks at the cursor's moment, laid out by
// address as one wrapped memory map (memory_viz's Allocator State History), so
// fragmentation shows as gaps. The replay is core's allocatorStateAt, run on a
// worker thread; a newer moment cancels an older request.

#include <QFutureWatcher>
#include <QTimer>
#include <QWidget>
#include <atomic>
#include <memory>

#include "memscope/allocator_replay.h"
#include "run.h"

namespace memscope::gui {

class AllocatorView : public QWidget {
    Q_OBJECT
public:
    explicit AllocatorView(QWidget* parent = nullptr);
    ~AllocatorView() override;
    void setSource(RunPtr run, DeviceRef ref);
    // Asks for the state at run x; coalesced, computed off the GUI thread.
    void setTime(int64_t runX);
    void waitForIdle();
    const AllocatorSnapshotAt* snapshot() const { return snapshot_.get(); }
    QString headline() const;
    QSize sizeHint() const override { return {420, 260}; }

signals:
    void snapshotReady();

protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;

private:
    void start();
    struct Layout;
    // Calls f(rect) for each row piece of the byte range [offset, offset + len).
    template <typename F>
    void forEachPiece(const Layout& l, double offset, double len, F&& f) const;
    Layout layout() const;

    RunPtr run_;
    DeviceRef ref_;
    RunPtr started_run_;  // the source of the running replay: a stale result is dropped
    DeviceRef started_ref_;
    int64_t pending_ = 0;
    QTimer debounce_;
    std::shared_ptr<std::atomic<bool>> cancel_;
    QFutureWatcher<std::shared_ptr<AllocatorSnapshotAt>> watcher_;
    std::shared_ptr<AllocatorSnapshotAt> snapshot_;
    QString error_;
};

}  // namespace memscope::gui
