#include "run_view/phase_bands.h"

#include <QFontMetricsF>
#include <QImage>
#include <algorithm>
#include <cmath>
#include <map>

#include "common/format.h"
#include "memscope/base/units.h"

namespace memscope::gui {

namespace {

int rowOf(PhaseKind k) {
    switch (k) {
        case PhaseKind::Step:
            return 0;
        case PhaseKind::Forward:
        case PhaseKind::Backward:
        case PhaseKind::Optimizer:
            return 1;
        case PhaseKind::Block:
        case PhaseKind::Recompute:
            return 2;
        case PhaseKind::Range:
            return 3;
    }
    return 3;
}

QColor colorOf(const Phase& p) {
    switch (p.kind) {
        case PhaseKind::Step:
            return (p.step % 2 == 0) ? QColor(0x8c, 0x8c, 0x9c) : QColor(0x6c, 0x6c, 0x7c);
        case PhaseKind::Forward:
            return QColor(0x4e, 0x79, 0xa7);
        case PhaseKind::Backward:
            return QColor(0xf2, 0x8e, 0x2b);
        case PhaseKind::Optimizer:
            return QColor(0x59, 0xa1, 0x4f);
        case PhaseKind::Block:
            return (p.block % 2 == 0) ? QColor(0x9d, 0x7e, 0xc9) : QColor(0x7a, 0x5c, 0xa8);
        case PhaseKind::Recompute:
            return QColor(0xe1, 0x57, 0x59);
        case PhaseKind::Range:
            return QColor(0x4a, 0xa8, 0xa0);
    }
    return Qt::gray;
}

// Phases memscope inferred are drawn paler than recorded ones (and named so).
QRgb shadeOf(const Phase& p) {
    const QColor c = colorOf(p);
    return (p.inferred ? c.lighter(130) : c).rgba();
}

// Labels by (string, inferred), converted to QString once each.
class LabelInterner {
public:
    LabelInterner(const Trace& trace, std::vector<QString>& names)
        : trace_(trace), names_(names), index_(2 * trace.strings.size(), kUnset) {}

    uint32_t operator()(StringId id, bool inferred) {
        const size_t key = 2 * size_t(id.value) + (inferred ? 1 : 0);
        if (key >= index_.size()) return add(id, inferred);  // not in the table: no reuse
        if (index_[key] == kUnset) index_[key] = add(id, inferred);
        return index_[key];
    }

private:
    static constexpr uint32_t kUnset = UINT32_MAX;
    uint32_t add(StringId id, bool inferred) {
        QString name = toQString(trace_.string(id));
        if (inferred) name += QStringLiteral(" (inferred)");
        names_.push_back(std::move(name));
        return uint32_t(names_.size() - 1);
    }
    const Trace& trace_;
    std::vector<QString>& names_;
    std::vector<uint32_t> index_;
};

}  // namespace

PhaseBandData buildPhaseBands(const Trace& trace, int16_t device) {
    PhaseBandData d;
    LabelInterner label(trace, d.names);
    std::vector<PhaseBandItem> items;  // in the trace's order
    items.reserve(trace.phases.size() + trace.annotations.size());
    for (const Phase& p : trace.phases) {
        if (p.device >= 0 && p.device != device) continue;
        items.push_back({p.start, std::max(p.end, p.start), label(p.name, p.inferred), shadeOf(p),
                         uint8_t(rowOf(p.kind))});
    }
    // Annotation START/END pairs become ranges (matched by name, innermost
    // first); unmatched ones and instants are ticks.
    const QRgb range = QColor(0x4a, 0xa8, 0xa0).rgba();
    constexpr uint8_t kRangeRow = 3;
    std::map<StringId, std::vector<int64_t>> open;
    for (const Annotation& a : trace.annotations) {
        if (a.device >= 0 && a.device != device) continue;
        if (a.stage == AnnotationStage::Start) {
            open[a.name].push_back(a.time);
        } else if (a.stage == AnnotationStage::End && !open[a.name].empty()) {
            const int64_t s = open[a.name].back();
            open[a.name].pop_back();
            items.push_back({s, std::max(a.time, s), label(a.name, false), range, kRangeRow});
        } else {
            items.push_back({a.time, a.time, label(a.name, false), range, kRangeRow});
        }
    }
    for (auto& [name, starts] : open)
        for (int64_t s : starts) items.push_back({s, s, label(name, false), range, kRangeRow});
    // Each row's items by start. Recorded phases mostly come in start order
    // already (a step is logged when it closes, after what it holds, but it
    // has a row of its own), so a row is sorted only when it needs it.
    for (const PhaseBandItem& it : items)
        d.rows[std::min<size_t>(it.row, PhaseBandData::kRows - 1)].push_back(it);
    for (size_t row = 0; row < PhaseBandData::kRows; ++row) {
        auto& row_items = d.rows[row];
        const auto byStart = [](const PhaseBandItem& a, const PhaseBandItem& b) {
            return a.start < b.start;
        };
        if (!std::is_sorted(row_items.begin(), row_items.end(), byStart))
            std::stable_sort(row_items.begin(), row_items.end(), byStart);
        std::vector<int64_t> ends(row_items.size());
        for (size_t k = 0; k < row_items.size(); ++k) ends[k] = row_items[k].end;
        d.row_reach[row] = FirstReaching(ends);
    }
    return d;
}

size_t PhaseBandData::itemCount() const {
    size_t n = 0;
    for (const auto& row : rows) n += row.size();
    return n;
}

namespace {

// The strip's pixels, filled directly: a zoomed-out frame fills a rectangle
// per row and pixel column, thousands, and QPainter::fillRect cost about a
// microsecond each, two milliseconds of the frame.
class StripPixels {
public:
    StripPixels(const QRect& pixels, QRgb background)
        : pixels_(pixels), image_(pixels.size(), QImage::Format_ARGB32_Premultiplied) {
        image_.fill(background);
        bits_ = image_.bits();  // once: scanLine() checks for a detach on every call
    }

