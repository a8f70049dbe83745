#pragma once
// A layer of the timeline's axis rect drawn as one image of its pixels: the
// by-allocation layout (AllocationLayer) and the stacked bands (BandLayer).
// The image is redrawn only when the content, the rect or an axis range
// changed, and then costs about the plot's pixels, whatever the trace holds.

#include <qcustomplot.h>

#include <QImage>

namespace memscope::gui {

class RasterLayer : public QCPLayerable {
public:
    RasterLayer(QCustomPlot* plot, QCPAxisRect* rect);
    double lastRasterMs() const { return rasterMs_; }

protected:
    // Draws into `image` (the size of `area`, the axis rect; cleared to
    // transparent first unless fillsEveryPixel) for the axes' current ranges.
    virtual void rasterInto(QImage& image, const QRect& area, const QCPAxis& x,
                            const QCPAxis& y) = 0;
    // Whether there is anything to draw at all.
    virtual bool hasContent() const = 0;
    // Whether rasterInto writes every pixel (transparent where it draws
    // nothing), so that the image need not be cleared first.
    virtual bool fillsEveryPixel() const { return false; }
    void markDirty() { dirty_ = true; }

    void applyDefaultAntialiasingHint(QCPPainter* painter) const override;
    void draw(QCPPainter* painter) override;
    QRect clipRect() const override;

private:
    QCPAxisRect* rect_;
    QImage image_;
    QRect imageRect_;
    QCPRange xRange_, yRange_;
    bool dirty_ = true;
    double rasterMs_ = 0;
};

}  // namespace memscope::gui
