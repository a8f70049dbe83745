#pragma once
// The "stacks alive" dock: an icicle of core's liveStacks at the device's
// peak (or at the cursor, when asked to follow it), its tree core's
// frameTree: the root at the top, each frame's callees under it, widths in
// proportion to bytes. Hover names a frame and its bytes; a click asks for
// that frame's live allocations to be highlighted in the plot.

#include <QWidget>
#include <optional>
#include <vector>

#include "loading/run.h"
#include "memscope/analysis/live_stacks.h"

class QCheckBox;
class QLabel;
class QPushButton;
class QTimer;

namespace memscope::gui {

// The icicle itself: paints a FrameTree, one row per depth.
class FlameGraph : public QWidget {
    Q_OBJECT
public:
    static constexpr int kRowHeight = 18;
    explicit FlameGraph(QWidget* parent = nullptr);
    void setTree(const LiveStacks* stacks, const FrameTree* tree);
    // A node's rectangle in widget pixels (fractional); empty when not drawn.
    QRectF nodeRect(int32_t node) const;
    // The node under a pixel, -1 when none.
    int32_t nodeAt(QPointF pos) const;
    // "forward  (model.py:12)\n1.50 MiB in 2 allocations (26% of live)"
    QString nodeText(int32_t node) const;
    void setSelected(int32_t node);
    int32_t selected() const { return selected_; }
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

signals:
    void nodeClicked(int32_t node);
    void hoverChanged(const QString& text);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;

private:
    const LiveStacks* stacks_ = nullptr;
    const FrameTree* tree_ = nullptr;
    int32_t selected_ = -1;
    int32_t hovered_ = -1;
};

class FlamePanel : public QWidget {
    Q_OBJECT
public:
    explicit FlamePanel(QWidget* parent = nullptr);
    // The device's stacks at its peak.
    void setSource(RunPtr run, DeviceRef ref);
    // The stacks at `runX` (Event::time units) when following the cursor;
    // nullopt: at the peak.
    void setTime(std::optional<int64_t> runX);
    // Whether cursor moves (followCursor) change the moment shown.
    void setFollowCursor(bool on);
    bool followsCursor() const;
    // The run view's cursor moved: shown after a short pause when following.
    void cursorMovedTo(RunPtr run, DeviceRef ref, int64_t runX);
    void clear();

    QString headline() const;
    FlameGraph* graph() const { return graph_; }
    const LiveStacks& stacks() const { return stacks_; }
    const FrameTree& tree() const { return tree_; }
    const RunPtr& run() const { return run_; }
    DeviceRef device() const { return ref_; }
    // What a click on a node does (tests).
    void activateNode(int32_t node);

signals:
    // A frame was clicked: its live allocations (DeviceTimeline::intervals);
    // empty to clear.
    void allocationsHighlightRequested(memscope::gui::RunPtr run, memscope::gui::DeviceRef ref,
                                       std::vector<uint32_t> intervals);

private:
    void rebuild();

    QLabel* head_ = nullptr;
    QLabel* hover_ = nullptr;
    QCheckBox* follow_ = nullptr;
    QPushButton* peak_ = nullptr;
    QPushButton* clear_ = nullptr;
    FlameGraph* graph_ = nullptr;
    QTimer* pending_ = nullptr;
    RunPtr run_;
    DeviceRef ref_;
    std::optional<int64_t> time_;
    std::optional<int64_t> pendingTime_;
    LiveStacks stacks_;
    FrameTree tree_;
};

}  // namespace memscope::gui