    // Fills the pixels a non-antialiased QPainter::fillRect(r) fills: edges
    // rounded to the nearest pixel boundary, as the raster engine does.
    // Colours are opaque.
    void fill(const QRectF& r, QRgb color) {
        const auto edge = [](double v) { return int(std::floor(v + 0.5)); };
        const int x0 = std::max(0, edge(r.left()) - pixels_.left());
        const int x1 = std::min(image_.width(), edge(r.right()) - pixels_.left());
        const int y0 = std::max(0, edge(r.top()) - pixels_.top());
        const int y1 = std::min(image_.height(), edge(r.bottom()) - pixels_.top());
        for (int y = y0; y < y1; ++y) {
            auto* line = reinterpret_cast<QRgb*>(bits_ + y * image_.bytesPerLine());
            std::fill(line + x0, line + std::max(x0, x1), color);
        }
    }

    void drawOn(QPainter& painter) const { painter.drawImage(pixels_.topLeft(), image_); }

private:
    QRect pixels_;
    QImage image_;
    uchar* bits_ = nullptr;
};

}  // namespace

void paintPhaseBands(QPainter& painter, const QRectF& area, const PhaseBandData& data,
                     const AxisMap& map, double x0, double x1, const QPalette& palette) {
    if (area.width() <= 0 || !(x1 > x0)) return;
    StripPixels pixels(area.toAlignedRect(), palette.color(QPalette::Base).rgba());
    struct Label {
        QRectF rect;
        const QString* name;
    };
    std::vector<Label> labels;
    const double rowH = area.height() / PhaseBandData::kRows;
    const double scale = area.width() / (x1 - x0);
    const int64_t lo = map.inverse(x0), hi = addSaturating(map.inverse(x1), 1);
    for (int row = 0; row < PhaseBandData::kRows; ++row) {
        const std::vector<PhaseBandItem>& items = data.rows[size_t(row)];
        const double top = area.top() + row * rowH + 1;
        // Items narrower than a pixel are merged per row and pixel, so that a
        // zoomed-out view of 180,000 phases costs a rectangle per pixel.
        double lastPx = -1e9;  // the last pixel column painted in this row
        int64_t covered = lo;  // an item ending before this is out of view or under painted pixels
        for (size_t k = 0;; ++k) {
            // Pixels, not phases, bound the frame: whatever ends before the
            // next unpainted pixel column would be merged away, so one search
            // steps over it instead of a visit per item.
            if (k >= items.size() || items[k].end < covered) k = data.nextReaching(row, k, covered);
            if (k >= items.size()) break;
            const PhaseBandItem& it = items[k];
            if (it.start > hi) break;
            const double px0 = area.left() + (map.forward(it.start) - x0) * scale;
            const double px1 = area.left() + (map.forward(it.end) - x0) * scale;
            const double w = std::max(1.0, px1 - px0);
            // Columns are filled from round(px0) to round(px0 + w) - 1, as
            // the raster engine rounds a rectangle's edges.
            if (w < 2.0 && std::floor(px0 + 0.5) <= lastPx) continue;
            lastPx = std::floor(px0 + w + 0.5) - 1;
            const QRectF r(std::max(px0, area.left() - 1), top, std::min(w, area.width() + 2),
                           rowH - 2);
            pixels.fill(r, it.color);
            if (r.width() > 24) labels.push_back({r, &data.nameOf(it)});
            // An item ending left of the next column's centre would start in a
            // painted column, and is merged away.
            covered = std::max(lo, map.inverse(x0 + (lastPx + 0.5 - area.left()) / scale));
        }
    }
    painter.save();
    painter.setClipRect(area);
    pixels.drawOn(painter);
    if (!labels.empty()) {
        QFont font = painter.font();
        font.setPointSizeF(std::max(6.0, font.pointSizeF() * 0.8));
        painter.setFont(font);
        const QFontMetricsF fm(font);
        painter.setPen(Qt::white);
        for (const Label& l : labels)
            painter.drawText(l.rect.adjusted(2, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                             fm.elidedText(*l.name, Qt::ElideRight, l.rect.width() - 4));
    }
    painter.restore();
}

QString phasesAt(const PhaseBandData& data, const AxisMap& map, double x) {
    const int64_t rx = map.inverse(x);
    QStringList names;
    for (int row = 0; row < 3; ++row) {  // the nested phases; row 3 holds annotations
        const auto& items = data.rows[size_t(row)];
        for (size_t k = data.firstReaching(row, rx + 1); k < items.size(); ++k) {
            const PhaseBandItem& it = items[k];
            if (it.start > rx) break;
            if (it.end > rx) names << data.nameOf(it);
        }
    }
    return names.join(QStringLiteral(" / "));
}

}  // namespace memscope::gui
