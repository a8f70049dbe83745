#include "stacks/flame_panel.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPushButton>
#include <QScrollArea>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <functional>

#include "common/format.h"

namespace memscope::gui {

namespace {

// A warm colour per frame text, stable across repaints and runs.
QColor frameColor(const std::string& frame) {
    const size_t h = std::hash<std::string>{}(frame);
    const int hue = 5 + int(h % 50);           // red to yellow
    const int sat = 150 + int((h >> 8) % 80);  // 150..229
    const int val = 215 + int((h >> 16) % 40);
    return QColor::fromHsv(hue, sat, val);
}

}  // namespace

FlameGraph::FlameGraph(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Minimum);
}

void FlameGraph::setTree(const LiveStacks* stacks, const FrameTree* tree) {
    stacks_ = stacks;
    tree_ = tree;
    selected_ = hovered_ = -1;
    updateGeometry();
    update();
}

QSize FlameGraph::sizeHint() const {
    const int rows = tree_ ? tree_->max_depth + 1 : 1;
    return {400, rows * kRowHeight + 1};
}

QSize FlameGraph::minimumSizeHint() const {
    return {100, sizeHint().height()};
}

QRectF FlameGraph::nodeRect(int32_t node) const {
    if (!tree_ || node < 0 || size_t(node) >= tree_->nodes.size()) return {};
    const int64_t total = tree_->nodes[0].bytes;
    if (total <= 0) return {};
    const FrameNode& n = tree_->nodes[size_t(node)];
    const double scale = double(width()) / double(total);
    return {double(n.offset) * scale, double(n.depth * kRowHeight), double(n.bytes) * scale,
            double(kRowHeight)};
}

int32_t FlameGraph::nodeAt(QPointF pos) const {
    if (!tree_ || tree_->nodes.empty() || pos.y() < 0) return -1;
    // Down from the root: the child whose span holds x.
    int32_t node = 0;
    const int depth = int(pos.y()) / kRowHeight;
    if (!nodeRect(0).contains(pos.x(), nodeRect(0).center().y())) return -1;
    for (int d = 0; d < depth; ++d) {
        int32_t next = -1;
        for (int32_t c : tree_->nodes[size_t(node)].children) {
            const QRectF r = nodeRect(c);
            if (pos.x() >= r.left() && pos.x() < r.right()) {
                next = c;
                break;
            }
        }
        if (next < 0) return -1;
        node = next;
    }
    return node;
}

QString FlameGraph::nodeText(int32_t node) const {
    if (!tree_ || node < 0 || size_t(node) >= tree_->nodes.size()) return {};
    const FrameNode& n = tree_->nodes[size_t(node)];
    const int64_t total = tree_->nodes[0].bytes;
    const QString name =
        node == 0 ? QStringLiteral("all live memory") : QString::fromStdString(n.frame);
    return QStringLiteral("%1\n%2 in %3 allocation%4 (%5% of live)")
        .arg(name, formatBytes(double(n.bytes)), QString::number(n.count),
             n.count == 1 ? QString() : QStringLiteral("s"),
             QString::number(total > 0 ? 100.0 * double(n.bytes) / double(total) : 0.0, 'f', 1));
}

void FlameGraph::setSelected(int32_t node) {
    selected_ = node;
    update();
}

void FlameGraph::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().color(QPalette::Base));
    if (!tree_ || tree_->nodes.empty() || tree_->nodes[0].bytes <= 0) return;
    const QColor border = palette().color(QPalette::Base);
    const QColor text(Qt::black);
    const QFontMetrics fm(font());
    for (size_t i = 0; i < tree_->nodes.size(); ++i) {
        const QRectF r = nodeRect(int32_t(i));
        if (r.width() < 0.5) continue;  // narrower than a pixel: its parent shows it
        QColor fill = i == 0 ? QColor(200, 200, 200) : frameColor(tree_->nodes[i].frame);
        if (selected_ >= 0 && int32_t(i) != selected_) fill = fill.lighter(125);
        if (int32_t(i) == hovered_) fill = fill.darker(115);
        p.fillRect(r, fill);
        p.setPen(border);
        p.drawRect(r);
        if (int32_t(i) == selected_) {
            p.setPen(QPen(palette().color(QPalette::Highlight), 2));
            p.drawRect(r.adjusted(1, 1, -1, -1));
        }
        if (r.width() > 24) {
            const QString label =
                i == 0
                    ? QStringLiteral("all live: %1").arg(formatBytes(double(tree_->nodes[0].bytes)))
                    : QString::fromStdString(tree_->nodes[i].frame);
            p.setPen(text);
            p.drawText(r.adjusted(3, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                       fm.elidedText(label, Qt::ElideRight, int(r.width()) - 5));
        }
    }
}

void FlameGraph::mouseMoveEvent(QMouseEvent* event) {
    const int32_t n = nodeAt(event->position());
    if (n == hovered_) return;
    hovered_ = n;
    const QString text = nodeText(n);
    setToolTip(text);
    emit hoverChanged(text);
    update();
}

