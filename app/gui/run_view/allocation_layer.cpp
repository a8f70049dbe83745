#include "run_view/allocation_layer.h"

#include <QElapsedTimer>
#include <algorithm>
#include <cmath>

#include "common/category_colors.h"

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

AllocationLayer::AllocationLayer(QCustomPlot* plot, QCPAxisRect* rect)
    : QCPLayerable(plot), rect_(rect) {}

void AllocationLayer::setSource(const AllocationSites* sites, const AxisMap& map) {
    sites_ = sites;
    map_ = map;
    layout_ = {};
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
    dirty_ = true;
}

void AllocationLayer::setLayout(AllocationLayout layout) {
    layout_ = std::move(layout);
    dirty_ = true;
}

void AllocationLayer::setColors(QColor background, QColor highlight) {
    background_ = background.rgb();
    highlight_ = highlight.rgb();
    dirty_ = true;
}

void AllocationLayer::setHighlight(std::optional<uint32_t> interval, std::optional<uint32_t> site) {
    if (interval == interval_ && site == site_) return;
    interval_ = interval;
    site_ = site;
    dirty_ = true;
}

void AllocationLayer::setEmphasis(std::vector<bool> intervals) {
    emphasis_ = std::move(intervals);
    dirty_ = true;
}

void AllocationLayer::applyDefaultAntialiasingHint(QCPPainter* painter) const {
    painter->setAntialiasing(false);
}

QRect AllocationLayer::clipRect() const {
    return rect_->rect();
}

QRgb AllocationLayer::colorOf(const LayoutSegment& s) const {
    if (interval_ && s.interval == int64_t(*interval_)) return highlight_;
    const size_t base = size_t(s.site) * kShades;
    if (base + kShades > siteColors_.size()) return 0xffa0a0a0;
    // An allocation's shade follows from its index, so it keeps it while the
    // view moves; aggregates take the site's plain colour.
    const size_t shade =
        s.interval < 0 ? 0 : size_t((uint64_t(s.interval) * 0x9E3779B97F4A7C15ull) >> 62) % kShades;
    const QRgb c = siteColors_[base + shade];
    if (!emphasis_.empty()) {
        const bool kept = s.interval >= 0 && size_t(s.interval) < emphasis_.size() &&
                          emphasis_[size_t(s.interval)];
        return kept ? c : mix(c, background_, 75);
    }
    return site_ && s.site != *site_ ? mix(c, background_, 55) : c;
}

void AllocationLayer::raster(const QRect& area) {
    QElapsedTimer timer;
    timer.start();
    if (image_.size() != area.size())
        image_ = QImage(area.size(), QImage::Format_ARGB32_Premultiplied);
    image_.fill(Qt::transparent);
    imageRect_ = area;
    QCPAxis* xa = rect_->axis(QCPAxis::atBottom);
    QCPAxis* ya = rect_->axis(QCPAxis::atLeft);
    xRange_ = xa->range();
    yRange_ = ya->range();
    const int w = image_.width(), h = image_.height();
    if (w <= 0 || h <= 0 || layout_.columns.empty()) return;
    auto column = [&](int64_t x) {
        const double px = xa->coordToPixel(map_.forward(x)) - area.left();
        return int(std::clamp(std::lround(px), 0l, long(w)));
    };
    // Bytes to rows: the axis is linear, so two points give the mapping.
    const double y0 = ya->coordToPixel(0) - area.top();
    const double perByte = ya->coordToPixel(1e12) - area.top() - y0;
    auto row = [&](uint64_t bytes) {
        const double py = y0 + double(bytes) / 1e12 * perByte;
        return int(std::clamp(std::lround(py), 0l, long(h)));
    };
    const auto& cols = layout_.columns;
    for (size_t k = 0; k < cols.size();) {
        // Columns that share their segments are one span of pixels.
        size_t end = k + 1;
        while (end < cols.size() && cols[end].first == cols[k].first &&
               cols[end].last == cols[k].last)
            ++end;
        const int a = column(cols[k].x0);
        const int b = std::max(std::min(a + 1, w), column(cols[end - 1].x1));
        for (uint32_t i = cols[k].first; i < cols[k].last && a < b; ++i) {
            const LayoutSegment& s = layout_.segments[i];
            const int top = row(s.top), bottom = row(s.bottom);
            const QRgb color = colorOf(s);
            for (int r = top; r < bottom; ++r) {
                auto* line = reinterpret_cast<QRgb*>(image_.scanLine(r));
                std::fill(line + a, line + b, color);
            }
        }
        k = end;
    }
    rasterMs_ = double(timer.nsecsElapsed()) / 1e6;
}

void AllocationLayer::draw(QCPPainter* painter) {
    const QRect area = rect_->rect();
    if (dirty_ || area != imageRect_ || rect_->axis(QCPAxis::atBottom)->range() != xRange_ ||
        rect_->axis(QCPAxis::atLeft)->range() != yRange_) {
        raster(area);
        dirty_ = false;
    }
    if (!layout_.columns.empty()) painter->drawImage(imageRect_.topLeft(), image_);
}

}  // namespace memscope::gui
