#pragma once
// The visible x range and the cursor, in shared-axis units, in one object that
// every view of a run (or every run of a comparison) subscribes to, with a back
// history (hotspot's filterandzoomstack).

#include <QObject>
#include <utility>
#include <vector>

#include "memscope/analysis/alignment.h"
#include "memscope/timeline/timeline.h"

namespace memscope::gui {

// What a device's view spans on the shared axis: its first event to just past
// its last. A device of one moment (a snapshot of only its end state, one
// event) gets one axis unit (a second, an event) centred on it: its own span
// would be one nanosecond, and zooming into that an axis of -0.02..0.02.
std::pair<double, double> fullRangeOf(const DeviceTimeline& tl, const AxisMap& map);

class ZoomState : public QObject {
    Q_OBJECT
public:
    explicit ZoomState(QObject* parent = nullptr);

    void setFullRange(double x0, double x1);  // also resets the view to it
    double fullBegin() const { return full0_; }
    double fullEnd() const { return full1_; }
    double begin() const { return x0_; }
    double end() const { return x1_; }

    // Interactive changes (drag, wheel) do not fill the history; discrete ones do.
    void setRange(double x0, double x1, bool remember = false);
    void zoomBy(double factor, double center);  // factor < 1 zooms in
    void panBy(double fraction);                // of the visible width
    void reset();                               // Home
    bool back();                                // the previous discrete range
    void centerOn(double x, double width);      // e.g. go to peak

    double cursor() const { return cursor_; }
    void setCursor(double x);

signals:
    void rangeChanged(double x0, double x1);
    void cursorChanged(double x);

private:
    double full0_ = 0, full1_ = 1;
    double x0_ = 0, x1_ = 1;
    double cursor_ = 0;
    std::vector<std::pair<double, double>> history_;
};

}  // namespace memscope::gui
