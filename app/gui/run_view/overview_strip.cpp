#include "run_view/overview_strip.h"

#include <QEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <limits>

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
    const int columns = int(a.width());
    if (points_.empty() || columns <= 0) return;

    // The step function's lowest and highest value in each pixel column,
    // drawn as two rectangles per column: solid up to the lowest, lighter up
    // to the highest. An antialiased path through the reduced points cost
    // 40-50 ms of the first paint on a jagged trace (the rasterizer's work
    // grows with the edges crossing each scanline); this costs a pass over
    // the points and a few rectangles per column, and never hides a spike.
    // NaN: no point reaches the column (before the first one).
    constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> low(size_t(columns), kNone), high(size_t(columns), kNone);
    const auto columnOf = [&](double x) {
        return std::clamp(int(std::floor(xToPixel(x) - a.left())), 0, columns - 1);
    };
    for (size_t i = 0; i < points_.size(); ++i) {
        const double y = points_[i].second;
        const int c0 = columnOf(points_[i].first);
        const int c1 = i + 1 < points_.size() ? columnOf(points_[i + 1].first) : columns - 1;
        for (auto c = size_t(c0); c <= size_t(c1); ++c) {
            low[c] = std::isnan(low[c]) ? y : std::min(low[c], y);
            high[c] = std::isnan(high[c]) ? y : std::max(high[c], y);
        }
    }
    const double base = a.bottom();
    auto py = [&](double y) { return base - y / (ymax_ * 1.05) * a.height(); };
    const QColor line = pal.color(QPalette::Highlight);
    QColor solid = line, light = line;
    solid.setAlpha(90);
    light.setAlpha(40);
    double previous = base;
    for (int c = 0; c < columns; ++c) {
        if (std::isnan(high[size_t(c)])) {
            previous = base;
            continue;
        }
        const double x = a.left() + c;
        const double top = py(high[size_t(c)]), floor = py(low[size_t(c)]);
        p.fillRect(QRectF(x, floor, 1, base - floor), solid);
        p.fillRect(QRectF(x, top, 1, floor - top), light);
        // The outline: this column's top, joined to the previous one's.
        const double lo = std::min(top, previous), hi = std::max(top, previous);
        p.fillRect(QRectF(x, lo, 1, std::max(1.0, hi - lo)), line);
        previous = top;
    }
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
