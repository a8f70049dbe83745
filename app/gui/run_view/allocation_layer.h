#pragma once
// Draws core's allocation layout (allocation_layout.h) inside the timeline's
// axis rect: each column's segments filled as pixel spans of an image, so a
// frame costs about the plot's pixels, however many allocations there are.
// Colours come from the allocation site; a highlighted site keeps its colours
// and the rest fade, the highlighted allocation takes the palette's highlight.

#include <qcustomplot.h>

#include <QImage>
#include <optional>
#include <vector>

#include "memscope/analysis/alignment.h"
#include "memscope/analysis/allocation_layout.h"

namespace memscope::gui {

class AllocationLayer : public QCPLayerable {
public:
    AllocationLayer(QCustomPlot* plot, QCPAxisRect* rect);

    // The sites give the colours; `map` takes run-x onto the plot's x axis.
    void setSource(const AllocationSites* sites, const AxisMap& map);
    void setLayout(AllocationLayout layout);
    const AllocationLayout& layout() const { return layout_; }
    void setColors(QColor background, QColor highlight);
    // The allocation and site to bring forward; nullopt for neither.
    void setHighlight(std::optional<uint32_t> interval, std::optional<uint32_t> site);
    // Allocations to keep their colours while every other one fades (a
    // module's, from the by-module table), by interval index; empty: none.
    // Merged thin allocations belong to no one interval and fade too.
    void setEmphasis(std::vector<bool> intervals);

    double lastRasterMs() const { return rasterMs_; }

protected:
    void applyDefaultAntialiasingHint(QCPPainter* painter) const override;
    void draw(QCPPainter* painter) override;
    QRect clipRect() const override;

private:
    void raster(const QRect& area);
    QRgb colorOf(const LayoutSegment& s) const;

    QCPAxisRect* rect_;
    const AllocationSites* sites_ = nullptr;
    AxisMap map_;
    AllocationLayout layout_;
    std::vector<QRgb> siteColors_;  // by site id: normal, lighter, darker
    QRgb background_ = 0xffffffff, highlight_ = 0xff3070d0;
    std::optional<uint32_t> interval_;
    std::optional<uint32_t> site_;
    std::vector<bool> emphasis_;
    // The image and what it was drawn for.
    QImage image_;
    QRect imageRect_;
    QCPRange xRange_, yRange_;
    bool dirty_ = true;
    double rasterMs_ = 0;
};

}  // namespace memscope::gui
