#include "allocator/allocator_view.h"

#include <QLineEdit>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cmath>

#include "common/category_colors.h"
#include "common/format.h"

namespace memscope::gui {

namespace {
constexpr int kHeader = 40;  // px of text above the map
constexpr int kRowHeight = 14;
constexpr double kSegmentGap = 2;  // px between segments, in row space
// Below this many px per segment on average, segments are not told apart:
// rows aggregate groups of them.
constexpr double kMinSegmentPx = 6;
constexpr int kSearchWidth = 220;

QColor mix(const QColor& a, const QColor& b, double t) {
    t = std::clamp(t, 0.0, 1.0);
    return QColor::fromRgbF(float(a.redF() * (1 - t) + b.redF() * t),
                            float(a.greenF() * (1 - t) + b.greenF() * t),
                            float(a.blueF() * (1 - t) + b.blueF() * t));
}
}  // namespace

struct AllocatorView::Layout {
    QRectF area;
    double bytesPerPx = 1;
    double gapBytes = 0;  // a segment gap expressed in bytes
    int rows = 1;
};

AllocatorView::AllocatorView(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    search_ = new QLineEdit(this);
    search_->setPlaceholderText(QStringLiteral("find address (0x…)"));
    search_->setClearButtonEnabled(true);
    connect(search_, &QLineEdit::returnPressed, this, [this] { searchAddress(search_->text()); });
    setMinimumHeight(120);
    debounce_.setSingleShot(true);
    debounce_.setInterval(40);
    connect(&debounce_, &QTimer::timeout, this, &AllocatorView::start);
    connect(&watcher_, &QFutureWatcher<std::shared_ptr<AllocatorSnapshotAt>>::finished, this,
            [this] {
                auto r = watcher_.result();
                if (!r) return;  // cancelled or failed: keep the last picture
                if (started_run_ != run_ || !(started_ref_ == ref_)) return;
                snapshot_ = std::move(r);
                update();
                emit snapshotReady();
            });
}

AllocatorView::~AllocatorView() {
    if (cancel_) cancel_->store(true);
    watcher_.waitForFinished();
}

void AllocatorView::setSource(RunPtr run, DeviceRef ref) {
    if (run == run_ && ref == ref_) return;
    if (cancel_) cancel_->store(true);
    run_ = std::move(run);
    ref_ = ref;
    snapshot_.reset();
    zoomRow_ = -1;
    marked_.reset();
    searchNote_.clear();
    if (const DeviceTimeline* tl = run_ ? run_->timeline(ref_) : nullptr) setTime(tl->end);
    update();
}

void AllocatorView::setTime(int64_t runX) {
    pending_ = runX;
    debounce_.start();
}

void AllocatorView::waitForIdle() {
    if (debounce_.isActive()) {
        debounce_.stop();
        start();
    }
    watcher_.waitForFinished();
    // Deliver the finished signal now rather than on the next event-loop pass.
    if (watcher_.isFinished() && watcher_.future().isValid() &&
        watcher_.future().resultCount() > 0) {
        auto r = watcher_.result();
        if (r && r != snapshot_) {
            snapshot_ = std::move(r);
            update();
        }
    }
}

void AllocatorView::start() {
    const DeviceTimeline* tl = run_ ? run_->timeline(ref_) : nullptr;
    const Trace* trace = run_ ? run_->trace(ref_) : nullptr;
    if (!tl || !trace) return;
    if (cancel_) cancel_->store(true);
    cancel_ = std::make_shared<std::atomic<bool>>(false);
    started_run_ = run_;
    started_ref_ = ref_;
    watcher_.setFuture(QtConcurrent::run([run = run_, tl, trace, t = pending_, cancel = cancel_] {
        TaskContext ctx;
        ctx.cancel = cancel.get();
        auto r = allocatorStateAt(*trace, *tl, t, ctx);
        return r.ok() ? std::make_shared<AllocatorSnapshotAt>(std::move(*r))
                      : std::shared_ptr<AllocatorSnapshotAt>();
    }));
}

QString AllocatorView::headline() const {
    if (!snapshot_) return QStringLiteral("Allocator state: move the cursor over a timeline.");
    const AllocatorSnapshotAt& s = *snapshot_;
    // CPU memory is not pooled in segments: say so instead of an empty map.
    const DeviceTimeline* tl = run_ ? run_->timeline(ref_) : nullptr;
    if (s.segments.empty() && tl && tl->device < 0) {
        int64_t live = 0;
        for (const ReplayBlock& b : s.loose_blocks) live += int64_t(b.size);
        return QStringLiteral(
                   "host memory: no allocator segments (CPU tensors come from the system "
                   "allocator); %1 live allocations, %2, packed below by category")
            .arg(s.loose_blocks.size())
            .arg(formatBytes(double(live)));
    }
    const double frag =
        s.reserved_bytes > 0
            ? 100.0 * double(s.reserved_bytes - std::min(s.reserved_bytes, s.active_bytes)) /
                  double(s.reserved_bytes)
            : 0.0;
    QString t =
        QStringLiteral("%1 segments, reserved %2, active %3, inactive %4%, largest free gap %5")
            .arg(s.segments.size())
            .arg(formatBytes(double(s.reserved_bytes)), formatBytes(double(s.active_bytes)))
            .arg(frag, 0, 'f', 1)
            .arg(formatBytes(double(s.largest_free_gap)));
    if (!s.loose_blocks.empty())
        t += QStringLiteral(", %1 blocks outside known segments").arg(s.loose_blocks.size());
    return t;
}

int AllocatorView::mapRows() const {
    return std::max(1, (height() - kHeader - 4) / kRowHeight);
}

bool AllocatorView::aggregated() const {
    if (!snapshot_) return false;
    const double px = double(std::max(10, width() - 8)) * mapRows();
    return double(snapshot_->segments.size()) * kMinSegmentPx > px;
}

std::pair<size_t, size_t> AllocatorView::shownSegments() const {
    const size_t n = snapshot_ ? snapshot_->segments.size() : 0;
    if (zoomRow_ < 0 || !snapshot_) return {0, n};
    const std::vector<SegmentMapRow> rows = segmentMapRows(*snapshot_, size_t(mapRows()), 1);
    if (size_t(zoomRow_) >= rows.size()) return {0, n};
    return {rows[size_t(zoomRow_)].first, rows[size_t(zoomRow_)].last};
}

std::vector<SegmentMapRow> AllocatorView::aggregateRows() const {
    if (!snapshot_) return {};
    return segmentMapRows(*snapshot_, size_t(mapRows()), size_t(std::max(10, width() - 8)));
}

void AllocatorView::zoomToRow(int row) {
    zoomRow_ = row;
    update();
}

bool AllocatorView::searchAddress(const QString& text) {
    QString t = text.trimmed();
    if (t.startsWith(QStringLiteral("0x"), Qt::CaseInsensitive)) t = t.mid(2);
    bool ok = false;
    const uint64_t address = t.toULongLong(&ok, 16);
    marked_.reset();
    if (!ok || !snapshot_) {
        searchNote_ = QStringLiteral("not an address: %1").arg(text);
        update();
        return false;
    }
    const auto hit = findAddress(*snapshot_, address, size_t(mapRows()));
    if (!hit) {
        searchNote_ = QStringLiteral("%1 is in no segment").arg(formatAddress(address));
        update();
        return false;
    }
    marked_ = address;
    const ReplaySegment& seg = snapshot_->segments[hit->segment];
    searchNote_ =
        QStringLiteral("%1: segment %2 (%3)")
            .arg(formatAddress(address), formatAddress(seg.address), formatBytes(double(seg.size)));
    if (hit->block) {
        const ReplayBlock& b = seg.blocks[*hit->block];
        searchNote_ += QStringLiteral(", block %1 (%2, %3)")
                           .arg(formatAddress(b.address), formatBytes(double(b.size)),
                                categoryLabel(b.category));
    } else {
        searchNote_ += QStringLiteral(", in no block (inactive)");
    }
    zoomRow_ = aggregated() ? int(hit->row) : -1;
    update();
    return true;
}

AllocatorView::Layout AllocatorView::layout() const {
    Layout l;
    l.area =
        QRectF(4, kHeader, std::max(10, width() - 8), std::max(kRowHeight, height() - kHeader - 4));
    l.rows = std::max(1, int(l.area.height()) / kRowHeight);
    if (!snapshot_) return l;
    const auto [first, last] = shownSegments();
    double total = 0;
    for (size_t k = first; k < last; ++k) total += double(snapshot_->segments[k].size);
    size_t pieces = last - first;
    if (zoomRow_ < 0) {
        for (const ReplayBlock& b : snapshot_->loose_blocks) total += double(b.size);
        pieces += snapshot_->loose_blocks.size();
    }
    // Bytes per pixel such that the map, gaps included, fills the rows.
    const double px = l.area.width() * l.rows - kSegmentGap * double(pieces);
    l.bytesPerPx = std::max(1.0, total / std::max(1.0, px));
    l.gapBytes = kSegmentGap * l.bytesPerPx;
    return l;
}

template <typename F>
void AllocatorView::forEachPiece(const Layout& l, double offset, double len, F&& f) const {
    const double rowBytes = l.area.width() * l.bytesPerPx;
    double pos = offset;
    const double end = offset + len;
    // The row advances as an integer: recomputing it from pos / rowBytes can
    // round back onto the row just finished and never move on.
    for (int row = std::max(0, int(pos / rowBytes)); row < l.rows && pos < end; ++row) {
        const double rowStart = double(row) * rowBytes;
        const double stop = std::min(end, double(row + 1) * rowBytes);
        if (stop <= pos) continue;
        const double x0 = l.area.left() + std::max(0.0, pos - rowStart) / l.bytesPerPx;
        const double w = std::max(1.0, (stop - pos) / l.bytesPerPx);
        f(QRectF(x0, l.area.top() + row * kRowHeight, w, kRowHeight - 2));
        pos = stop;
    }
}

void AllocatorView::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QPalette pal = palette();
    p.fillRect(rect(), pal.color(QPalette::Window));
    p.setPen(pal.color(QPalette::WindowText));
    QString head = headline();
    if (snapshot_ && run_) {
        const Trace* trace = run_->trace(ref_);
        const DeviceTimeline* tl = run_->timeline(ref_);
        if (trace && tl)
            head =
                QStringLiteral("At %1 (%2): ")
                    .arg(formatRunTime(*trace, *tl, snapshot_->time),
                         snapshot_->backwards ? QStringLiteral("replayed back from the end state")
                                              : QStringLiteral("replayed from the start")) +
                head;
        if (!snapshot_->note.empty()) head += QStringLiteral("\n") + toQString(snapshot_->note);
    }
    const bool many = aggregated();
    if (many && zoomRow_ < 0)
        head += QStringLiteral("\nEach row: a group of segments. Click a row to zoom in.");
    else if (many)
        head += QStringLiteral("\nOne group of segments. Click to see all rows.");
    if (!searchNote_.isEmpty()) head += QStringLiteral("   ") + searchNote_;
    p.drawText(QRect(4, 2, width() - 16 - kSearchWidth, kHeader - 4),
               Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, head);
    if (!snapshot_) return;
    const Layout l = layout();
    const QColor segColor =
        isDarkPalette(pal) ? QColor(0x3a, 0x3a, 0x40) : QColor(0xe4, 0xe4, 0xea);
    if (many && zoomRow_ < 0) {
        paintAggregated(p, l.area);
        return;
    }
    const auto [first, last] = shownSegments();
    double offset = 0;
    std::optional<QRectF> mark;
    for (size_t k = first; k < last; ++k) {
        const ReplaySegment& s = snapshot_->segments[k];
        forEachPiece(l, offset, double(s.size), [&](const QRectF& r) { p.fillRect(r, segColor); });
        for (const ReplayBlock& b : s.blocks) {
            QColor c = categoryColor(b.category);
            if (b.state == BlockState::ActivePendingFree) c = c.lighter(140);
            forEachPiece(l, offset + double(b.address - s.address), double(b.size),
                         [&](const QRectF& r) { p.fillRect(r, c); });
        }
        if (marked_ && *marked_ >= s.address && *marked_ - s.address < s.size)
            forEachPiece(l, offset + double(*marked_ - s.address), 1.0,
                         [&](const QRectF& r) { mark = r; });
        offset += double(s.size) + l.gapBytes;
    }
    if (zoomRow_ < 0)
        for (const ReplayBlock& b : snapshot_->loose_blocks) {
            forEachPiece(l, offset, double(b.size),
                         [&](const QRectF& r) { p.fillRect(r, categoryColor(b.category)); });
            offset += double(b.size) + l.gapBytes;
        }
    if (mark) {
        // The searched address: a highlight-coloured marker over its row.
        p.setPen(QPen(pal.color(QPalette::Highlight), 2));
        p.drawRect(mark->adjusted(-3, -2, 3, 2));
    }
}

