#pragma once
// The whole run in a thin strip, with a brush showing the visible range: click
// or drag to move it, wheel to resize it. The curve is reduced and rendered
// once per source and size into a cached image; a frame only blits it and
// draws the brush.

#include <QImage>
#include <QWidget>
#include <vector>

#include "loading/run.h"
#include "memscope/analysis/compare.h"

namespace memscope::gui {

class ZoomState;

class OverviewStrip : public QWidget {
    Q_OBJECT
public:
    explicit OverviewStrip(QWidget* parent = nullptr);
    void setSource(RunPtr run, DeviceRef ref, const AxisMap& map);
    void setZoomState(ZoomState* zoom);
    QSize sizeHint() const override { return {400, 56}; }

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    QRectF plotArea() const;
    double xToPixel(double x) const;
    double pixelToX(double px) const;
    void moveBrushTo(double px);
    void renderCurve();

    std::vector<std::pair<double, double>> points_;  // shared x, bytes
    double x0_ = 0, x1_ = 1, ymax_ = 1;
    QImage cache_;
    ZoomState* zoom_ = nullptr;
    bool dragging_ = false;
};

}  // namespace memscope::gui
