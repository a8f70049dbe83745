// The by-allocation raster against its definition: each pixel of a column's
// span shows the segment holding the height at the row's centre, or nothing,
// and where spans meet in a pixel column the later one covers the earlier.
// The layer walks each column's segments once, bottom up, with integer
// compares; this test looks every pixel up on its own, over random layouts:
// thin and wide columns, columns that share their segments, gaps, heights cut
// at the top and below zero. Colours say which segment: the highlighted
// allocation, kept (emphasised) ones and faded ones differ.
#include <QImage>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "run_view/allocation_layer.h"

using namespace memscope;
using namespace memscope::gui;

namespace {

// The layer with its raster open to the test.
class OpenAllocationLayer : public AllocationLayer {
public:
    using AllocationLayer::AllocationLayer;
    using AllocationLayer::rasterInto;
};

enum class Shade { None, Highlight, Kept, Faded };

struct RandomLayout {
    AllocationLayout layout;
    std::vector<bool> kept;  // by interval
    int64_t highlighted = 0;
};

RandomLayout randomLayout(std::mt19937_64& rng) {
    RandomLayout r;
    std::uniform_int_distribution<int> segments(0, 40), step(1, 9), height(1, 5000);
    std::bernoulli_distribution coin(0.5), same(0.15), aggregate(0.1);
    int64_t x = 0;
    int64_t interval = 0;
    for (int c = 0; c < 300; ++c) {
        LayoutColumn col;
        col.x0 = x;
        x += step(rng);
        col.x1 = x;
        if (c > 0 && same(rng)) {  // the same segments as the column before
            col.first = r.layout.columns.back().first;
            col.last = r.layout.columns.back().last;
        } else {
            col.first = uint32_t(r.layout.segments.size());
            uint64_t at = 0;  // a column's segments stack from 0 without gaps
            for (int n = segments(rng); n > 0; --n) {
                LayoutSegment s;
                at += uint64_t(height(rng));
                s.top = at;
                s.interval = aggregate(rng) ? -1 : interval++;
                r.layout.segments.push_back(s);
            }
            col.last = uint32_t(r.layout.segments.size());
        }
        col.total = col.last > col.first ? r.layout.segments[col.last - 1].top : 0;
        r.layout.max_total = std::max(r.layout.max_total, col.total);
        r.layout.columns.push_back(col);
    }
    for (int64_t i = 0; i < interval; ++i) r.kept.push_back(coin(rng));
    r.highlighted = interval / 2;
    return r;
}

// What the image should show, pixel by pixel (row-major), from the layout alone.
std::vector<Shade> expected(const RandomLayout& r, const QRect& area, const QCPAxis& xa,
                            const QCPAxis& ya) {
    const int w = area.width(), h = area.height();
    auto column = [&](int64_t cx) {
        const double px = xa.coordToPixel(double(cx)) - area.left();
        return int(std::clamp(std::lround(px), 0l, long(w)));
    };
    const double y0 = ya.coordToPixel(0) - area.top();
    const double perByte = (ya.coordToPixel(1e12) - area.top() - y0) / 1e12;
    auto shadeOf = [&](const LayoutSegment& s) {
        if (s.interval == r.highlighted) return Shade::Highlight;
        return s.interval >= 0 && r.kept[size_t(s.interval)] ? Shade::Kept : Shade::Faded;
    };
    std::vector<Shade> out(size_t(w) * size_t(h), Shade::None);
    // Spans are drawn in order: where two meet in a pixel column (zoomed
    // out), the later one's segments cover the earlier one's.
    const auto& cols = r.layout.columns;
    for (size_t k = 0; k < cols.size();) {
        size_t end = k + 1;
        while (end < cols.size() && cols[end].first == cols[k].first &&
               cols[end].last == cols[k].last)
            ++end;
        const int a = column(cols[k].x0);
        const int b = std::max(std::min(a + 1, w), column(cols[end - 1].x1));
        for (int y = 0; y < h && a < b; ++y) {
            const double bytes = (double(y) + 0.5 - y0) / perByte;
            if (bytes < 0) continue;
            const int64_t at = int64_t(bytes);
            for (uint32_t i = cols[k].first; i < cols[k].last; ++i) {
                const LayoutSegment& s = r.layout.segments[i];
                const uint64_t bottom = segmentBottom(r.layout.segments, cols[k].first, i);
                if (int64_t(bottom) <= at && at < int64_t(s.top))
                    for (int x = a; x < b; ++x) out[size_t(y) * size_t(w) + size_t(x)] = shadeOf(s);
            }
        }
        k = end;
    }
    return out;
}

}  // namespace

