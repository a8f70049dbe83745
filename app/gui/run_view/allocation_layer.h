#pragma once
// Draws core's allocation layout (allocation_layout.h) inside the timeline's
// axis rect: each column's segments filled as pixel spans of an image, so a
// frame costs about the plot's pixels, however many allocations there are.
// Colours come from the allocation site; a highlighted site keeps its colours
// and the rest fade, the highlighted allocation takes the palette's highlight.

#include <optional>
#include <vector>

#include "memscope/analysis/alignment.h"
#include "memscope/view/allocation_layout.h"
#include "run_view/raster_layer.h"

namespace memscope::gui {

class AllocationLayer : public RasterLayer {
public:
    AllocationLayer(QCustomPlot* plot, QCPAxisRect* rect);
    // From this many pixels up the raster is drawn in vertical stripes on
    // every core; a smaller image in one go, cheaper than starting a thread.
    static constexpr int64_t kStripedPixels = 100'000;

    // The sites give the colours; `map` takes run-x onto the plot's x axis.
    void setSource(const AllocationSites* sites, const AxisMap& map);
    // The layout replaced goes to buffers(), for the next one to write into.
    void setLayout(AllocationLayout layout);
    const AllocationLayout& layout() const { return layout_; }
    LayoutBuffers& buffers() { return buffers_; }
    void setColors(QColor background, QColor highlight);
    // The allocation and site to bring forward; nullopt for neither.
    void setHighlight(std::optional<uint32_t> interval, std::optional<uint32_t> site);
    // Allocations to keep their colours while every other one fades (a
    // module's, from the by-module table), by interval index; empty: none.
    // Merged thin allocations belong to no one interval and fade too.
    void setEmphasis(std::vector<bool> intervals);

protected:
    void rasterInto(QImage& image, const QRect& area, const QCPAxis& x, const QCPAxis& y) override;
    bool hasContent() const override { return !layout_.columns.empty(); }
    bool fillsEveryPixel() const override { return true; }

private:
    QRgb colorOf(const LayoutSegment& s) const;
    // No highlight, no emphasis.
    [[gnu::always_inline]] QRgb plainColorOf(const LayoutSegment& s) const;

    const AllocationSites* sites_ = nullptr;
    AxisMap map_;
    AllocationLayout layout_;
    LayoutBuffers buffers_;
    std::vector<QRgb> siteColors_;  // by site id: normal, lighter, darker
    QRgb background_ = 0xffffffff, highlight_ = 0xff3070d0;
    std::optional<uint32_t> interval_;
    std::optional<uint32_t> site_;
    std::vector<bool> emphasis_;
};

}  // namespace memscope::gui
