#include "run_view/overview_strip.h"

#include <QEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QWheelEvent>
#include <cmath>

#include "memscope/base/units.h"
#include "run_view/zoom_state.h"

namespace memscope::gui {

OverviewStrip::OverviewStrip(QWidget* parent) : QWidget(parent) {
    setMinimumHeight(40);
    setMaximumHeight(64);
    setCursor(Qt::PointingHandCursor);
    setToolTip(QStringLiteral("Overview: click or drag to move the view, wheel to zoom"));
}

void OverviewStrip::setSource(RunPtr run, DeviceRef ref, const AxisMap& map) {
    points_.clear();
    const DeviceTimeline* tl = run ? run->timeline(ref) : nullptr;
    if (tl) {
        // Once per source: a few hundred points describe the whole run.
        ymax_ = 1;
        for (const SeriesPoint& p :
             tl->live.levelOfDetail(tl->start, addSaturating(tl->end, 1), 800)) {
            points_.emplace_back(map.forward(p.x), double(p.y));
            ymax_ = std::max(ymax_, double(p.y));
        }
        // The same span as the plot's full range, so the box matches the view.
        const auto [x0, x1] = fullRangeOf(*tl, map);
        x0_ = x0;
        x1_ = std::max(x1, x0_ + 1e-12);
    }
    cache_ = QImage();
    update();
}

void OverviewStrip::setZoomState(ZoomState* zoom) {
    zoom_ = zoom;
    connect(zoom_, &ZoomState::rangeChanged, this, qOverload<>(&QWidget::update));
    update();
}

QRectF OverviewStrip::plotArea() const {
    return QRectF(rect()).adjusted(4, 2, -4, -2);
}

double OverviewStrip::xToPixel(double x) const {
    const QRectF a = plotArea();
    return a.left() + (x - x0_) / (x1_ - x0_) * a.width();
}

double OverviewStrip::pixelToX(double px) const {
    const QRectF a = plotArea();
    return x0_ + (px - a.left()) / std::max(1.0, a.width()) * (x1_ - x0_);
}

void OverviewStrip::renderCurve() {
    const qreal dpr = devicePixelRatioF();
    cache_ = QImage(size() * dpr, QImage::Format_ARGB32_Premultiplied);
    cache_.setDevicePixelRatio(dpr);
    const QPalette pal = palette();
    cache_.fill(pal.color(QPalette::Window));
    QPainter p(&cache_);
    const QRectF a = plotArea();
    p.fillRect(a, pal.color(QPalette::Base));
    if (points_.empty()) return;
    QPainterPath path;
    const double base = a.bottom();
    auto py = [&](double y) { return a.bottom() - y / (ymax_ * 1.05) * a.height(); };
    path.moveTo(xToPixel(points_.front().first), base);
    double lastY = py(points_.front().second);
    for (const auto& [x, y] : points_) {
        const double px = xToPixel(x);
        path.lineTo(px, lastY);  // step: hold the previous value until x
        lastY = py(y);
        path.lineTo(px, lastY);
    }
    path.lineTo(a.right(), lastY);
    path.lineTo(a.right(), base);
    path.closeSubpath();
    QColor c = pal.color(QPalette::Highlight);
    p.setPen(QPen(c, 1));
    c.setAlpha(90);
    p.setBrush(c);
    p.setRenderHint(QPainter::Antialiasing);
    p.drawPath(path);
}

void OverviewStrip::paintEvent(QPaintEvent*) {
    if (cache_.isNull() || cache_.size() != size() * devicePixelRatioF()) renderCurve();
    QPainter p(this);
    p.drawImage(0, 0, cache_);
    if (!zoom_) return;
    const QRectF a = plotArea();
    const double l = std::clamp(xToPixel(zoom_->begin()), a.left(), a.right());
    const double r = std::clamp(xToPixel(zoom_->end()), a.left(), a.right());
    const QRectF brush(l, a.top(), std::max(2.0, r - l), a.height());
    p.fillRect(brush, QColor(128, 128, 128, 70));
    p.setPen(QPen(palette().color(QPalette::WindowText), 1));
    p.drawRect(brush);
}

void OverviewStrip::moveBrushTo(double px) {
    if (!zoom_) return;
    const double x = pixelToX(px);
    const double w = zoom_->end() - zoom_->begin();
    zoom_->setRange(x - w / 2, x + w / 2);
}

void OverviewStrip::mousePressEvent(QMouseEvent* e) {
    dragging_ = e->button() == Qt::LeftButton;
    if (dragging_) moveBrushTo(e->position().x());
}

void OverviewStrip::mouseMoveEvent(QMouseEvent* e) {
    if (dragging_) moveBrushTo(e->position().x());
}

void OverviewStrip::mouseReleaseEvent(QMouseEvent*) {
    dragging_ = false;
}

void OverviewStrip::wheelEvent(QWheelEvent* e) {
    if (!zoom_) return;
    zoom_->zoomBy(std::pow(0.8, e->angleDelta().y() / 120.0), pixelToX(e->position().x()));
    e->accept();
}

void OverviewStrip::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) {
        cache_ = QImage();
        update();
    }
}

}  // namespace memscope::gui
