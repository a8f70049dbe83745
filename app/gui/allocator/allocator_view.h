#pragma once
// The allocator's segments and blocks at the cursor's moment, laid out by
// address as one wrapped memory map (memory_viz's Allocator State History), so
// fragmentation shows as gaps. With more segments than the map can show apart
// (12,000 of them), each row aggregates a group of segments (core's
// segment_map.h): a click zooms into a row, another click zooms back out, and
// the search field finds the segment and block holding an address. The replay
// is core's allocatorStateAt, run on a worker thread; a newer moment cancels
// an older request.

#include <QFutureWatcher>
#include <QTimer>
#include <QWidget>
#include <atomic>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "loading/run.h"
#include "memscope/timeline/allocator_replay.h"
#include "memscope/timeline/segment_map.h"

class QLineEdit;

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

    // Whether rows aggregate groups of segments (too many to show apart).
    bool aggregated() const;
    // The aggregated row zoomed into, -1 for all of them.
    int zoomedRow() const { return zoomRow_; }
    void zoomToRow(int row);  // -1: back to all rows
    // Finds "0x7f00..." (hex, 0x optional): zooms to its row and marks it.
    // False when the text is no address or no segment holds it.
    bool searchAddress(const QString& text);

signals:
    void snapshotReady();

protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    void start();
    struct Layout;
    // Calls f(rect) for each row piece of the byte range [offset, offset + len).
    template <typename F>
    void forEachPiece(const Layout& l, double offset, double len, F&& f) const;
    Layout layout() const;
    // The segments the wrapped map shows: all, or those of the zoomed row.
    std::pair<size_t, size_t> shownSegments() const;
    int mapRows() const;  // rows of kRowHeight that fit
    std::vector<SegmentMapRow> aggregateRows() const;
    void paintAggregated(QPainter& p, const QRectF& area);

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
    QLineEdit* search_ = nullptr;
    int zoomRow_ = -1;
    std::optional<uint64_t> marked_;  // the address searched for
    QString searchNote_;              // what the last search found
};

}  // namespace memscope::gui
