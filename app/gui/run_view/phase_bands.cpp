#include "run_view/phase_bands.h"

#include <QFontMetricsF>
#include <QImage>
#include <algorithm>
#include <cmath>

#include "common/format.h"
#include "memscope/base/units.h"

namespace memscope::gui {

namespace {

QColor colorOf(PhaseBandShade shade) {
    switch (shade) {
        case PhaseBandShade::StepEven:
            return QColor(0x8c, 0x8c, 0x9c);
        case PhaseBandShade::StepOdd:
            return QColor(0x6c, 0x6c, 0x7c);
        case PhaseBandShade::Forward:
            return QColor(0x4e, 0x79, 0xa7);
        case PhaseBandShade::Backward:
            return QColor(0xf2, 0x8e, 0x2b);
        case PhaseBandShade::Optimizer:
            return QColor(0x59, 0xa1, 0x4f);
        case PhaseBandShade::BlockEven:
            return QColor(0x9d, 0x7e, 0xc9);
        case PhaseBandShade::BlockOdd:
            return QColor(0x7a, 0x5c, 0xa8);
        case PhaseBandShade::Recompute:
            return QColor(0xe1, 0x57, 0x59);
        case PhaseBandShade::Range:
            return QColor(0x4a, 0xa8, 0xa0);
    }
    return Qt::gray;
}

// Every shade's colour, recorded and inferred, computed once: a frame looks
// one up per painted item.
struct ShadeColors {
    std::array<std::array<QRgb, 2>, size_t(PhaseBandShade::Range) + 1> rgb{};
    ShadeColors() {
        for (size_t s = 0; s < rgb.size(); ++s) {
            const QColor c = colorOf(PhaseBandShade(s));
            rgb[s] = {c.rgba(), c.lighter(130).rgba()};
        }
    }
};

}  // namespace

QRgb phaseBandColor(const PhaseBandItem& item) {
    static const ShadeColors colors;
    return colors.rgb[size_t(item.shade)][item.inferred ? 1 : 0];
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
        const std::string* name;
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
            pixels.fill(r, phaseBandColor(it));
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
                             fm.elidedText(toQString(*l.name), Qt::ElideRight, l.rect.width() - 4));
    }
    painter.restore();
}

QString phasesAt(const PhaseBandData& data, const AxisMap& map, double x) {
    QStringList names;
    for (const std::string& name : phaseNamesAt(data, map.inverse(x))) names << toQString(name);
    return names.join(QStringLiteral(" / "));
}

}  // namespace memscope::gui
