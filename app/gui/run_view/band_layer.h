#pragma once
// Draws the stacked bands of the by-category and by-module views (BandSet,
// timeline_bands.h) inside the timeline's axis rect as pixel columns of an
// image, like AllocationLayer: each column shows every band's highest top
// among the points in it, so the outline is the exact envelope, and a frame
// costs the plot's pixels. Filled QCustomPlot graphs painted every band down
// to zero (overdraw per band) and rebuilt their point lists every frame: two
// thirds of a zoomed-out frame on a 10-million-event trace.

#include <vector>

#include "run_view/raster_layer.h"
#include "run_view/timeline_bands.h"

namespace memscope::gui {

class BandLayer : public RasterLayer {
public:
    BandLayer(QCustomPlot* plot, QCPAxisRect* rect);

    struct Style {
        QRgb color = 0xff808080;
        bool hatched = false;  // inferred: every other pixel of a 2x2 grid left out
    };
    // The bands to draw (bottom first, as in `bands`) and a style for each.
    void setBands(const BandSet* bands, std::vector<Style> styles);

protected:
    void rasterInto(QImage& image, const QRect& area, const QCPAxis& x, const QCPAxis& y) override;
    bool hasContent() const override { return bands_ && !bands_->xs.empty(); }

private:
    const BandSet* bands_ = nullptr;
    std::vector<Style> styles_;
};

}  // namespace memscope::gui
