#pragma once
// One device's memory over time: stacked live bands, the reserved line, the
// phase strip under it, a cursor and the pinned allocation's lifetime. Draws
// from levelOfDetail only (timeline_bands.h; by module from the module
// stack's series, module_stack.h), by allocation from core's
// allocation layout (every live allocation, allocation_layout.h); the visible
// range comes from a ZoomState it shares with its siblings. QCustomPlot stays
// inside the .cpp.

#include <QWidget>
#include <memory>
#include <optional>

#include "loading/run.h"
#include "memscope/analysis/compare.h"
#include "memscope/view/allocation_layout.h"
#include "run_view/band_cache.h"
#include "run_view/phase_bands.h"
#include "run_view/timeline_bands.h"

class QCustomPlot;
class QMouseEvent;
class QWheelEvent;
class QRubberBand;

namespace memscope::gui {

class ZoomState;

class TimelinePlot : public QWidget {
    Q_OBJECT
public:
    explicit TimelinePlot(QWidget* parent = nullptr);
    ~TimelinePlot() override;

    // `map` takes the device's x onto the shared axis; `xLabel` names its unit.
    void setSource(RunPtr run, DeviceRef ref, const AxisMap& map, const QString& xLabel);
    void setZoomState(ZoomState* zoom);
    // By category, by allocation or by module group (the grouping, below,
    // also decides what setModuleHighlight's group means).
    void setViewMode(ViewMode mode);
    ViewMode viewMode() const { return mode_; }
    void setModuleGrouping(ModuleGroupingSpec spec);
    ModuleGroupingSpec moduleGrouping() const { return moduleSpec_; }
    // The module stack of the current grouping (built on first use); null
    // without a source.
    const ModuleStack* moduleStack();
    // Brings forward the allocations of one module group (a ModuleBytes::module
    // of the current grouping; 0 = outside every module), fading the rest:
    // by module its band, by allocation its allocations. nullopt: none.
    void setModuleHighlight(std::optional<ModuleId> group);
    std::optional<ModuleId> moduleHighlight() const { return moduleHighlight_; }
    // Brings forward these allocations (DeviceTimeline::intervals; a flame
    // graph's frame, a leak group), fading the rest, by allocation; replaces
    // a module highlight. Empty: none, unless `fadeAllIfEmpty` (a compared
    // run that lacks what the other run's highlight shows: all of it fades).
    void setHighlightedAllocations(std::vector<uint32_t> intervals, bool fadeAllIfEmpty = false);
    // The allocations setModuleHighlight or setHighlightedAllocations brought
    // forward (a module's in order of start).
    const std::vector<uint32_t>& highlightedAllocations() const { return highlighted_; }
    // Whether a highlight fades the rest, even one of no allocations here.
    bool highlightActive() const { return moduleHighlight_ || allocationHighlightOn_; }
    // The message shown over the plot instead of bands ("" when none).
    QString overlayMessage() const;
    void setFixedYMax(double bytes);  // <= 0: fit the visible data
    void setTitle(const QString& title);
    QString title() const;  // "" until setTitle
    void setLegendVisible(bool visible);
    void setBoxZoomMode(bool on) { boxMode_ = on; }
    void setPinned(std::optional<uint32_t> interval);

    const RunPtr& run() const { return run_; }
    DeviceRef device() const { return ref_; }
    const DeviceTimeline* timeline() const;
    const AxisMap& axisMap() const { return map_; }
    const BandSet& bands() const { return bands_; }
    // By allocation: what is drawn, columns of stacked allocations.
    const AllocationLayout& allocationLayout() const;
    // Whether the run shown is a prediction (Trace::prediction), and whether
    // its hatching is drawn over the bands.
    bool isPredicted() const;
    bool drawsPredictedHatch() const;
    // Whether the reserved line drawn is a prediction's (the allocator
    // model's): dashed, named so, and holding points.
    bool drawsPredictedReserved() const;
    // Shared-axis x of each out-of-memory event marked on the plot.
    const std::vector<double>& oomMarks() const { return oomXs_; }

