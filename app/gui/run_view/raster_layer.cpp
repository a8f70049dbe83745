#include "run_view/raster_layer.h"

#include <QElapsedTimer>

namespace memscope::gui {

RasterLayer::RasterLayer(QCustomPlot* plot, QCPAxisRect* rect) : QCPLayerable(plot), rect_(rect) {}

void RasterLayer::applyDefaultAntialiasingHint(QCPPainter* painter) const {
    painter->setAntialiasing(false);
}

QRect RasterLayer::clipRect() const {
    return rect_->rect();
}

void RasterLayer::draw(QCPPainter* painter) {
    const QRect area = rect_->rect();
    const QCPAxis* xa = rect_->axis(QCPAxis::atBottom);
    const QCPAxis* ya = rect_->axis(QCPAxis::atLeft);
    if (dirty_ || area != imageRect_ || xa->range() != xRange_ || ya->range() != yRange_) {
        QElapsedTimer timer;
        timer.start();
        if (image_.size() != area.size())
            image_ = QImage(area.size(), QImage::Format_ARGB32_Premultiplied);
        if (!fillsEveryPixel()) image_.fill(Qt::transparent);
        imageRect_ = area;
        xRange_ = xa->range();
        yRange_ = ya->range();
        if (image_.width() > 0 && image_.height() > 0 && hasContent())
            rasterInto(image_, area, *xa, *ya);
        rasterMs_ = double(timer.nsecsElapsed()) / 1e6;
        dirty_ = false;
    }
    if (hasContent()) painter->drawImage(imageRect_.topLeft(), image_);
}

}  // namespace memscope::gui