void FlameGraph::mousePressEvent(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton) return;
    const int32_t n = nodeAt(event->position());
    if (n >= 0) emit nodeClicked(n);
}

void FlameGraph::leaveEvent(QEvent*) {
    if (hovered_ < 0) return;
    hovered_ = -1;
    emit hoverChanged(QString());
    update();
}

FlamePanel::FlamePanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* top = new QHBoxLayout;
    head_ = new QLabel(this);
    head_->setWordWrap(true);
    head_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    follow_ = new QCheckBox(QStringLiteral("Follow cursor"), this);
    follow_->setToolTip(QStringLiteral("Show the stacks alive where the cursor rests in the plot"));
    peak_ = new QPushButton(QStringLiteral("Peak"), this);
    clear_ = new QPushButton(QStringLiteral("Clear highlight"), this);
    clear_->setEnabled(false);
    top->addWidget(head_, 1);
    top->addWidget(follow_, 0, Qt::AlignTop);
    top->addWidget(peak_, 0, Qt::AlignTop);
    top->addWidget(clear_, 0, Qt::AlignTop);
    layout->addLayout(top);
    graph_ = new FlameGraph;
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(graph_);
    scroll->setWidgetResizable(true);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    layout->addWidget(scroll, 1);
    hover_ = new QLabel(this);
    hover_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    hover_->setMinimumHeight(2 * fontMetrics().height());
    layout->addWidget(hover_);
    pending_ = new QTimer(this);
    pending_->setSingleShot(true);
    pending_->setInterval(150);
    connect(pending_, &QTimer::timeout, this, [this] { setTime(pendingTime_); });
    connect(graph_, &FlameGraph::hoverChanged, hover_, &QLabel::setText);
    connect(graph_, &FlameGraph::nodeClicked, this, &FlamePanel::activateNode);
    connect(peak_, &QPushButton::clicked, this, [this] {
        follow_->setChecked(false);
        setTime(std::nullopt);
    });
    connect(clear_, &QPushButton::clicked, this, [this] {
        graph_->setSelected(-1);
        clear_->setEnabled(false);
        if (run_) emit allocationsHighlightRequested(run_, ref_, {});
    });
    clear();
}

void FlamePanel::clear() {
    run_.reset();
    time_.reset();
    stacks_ = {};
    tree_ = {};
    graph_->setTree(nullptr, nullptr);
    head_->setText(QStringLiteral("Open a run: the stacks alive at its peak."));
    hover_->clear();
    clear_->setEnabled(false);
}

void FlamePanel::setSource(RunPtr run, DeviceRef ref) {
    if (!run || !run->timeline(ref)) return clear();
    if (run == run_ && ref == ref_) return;
    run_ = std::move(run);
    ref_ = ref;
    time_.reset();
    rebuild();
}

void FlamePanel::setTime(std::optional<int64_t> runX) {
    time_ = runX;
    if (run_) rebuild();
}

void FlamePanel::setFollowCursor(bool on) {
    follow_->setChecked(on);
}

bool FlamePanel::followsCursor() const {
    return follow_->isChecked();
}

void FlamePanel::cursorMovedTo(RunPtr run, DeviceRef ref, int64_t runX) {
    if (!followsCursor() || run != run_ || !(ref == ref_)) return;
    pendingTime_ = runX;
    pending_->start();
}

void FlamePanel::rebuild() {
    const DeviceTimeline* tl = run_->timeline(ref_);
    const Trace* trace = run_->trace(ref_);
    const auto& part = run_->parts[size_t(ref_.part)];
    graph_->setTree(nullptr, nullptr);
    clear_->setEnabled(false);
    hover_->clear();
    std::optional<int64_t> at = time_;
    if (at) at = std::clamp(*at, tl->start, tl->end);
    auto s = liveStacks(*trace, *part.timeline, tl->device, at);
    if (!s.ok()) {
        stacks_ = {};
        tree_ = {};
        head_->setText(QString::fromStdString(s.message()));
        return;
    }
    stacks_ = std::move(*s);
    tree_ = frameTree(stacks_);
    head_->setText(
        QStringLiteral("%1 %2 (%3): %4 live in %5 stacks")
            .arg(run_->deviceLabel(ref_),
                 stacks_.at_peak ? QStringLiteral("at the peak") : QStringLiteral("at the cursor"),
                 formatRunTime(*trace, *tl, stacks_.time), formatBytes(double(stacks_.live_bytes)),
                 QString::number(stacks_.stacks.size())));
    graph_->setTree(&stacks_, &tree_);
}

QString FlamePanel::headline() const {
    return head_->text();
}

void FlamePanel::activateNode(int32_t node) {
    if (!run_ || node < 0 || size_t(node) >= tree_.nodes.size()) return;
    graph_->setSelected(node);
    clear_->setEnabled(true);
    emit allocationsHighlightRequested(run_, ref_, intervalsOfNode(stacks_, tree_, node));
}

}  // namespace memscope::gui
