#include "run_view/zoom_state.h"

#include <algorithm>
#include <cmath>

#include "memscope/base/units.h"

namespace memscope::gui {

std::pair<double, double> fullRangeOf(const DeviceTimeline& tl, const AxisMap& map) {
    const double x0 = map.forward(tl.start);
    if (tl.start == tl.end) return {x0 - 0.5, x0 + 0.5};
    return {x0, map.forward(addSaturating(tl.end, 1))};
}

ZoomState::ZoomState(QObject* parent) : QObject(parent) {}

void ZoomState::setFullRange(double x0, double x1) {
    if (!(x1 > x0)) x1 = x0 + 1;
    full0_ = x0;
    full1_ = x1;
    history_.clear();
    setRange(x0, x1);
}

void ZoomState::setRange(double x0, double x1, bool remember) {
    if (!std::isfinite(x0) || !std::isfinite(x1)) return;
    if (x1 < x0) std::swap(x0, x1);
    // Never narrower than a millionth of the run: below that there is nothing
    // left to resolve and doubles start to lose the step edges.
    const double minWidth = (full1_ - full0_) * 1e-7;
    if (x1 - x0 < minWidth) {
        const double c = (x0 + x1) / 2;
        x0 = c - minWidth / 2;
        x1 = c + minWidth / 2;
    }
    if (x0 == x0_ && x1 == x1_) return;
    if (remember) {
        history_.emplace_back(x0_, x1_);
        if (history_.size() > 100) history_.erase(history_.begin());
    }
    x0_ = x0;
    x1_ = x1;
    emit rangeChanged(x0_, x1_);
}

void ZoomState::zoomBy(double factor, double center) {
    setRange(center - (center - x0_) * factor, center + (x1_ - center) * factor);
}

void ZoomState::panBy(double fraction) {
    const double d = (x1_ - x0_) * fraction;
    setRange(x0_ + d, x1_ + d);
}

void ZoomState::reset() {
    setRange(full0_, full1_, true);
}

bool ZoomState::back() {
    if (history_.empty()) return false;
    const auto [a, b] = history_.back();
    history_.pop_back();
    setRange(a, b, false);
    return true;
}

void ZoomState::centerOn(double x, double width) {
    setRange(x - width / 2, x + width / 2, true);
}

void ZoomState::setCursor(double x) {
    if (x == cursor_) return;
    cursor_ = x;
    emit cursorChanged(x);
}

}  // namespace memscope::gui
