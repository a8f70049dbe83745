#include "run_view/allocation_layer.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <span>

#include "common/category_colors.h"
#include "memscope/base/parallel_for.h"

namespace memscope::gui {

namespace {

constexpr size_t kShades = 3;  // per site: neighbours of one site stay apart

QRgb mix(QRgb a, QRgb b, int percentOfB) {
    auto channel = [&](int ca, int cb) {
        return (ca * (100 - percentOfB) + cb * percentOfB) / 100;
    };
    return qRgb(channel(qRed(a), qRed(b)), channel(qGreen(a), qGreen(b)),
                channel(qBlue(a), qBlue(b)));
}

}  // namespace

AllocationLayer::AllocationLayer(QCustomPlot* plot, QCPAxisRect* rect) : RasterLayer(plot, rect) {}

void AllocationLayer::setSource(const AllocationSites* sites, const AxisMap& map) {
    sites_ = sites;
    map_ = map;
    layout_ = {};
    buffers_ = {};
    siteColors_.clear();
    if (sites_) {
        siteColors_.reserve(sites_->siteCount() * kShades);
        for (uint32_t s = 0; s < sites_->siteCount(); ++s) {
            // No site (no stack): grey, as memory_viz draws unknown frames.
            const QColor c = s == AllocationSites::kNoSite ? QColor(0xa0, 0xa0, 0xa0)
                                                           : siteColor(sites_->site(s).hash);
            siteColors_.push_back(c.rgb());
            siteColors_.push_back(c.lighter(118).rgb());
            siteColors_.push_back(c.darker(112).rgb());
        }
    }
    interval_.reset();
    site_.reset();
    emphasis_.clear();
    markDirty();
}

void AllocationLayer::setLayout(AllocationLayout layout) {
    std::swap(layout_, layout);
    buffers_.recycle(std::move(layout));
    markDirty();
}

void AllocationLayer::setColors(QColor background, QColor highlight) {
    background_ = background.rgb();
    highlight_ = highlight.rgb();
    markDirty();
}

void AllocationLayer::setHighlight(std::optional<uint32_t> interval, std::optional<uint32_t> site) {
    if (interval == interval_ && site == site_) return;
    interval_ = interval;
    site_ = site;
    markDirty();
}

void AllocationLayer::setEmphasis(std::vector<bool> intervals) {
    emphasis_ = std::move(intervals);
    markDirty();
}

inline QRgb AllocationLayer::plainColorOf(const LayoutSegment& s) const {
    const size_t base = size_t(s.site) * kShades;
    if (base + kShades > siteColors_.size()) [[unlikely]]
        return 0xffa0a0a0;
    // An allocation's shade follows from its index, so it keeps it while the
    // view moves; aggregates take the site's plain colour. The top two bits
    // of a multiplicative hash, 0..3, folded onto the three shades.
    static constexpr uint8_t kShadeOf[4] = {0, 1, 2, 0};
    const size_t shade =
        s.interval < 0 ? 0 : kShadeOf[(uint64_t(s.interval) * 0x9E3779B97F4A7C15ull) >> 62];
    return siteColors_[base + shade];
}

QRgb AllocationLayer::colorOf(const LayoutSegment& s) const {
    if (interval_ && s.interval == int64_t(*interval_)) return highlight_;
    const QRgb c = plainColorOf(s);
    if (!emphasis_.empty()) {
        const bool kept = s.interval >= 0 && size_t(s.interval) < emphasis_.size() &&
                          emphasis_[size_t(s.interval)];
        return kept ? c : mix(c, background_, 75);
    }
    return site_ && s.site != *site_ ? mix(c, background_, 55) : c;
}

void AllocationLayer::rasterInto(QImage& image, const QRect& area, const QCPAxis& xa,
                                 const QCPAxis& ya) {
    const int w = image.width(), h = image.height();
    // One detach, then plain pointer arithmetic: scanLine() per row checks
    // for a shared image every time.
    QRgb* const pixels = reinterpret_cast<QRgb*>(image.bits());
    const size_t stride = size_t(image.bytesPerLine()) / sizeof(QRgb);
    auto column = [&](int64_t x) {
        const double px = xa.coordToPixel(map_.forward(x)) - area.left();
        return int(std::clamp(std::lround(px), 0l, long(w)));
    };
    // Bytes to rows: the axis is linear, so two points give the mapping.
    const double y0 = ya.coordToPixel(0) - area.top();
    const double perByte = (ya.coordToPixel(1e12) - area.top() - y0) / 1e12;
    if (!(perByte < 0)) {  // a flat or upside-down axis: nothing sensible to draw
        image.fill(Qt::transparent);
        return;
    }
    // Each pixel row shows the segment holding the height at the row's
    // centre, what rounding both edges of every segment would give, read
    // with integer compares: a column of a thousand thin segments costs its
    // rows, not a float conversion per segment. centre[r] < 0: below zero.
    std::vector<int64_t> centre(static_cast<size_t>(h));
    for (int r = 0; r < h; ++r) {
        const double bytes = (double(r) + 0.5 - y0) / perByte;
        centre[size_t(r)] = bytes < 0 ? -1 : bytes >= 9.2e18 ? INT64_MAX : int64_t(bytes);
    }
    const auto& cols = layout_.columns;
    const std::span<const LayoutSegment> segments = layout_.drawnSegments();
    // Columns that share their segments are one span of pixels, [a, b).
    struct Span {
        int a, b;
        uint32_t first, last;
    };
    std::vector<Span> spans;
    for (size_t k = 0; k < cols.size();) {
        size_t end = k + 1;
        while (end < cols.size() && cols[end].first == cols[k].first &&
               cols[end].last == cols[k].last)
            ++end;
        const int a = column(cols[k].x0);
        const int b = std::max(std::min(a + 1, w), column(cols[end - 1].x1));
        if (a < b)
            spans.push_back(
                {a, b, cols[k].first, std::min<uint32_t>(cols[k].last, uint32_t(segments.size()))});
        k = end;
    }
    // Nothing highlighted (every frame of a pan or zoom): the site's shade
    // alone, inline.
    const bool plain = !interval_ && !site_ && emphasis_.empty();
    // Pixel columns [x0, x1): cleared, then every span's part of them, in
    // order, so that where spans meet in a pixel column the later one's
    // segments cover the earlier one's.
    auto drawStripe = [&](int x0, int x1) {
        for (int r = 0; r < h; ++r)
            std::fill(pixels + size_t(r) * stride + x0, pixels + size_t(r) * stride + x1, 0u);
        for (const Span& span : spans) {
            const int a = std::max(span.a, x0), b = std::min(span.b, x1);
            if (a >= b) continue;
            uint32_t i = span.first;
            uint32_t coloured = UINT32_MAX;  // the segment `color` is for
            QRgb color = 0;
            // Bottom row up; the segments rise with it.
            for (int r = h - 1; r >= 0 && i < span.last; --r) {
                const int64_t at = centre[size_t(r)];
                if (at < 0) continue;
                while (i < span.last &&
                       int64_t(std::min<uint64_t>(segments[i].top, INT64_MAX)) <= at)
                    ++i;
                if (i == span.last) break;  // above the column's total
                // The stack has no gaps: segment i, whose top is the first
                // above `at`, holds it.
                if (coloured != i) {
                    color = plain ? plainColorOf(segments[i]) : colorOf(segments[i]);
                    coloured = i;
                }
                QRgb* line = pixels + size_t(r) * stride;
                if (b == a + 1)
                    line[a] = color;  // a pixel-wide column: one store
                else
                    std::fill(line + a, line + b, color);
            }
        }
    };
    // A plot's worth of pixels is drawn in vertical stripes on every core
    // (each writes only its own pixels), a few per thread so that a stripe
    // of tall columns does not hold up the rest.
    const int stripes = int64_t(w) * h >= kStripedPixels ? std::min(w, 8) : 1;
    if (stripes == 1) {
        drawStripe(0, w);
        return;
    }
    parallelFor(size_t(stripes), 0, [&](size_t k) {
        drawStripe(int(int64_t(w) * int64_t(k) / stripes),
                   int(int64_t(w) * int64_t(k + 1) / stripes));
    });
}

}  // namespace memscope::gui
