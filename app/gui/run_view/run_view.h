#pragma once
// One run: device selector, stacking mode (category, allocation, module) and
// module grouping, the timeline plot with its phase strip, the overview strip
// and the hover read-out. Owns the run's ZoomState.

#include <QWidget>
#include <optional>

#include "loading/run.h"
#include "run_view/timeline_bands.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QPushButton;

namespace memscope::gui {

class OverviewStrip;
class TimelinePlot;
class ZoomState;

class RunView : public QWidget {
    Q_OBJECT
public:
    explicit RunView(RunPtr run, QWidget* parent = nullptr);

    const RunPtr& run() const { return run_; }
    DeviceRef device() const { return ref_; }
    void setDevice(DeviceRef ref);
    TimelinePlot* plot() const { return plot_; }
    ZoomState* zoom() const { return zoom_; }
    QString hoverText() const;

    // The mode box's entries are the modes, in ViewMode's order.
    void setViewMode(ViewMode mode);
    ViewMode viewMode() const;
    // How the plot's bands and the by-module table group modules.
    void setModuleGrouping(ModuleGroupingSpec spec);
    ModuleGroupingSpec moduleGrouping() const;
    // Brings a module group forward in the plot (the by-module table's
    // click): stacked by module its band, by allocation its allocations; a
    // plot stacked by category, which cannot show modules, stacks by module
    // first. nullopt: none.
    void highlightModule(std::optional<ModuleId> group);
    // Brings these allocations forward (a flame graph's frame, a leak
    // group), by allocation: a plot stacked otherwise is stacked by
    // allocation first. Empty: none.
    void highlightAllocations(std::vector<uint32_t> intervals);
    void setBoxZoom(bool on);
    void goToPeak();
    double peakX() const;  // shared-axis x of the device's peak
    // Centres the view on the device's first out-of-memory event, the cursor
    // on it; false where the device has none.
    bool goToOom();
    // The out-of-memory report shown above the plot (core's text), "" if none.
    QString oomText() const;
    // Centres the view on an allocation and pins it.
    void showAllocation(uint32_t interval);

    // Following a trace still being written (File → Follow…): shows the
    // "Follow end" box, on while the view shows the run's end.
    void setFollowing(bool on);
    bool isFollowing() const { return following_; }
    // Whether updates keep the run's end in view. The user's zoom or pan
    // turns it off when it leaves the end out, on when it shows the end.
    bool followsEnd() const;
    void setFollowEnd(bool on);
    // A newer version of the same run (the followed file grew): shown on
    // the same device, mode and grouping; the visible x range stays where
    // it was, or, following the end, keeps its width and moves to the end.
    void updateRun(RunPtr run);

signals:
    void allocationPinned(memscope::gui::RunPtr run, memscope::gui::DeviceRef ref,
                          uint32_t interval);
    void cursorMoved(memscope::gui::RunPtr run, memscope::gui::DeviceRef ref, int64_t runX);
    void deviceChanged();
    void moduleGroupingChanged(memscope::ModuleGroupingSpec spec);

private:
    // QSettings key under which the user's stack mode for this run is kept.
    QString stackModeKey() const;
    // The banner for the device's first OOM (or its end-state report).
    void showOomReport();
    // The view around x (5% of the run wide), the cursor on it.
    void centreOn(double x);
    // The grouping box's entries for the device's trace (its modules' depth).
    void fillGroupings();

    RunPtr run_;
    DeviceRef ref_;
    ZoomState* zoom_ = nullptr;
    TimelinePlot* plot_ = nullptr;
    OverviewStrip* overview_ = nullptr;
    QComboBox* devices_ = nullptr;
    QComboBox* mode_ = nullptr;
    QComboBox* grouping_ = nullptr;  // shown where the trace has modules
    QLabel* hover_ = nullptr;
    QWidget* oomBanner_ = nullptr;
    QLabel* oomHead_ = nullptr;     // the headline and the verdict
    QLabel* oomDetails_ = nullptr;  // the whole report, on request
    QPushButton* oomButton_ = nullptr;
    QCheckBox* followEnd_ = nullptr;  // shown while following
    bool following_ = false;
    bool updating_ = false;  // updateRun is moving the range, not the user
};

}  // namespace memscope::gui
