#include "run_view/band_layer.h"

#include <algorithm>
#include <cmath>

namespace memscope::gui {

BandLayer::BandLayer(QCustomPlot* plot, QCPAxisRect* rect) : RasterLayer(plot, rect) {}

void BandLayer::setBands(const BandSet* bands, std::vector<Style> styles) {
    bands_ = bands;
    styles_ = std::move(styles);
    markDirty();
}

void BandLayer::rasterInto(QImage& image, const QRect& area, const QCPAxis& xa, const QCPAxis& ya) {
    const int w = image.width(), h = image.height();
    const std::vector<double>& xs = bands_->xs;
    const size_t n = xs.size();
    // Both axes are linear: two points give each mapping.
    const double x0 = xa.coordToPixel(0) - area.left();
    const double perX = xa.coordToPixel(1) - area.left() - x0;
    const double y0 = ya.coordToPixel(0) - area.top();
    const double perY = ya.coordToPixel(1) - area.top() - y0;
    if (!(perX > 0) || !(perY < 0)) return;
    auto row = [&](double v) { return int(std::clamp(y0 + v * perY, 0.0, double(h)) + 0.5); };
    // The first point at or right of pixel edge px (x = (px - x0) / perX).
    auto firstAt = [&](double px) {
        const double x = (px - x0) / perX;
        return size_t(std::lower_bound(xs.begin(), xs.end(), x) - xs.begin());
    };
    QRgb* const pixels = reinterpret_cast<QRgb*>(image.bits());
    const size_t stride = size_t(image.bytesPerLine()) / sizeof(QRgb);
    const size_t bandCount = std::min(bands_->bands.size(), styles_.size());
    size_t from = firstAt(0);
    for (int px = 0; px < w; ++px) {
        // Points [lo, hi) hold the column: the one in force at its left edge
        // (a step line holds a value until the next point) and those in it.
        const size_t next = firstAt(double(px + 1));
        const size_t lo =
            from > 0 && (from == n || xs[from] > (double(px) - x0) / perX) ? from - 1 : from;
        const size_t hi = std::max(next, lo + 1);
        from = next;
        // No data under it: before the first point or past the last (a step
        // line ends at its last point).
        if (lo >= n || xs[lo] > (double(px + 1) - x0) / perX) continue;
        if (lo + 1 == n && xs[lo] < (double(px) - x0) / perX) continue;
        int below = row(0);
        double lastTop = 0;
        for (size_t k = 0; k < bandCount; ++k) {
            const Band& b = bands_->bands[k];
            const size_t a = std::max(lo, b.begin), z = std::min({hi, b.end, b.ys.size()});
            if (a >= z) continue;
            double top = lastTop;
            for (size_t i = a; i < z; ++i) top = std::max(top, b.ys[i]);
            lastTop = top;
            const int r0 = row(top);
            if (r0 >= below) continue;
            const Style& s = styles_[k];
            QRgb* line = pixels + size_t(r0) * stride + size_t(px);
            for (int r = r0; r < below; ++r, line += stride)
                *line = s.hatched && (r % 2 == 0) && (px % 2 == 0) ? 0 : s.color;
            below = r0;
        }
    }
}

}  // namespace memscope::gui