class AllocationRasterTest : public QObject {
    Q_OBJECT
private slots:
    void everyPixelShowsTheSegmentAtItsRowCentre() {
        std::mt19937_64 rng(20261205);
        QCustomPlot plot;
        QCPAxisRect* rect = plot.axisRect();
        QCPAxis& xa = *rect->axis(QCPAxis::atBottom);
        QCPAxis& ya = *rect->axis(QCPAxis::atLeft);
        int checked = 0;
        std::set<Shade> seen;
        // A large plot is drawn in stripes on several threads, a small one in
        // one go (AllocationLayer::rasterInto): both sizes, each layout.
        for (int trial = 0; trial < 6; ++trial) {
            const bool striped = trial % 2 == 0;
            // A hidden plot takes its size from the viewport, not from resize().
            plot.setViewport(QRect(QPoint(0, 0), striped ? QSize(520, 330) : QSize(300, 200)));
            plot.replot();
            const QRect area = rect->rect();
            QVERIFY(area.width() > 100 && area.height() > 100);
            QCOMPARE(int64_t(area.width()) * area.height() >= AllocationLayer::kStripedPixels,
                     striped);
            RandomLayout r = randomLayout(rng);
            const double xEnd = double(r.layout.columns.back().x1);
            const double yTop = double(r.layout.max_total);
            // Zoomed out (columns a pixel wide or less), zoomed in (columns
            // many pixels wide, some off the image), and heights cut at the
            // top and starting below zero.
            const std::pair<QCPRange, QCPRange> views[] = {
                {{0, xEnd}, {0, yTop}},
                {{xEnd * 0.3, xEnd * 0.34}, {0, yTop * 0.5}},
                {{-20, xEnd * 0.5}, {-yTop * 0.2, yTop * 1.1}},
            };
            for (const auto& [xr, yr] : views) {
                OpenAllocationLayer layer(&plot, rect);
                layer.setSource(nullptr, AxisMap::linear(0, 1.0));
                layer.setLayout(r.layout);
                layer.setHighlight(uint32_t(r.highlighted), std::nullopt);
                layer.setEmphasis(r.kept);
                xa.setRange(xr);
                ya.setRange(yr);
                // Not cleared: the layer clears what it does not draw.
                QImage image(area.size(), QImage::Format_ARGB32_Premultiplied);
                image.fill(QColor(1, 2, 3));
                layer.rasterInto(image, area, xa, ya);
                // Each shade is one colour, and the shades differ.
                std::map<Shade, QRgb> colour{{Shade::None, 0}};
                std::map<QRgb, Shade> shadeOf{{0, Shade::None}};
                int wrong = 0;
                const std::vector<Shade> wantImage = expected(r, area, xa, ya);
                for (int y = 0; y < image.height(); ++y)
                    for (int x = 0; x < image.width(); ++x) {
                        const Shade want = wantImage[size_t(y) * size_t(area.width()) + size_t(x)];
                        const QRgb got = image.pixel(x, y);
                        const auto [c, fresh] = colour.try_emplace(want, got);
                        const auto [s, freshColour] = shadeOf.try_emplace(got, want);
                        wrong += c->second != got || s->second != want;
                        seen.insert(want);
                        ++checked;
                    }
                QVERIFY2(wrong == 0, qPrintable(QStringLiteral("trial %1, view [%2, %3]: %4 "
                                                               "pixels show another segment")
                                                    .arg(trial)
                                                    .arg(xr.lower)
                                                    .arg(xr.upper)
                                                    .arg(wrong)));
            }
        }
        QVERIFY(checked > 500000);
        QCOMPARE(seen.size(), size_t(4));  // every shade was drawn somewhere
    }
};

QTEST_MAIN(AllocationRasterTest)
#include "tst_gui_allocation_raster.moc"