void AllocatorView::paintAggregated(QPainter& p, const QRectF& area) {
    const QPalette pal = palette();
    const QColor segColor =
        isDarkPalette(pal) ? QColor(0x3a, 0x3a, 0x40) : QColor(0xe4, 0xe4, 0xea);
    const std::vector<SegmentMapRow> rows = aggregateRows();
    for (size_t r = 0; r < rows.size(); ++r) {
        const double y = area.top() + double(r) * kRowHeight;
        for (size_t c = 0; c < rows[r].cells.size(); ++c) {
            const SegmentMapCell& cell = rows[r].cells[c];
            if (cell.bytes == 0) continue;
            // Fuller cells take more of the category's colour; pending-free
            // bytes count half.
            const double full =
                (double(cell.active) + 0.5 * double(cell.pending)) / double(cell.bytes);
            p.fillRect(QRectF(area.left() + double(c), y, 1, kRowHeight - 2),
                       mix(segColor, categoryColor(cell.dominant), full));
        }
    }
}

void AllocatorView::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    search_->setGeometry(width() - kSearchWidth - 4, 2, kSearchWidth, 24);
}

void AllocatorView::mouseReleaseEvent(QMouseEvent* event) {
    if (!snapshot_ || event->button() != Qt::LeftButton || !aggregated()) return;
    if (zoomRow_ >= 0) {
        zoomToRow(-1);
        return;
    }
    const int row = int((event->position().y() - kHeader) / kRowHeight);
    if (event->position().y() >= kHeader && row >= 0 && size_t(row) < aggregateRows().size())
        zoomToRow(row);
}