    // Rebuilds the bands and repaints synchronously (benchmark, screenshots).
    void renderNow();
    double lastBuildMs() const { return buildMs_; }
    // Filling the pixels of the layer shown: by allocation the layout's, else
    // the bands'.
    double lastRasterMs() const;

    // Hover queries in plot coordinates (shared x, bytes).
    std::optional<uint32_t> allocationAt(double x, double y) const;
    QString hoverTextAt(double x, double y) const;
    QPointF pixelToCoord(const QPoint& pixel) const;
    QPoint coordToPixel(double x, double y) const;

    bool exportTo(const QString& path, QString* error);

signals:
    void hoverChanged(const QString& text);  // empty when nothing is under the cursor
    void allocationClicked(uint32_t interval);
    void cursorMoved(int64_t runX);

protected:
    void changeEvent(QEvent* event) override;

private:
    void rebuild(bool replot = true);
    // rebuild's steps.
    struct BandFade;
    BandRequest bandRequest(int width);
    void showNoModulesMessage(const BandRequest& req);
    // By allocation: the layout of the live allocations in view, and its
    // sites in the legend; else the layout hidden.
    void updateAllocationLayout(const DeviceTimeline& tl, const BandRequest& req, int width,
                                double ymax);
    void addSiteLegendBands(const AllocationIndex& index);
    // The band layer's styles and the legend's graphs for bands_.
    void updateBandGraphs(const BandRequest& req);
    void growBandGraphs(size_t n);
    void styleBandGraphs(const BandFade& fade);
    void updateReservedAndPredictedLines();
    void applyPalette();
    void onRangeChanged(double x0, double x1);
    void onMousePress(QMouseEvent* e);
    void onMouseMove(QMouseEvent* e);
    void onMouseRelease(QMouseEvent* e);
    void onWheel(QWheelEvent* e);
    void updateHover();
    // Brings forward the hovered allocation, else the pinned one: its
    // lifetime, its band and the other allocations of its site.
    void updateHighlight();
    // A vertical line and a label at each out-of-memory event of the device.
    void placeOomMarks();
    // Recomputes highlighted_ and the by-allocation emphasis from moduleHighlight_.
    void updateModuleHighlight();

    struct Parts;
    std::unique_ptr<Parts> p_;
    QCustomPlot* plot_ = nullptr;
    QRubberBand* rubber_ = nullptr;
    RunPtr run_;
    DeviceRef ref_;
    AxisMap map_;
    // Never null: the run's (built on the loader thread), or an empty one.
    std::shared_ptr<const PhaseBandData> phases_ = std::make_shared<const PhaseBandData>();
    BandSet bands_;
    BandCache bandCache_;  // the last ranges' bands; cleared with the source
    ZoomState* zoom_ = nullptr;
    ViewMode mode_ = ViewMode::Category;
    ModuleGroupingSpec moduleSpec_;
    std::shared_ptr<const ModuleStack> moduleStack_;  // for moduleSpec_; reset with the source
    std::optional<ModuleId> moduleHighlight_;
    std::vector<uint32_t> highlighted_;
    std::vector<uint32_t> allocationHighlight_;  // setHighlightedAllocations'
    bool allocationHighlightOn_ = false;         // its, even when empty (fadeAllIfEmpty)
    double fixedYMax_ = 0;
    bool boxMode_ = false;
    std::optional<uint32_t> pinned_;
    std::optional<uint32_t> hovered_;  // by allocation
    std::vector<double> oomXs_;
    double buildMs_ = 0;
    // Mouse gesture state.
    QPoint pressPos_;
    double press0_ = 0, press1_ = 0;
    bool pressed_ = false, boxing_ = false, moved_ = false;
    QPoint hoverPos_;
    bool hoverPending_ = false;
    bool rebuildPending_ = false;
};

}  // namespace memscope::gui