void AllocatorView::mouseMoveEvent(QMouseEvent* event) {
    if (!snapshot_) return;
    const Layout l = layout();
    const QPointF pos = event->position();
    const int row = int((pos.y() - l.area.top()) / kRowHeight);
    if (pos.y() < l.area.top() || row >= l.rows) return;
    if (aggregated() && zoomRow_ < 0) {
        const std::vector<SegmentMapRow> rows = segmentMapRows(*snapshot_, size_t(mapRows()), 1);
        if (size_t(row) >= rows.size()) return;
        const SegmentMapRow& r = rows[size_t(row)];
        QToolTip::showText(
            event->globalPosition().toPoint(),
            QStringLiteral("segments %1–%2: %3 – %4\nreserved %5, active %6\nclick to zoom in")
                .arg(r.first + 1)
                .arg(r.last)
                .arg(formatAddress(r.address_lo), formatAddress(r.address_hi),
                     formatBytes(double(r.bytes)), formatBytes(double(r.active))),
            this);
        return;
    }
    const double at =
        double(row) * l.area.width() * l.bytesPerPx + (pos.x() - l.area.left()) * l.bytesPerPx;
    double offset = 0;
    const auto [first, last] = shownSegments();
    for (size_t k = first; k < last; ++k) {
        const ReplaySegment& s = snapshot_->segments[k];
        if (at >= offset && at < offset + double(s.size)) {
            const uint64_t addr = s.address + uint64_t(at - offset);
            QString text = QStringLiteral("segment %1, %2")
                               .arg(formatAddress(s.address), formatBytes(double(s.size)));
            for (const ReplayBlock& b : s.blocks)
                if (addr >= b.address && addr < b.address + b.size)
                    text += QStringLiteral("\nblock %1, %2, %3")
                                .arg(formatAddress(b.address), formatBytes(double(b.size)),
                                     categoryLabel(b.category));
            QToolTip::showText(event->globalPosition().toPoint(), text, this);
            return;
        }
        offset += double(s.size) + l.gapBytes;
    }
    QToolTip::hideText();
}

}  // namespace memscope::gui
