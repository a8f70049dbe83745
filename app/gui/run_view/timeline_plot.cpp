#include "run_view/timeline_plot.h"

#include <qcustomplot.h>

#include <QElapsedTimer>
#include <QEvent>
#include <QRubberBand>
#include <QTimer>
#include <QVBoxLayout>
#include <cmath>

#include "common/category_colors.h"
#include "common/format.h"
#include "common/module_text.h"
#include "common/plot_export.h"
#include "common/plot_style.h"
#include "memscope/base/units.h"
#include "memscope/inference/frames.h"
#include "run_view/allocation_layer.h"
#include "run_view/band_layer.h"
#include "run_view/zoom_state.h"

namespace memscope::gui {

namespace {

// Draws the phase strip inside its own axis rect, so it pans, exports and
// prints with the plot.
class PhaseLayer : public QCPLayerable {
public:
    PhaseLayer(QCustomPlot* plot, QCPAxisRect* rect,
               std::function<void(QPainter&, const QRectF&)> paint)
        : QCPLayerable(plot), rect_(rect), paint_(std::move(paint)) {}

protected:
    void applyDefaultAntialiasingHint(QCPPainter* painter) const override {
        painter->setAntialiasing(false);
    }
    void draw(QCPPainter* painter) override { paint_(*painter, rect_->rect()); }

private:
    QCPAxisRect* rect_;
    std::function<void(QPainter&, const QRectF&)> paint_;
};

// Sites named in the by-allocation legend.
constexpr size_t kLegendSites = 6;

// "fn  (/a/long/path/file.py:12)" as "fn (file.py:12)": the legend has one row.
QString shortSiteLabel(const std::string& label) {
    QString text = toQString(label);
    const qsizetype open = text.lastIndexOf(QStringLiteral("  ("));
    if (open < 0) return text;
    const qsizetype slash = text.lastIndexOf(QLatin1Char('/'));
    const QString where = slash > open ? text.mid(slash + 1) : text.mid(open + 3);
    return text.left(open) + QStringLiteral(" (") + where;
}

}  // namespace

// By module, a highlighted group keeps its colour and the other bands fade
// towards the background.
struct TimelinePlot::BandFade {
    int64_t litBand = -1;  // the highlighted group's band; -1: none, nothing fades
    QColor base;           // the background faded towards
    bool faded(const Band& b) const { return litBand >= 0 && b.key != litBand; }
    QColor apply(const QColor& c) const {
        return QColor::fromRgbF(0.25f * c.redF() + 0.75f * base.redF(),
                                0.25f * c.greenF() + 0.75f * base.greenF(),
                                0.25f * c.blueF() + 0.75f * base.blueF());
    }
};

struct TimelinePlot::Parts {
    QCPAxisRect* main = nullptr;
    QCPAxisRect* phaseRect = nullptr;
    QCPTextElement* title = nullptr;
    std::vector<QCPGraph*> bandGraphs;  // drawn in order: top band first
    QCPGraph* reserved = nullptr;
    // A predicted run (Trace::prediction): its live total hatched over the
    // bands, with a dashed edge, so it is never read as a measurement.
    QCPGraph* predicted = nullptr;
    QCPItemStraightLine* cursor = nullptr;
    QCPItemStraightLine* pinStart = nullptr;
    QCPItemStraightLine* pinEnd = nullptr;
    QCPItemText* peak = nullptr;
    QCPItemText* message = nullptr;          // over the plot: what a mode cannot show
    std::vector<QCPAbstractItem*> oomItems;  // a line and a label per OOM
    AllocationLayer* allocations = nullptr;  // by allocation, instead of the band graphs
    BandLayer* bandLayer = nullptr;          // draws the bands; their graphs only carry the legend
};

TimelinePlot::TimelinePlot(QWidget* parent) : QWidget(parent), p_(std::make_unique<Parts>()) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    plot_ = new QCustomPlot(this);
    layout->addWidget(plot_);
    plot_->setNoAntialiasingOnDrag(true);
    plot_->setPlottingHint(QCP::phCacheLabels, true);
    plot_->setPlottingHint(QCP::phFastPolylines, false);
    // One paint buffer, not two: QCustomPlot gives its (empty, here) overlay
    // layer a buffer of its own, and every frame clears each buffer and
    // blends it onto the widget, whole-plot pixel passes that were a fifth of
    // a frame whatever the trace.
    if (QCPLayer* overlay = plot_->layer(QStringLiteral("overlay")))
        overlay->setMode(QCPLayer::lmLogical);
    rubber_ = new QRubberBand(QRubberBand::Rectangle, plot_);

    p_->main = plot_->axisRect();
    p_->main->axis(QCPAxis::atLeft)->setTicker(byteTicker());
    p_->main->axis(QCPAxis::atLeft)->setLabel(QStringLiteral("live memory"));
    p_->phaseRect = new QCPAxisRect(plot_, false);
    p_->phaseRect->setMinimumSize(0, 52);
    p_->phaseRect->setMaximumSize(QWIDGETSIZE_MAX, 52);
    plot_->plotLayout()->addElement(1, 0, p_->phaseRect);
    plot_->plotLayout()->setRowSpacing(2);
    auto* group = new QCPMarginGroup(plot_);
    p_->main->setMarginGroup(QCP::msLeft | QCP::msRight, group);
    p_->phaseRect->setMarginGroup(QCP::msLeft | QCP::msRight, group);
    new PhaseLayer(plot_, p_->phaseRect, [this](QPainter& painter, const QRectF& area) {
        if (zoom_)
            paintPhaseBands(painter, area, *phases_, map_, zoom_->begin(), zoom_->end(), palette());
    });

    p_->reserved =
        plot_->addGraph(p_->main->axis(QCPAxis::atBottom), p_->main->axis(QCPAxis::atLeft));
    p_->reserved->setLineStyle(QCPGraph::lsStepLeft);
    p_->reserved->setName(QStringLiteral("reserved"));
    // Reserved is drawn over the bands, which are added to "main" later.
    plot_->addLayer(QStringLiteral("reserved"), plot_->layer(QStringLiteral("main")),
                    QCustomPlot::limAbove);
    p_->reserved->setLayer(QStringLiteral("reserved"));
    p_->predicted =
        plot_->addGraph(p_->main->axis(QCPAxis::atBottom), p_->main->axis(QCPAxis::atLeft));
    p_->predicted->setLineStyle(QCPGraph::lsStepLeft);
    p_->predicted->setName(QStringLiteral("predicted (hatched)"));
    p_->predicted->setLayer(QStringLiteral("reserved"));
    p_->predicted->setVisible(false);
    p_->bandLayer = new BandLayer(plot_, p_->main);
    p_->allocations = new AllocationLayer(plot_, p_->main);
    p_->allocations->setVisible(false);
    auto makeLine = [this](Qt::PenStyle style) {
        auto* l = new QCPItemStraightLine(plot_);
        l->setClipAxisRect(p_->main);
        l->setPen(QPen(QColor(0x80, 0x80, 0x80), 1, style));
        l->setVisible(false);
        return l;
    };
    p_->cursor = makeLine(Qt::DashLine);
    p_->pinStart = makeLine(Qt::SolidLine);
    p_->pinEnd = makeLine(Qt::SolidLine);
    p_->peak = new QCPItemText(plot_);
    p_->peak->setClipAxisRect(p_->main);
    p_->peak->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
    p_->peak->setText(QStringLiteral("peak ▾"));
    p_->peak->setVisible(false);
    p_->message = new QCPItemText(plot_);
    p_->message->setClipAxisRect(p_->main);
    p_->message->position->setAxisRect(p_->main);
    p_->message->position->setType(QCPItemPosition::ptAxisRectRatio);
    p_->message->position->setCoords(0.5, 0.12);
    p_->message->setPositionAlignment(Qt::AlignHCenter | Qt::AlignTop);
    p_->message->setPadding(QMargins(6, 3, 6, 3));
    p_->message->setVisible(false);

    // The legend sits in a row of its own above the plot, laid out in
    // columns: inside the axis rect it covered the data (issue 13).
    p_->main->insetLayout()->take(plot_->legend);
    p_->main->insetLayout()->simplify();
    plot_->plotLayout()->insertRow(0);
    plot_->plotLayout()->addElement(0, 0, plot_->legend);
    plot_->plotLayout()->setRowStretchFactor(0, 0.001);
    plot_->legend->setFillOrder(QCPLegend::foColumnsFirst);
    plot_->legend->setWrap(6);
    plot_->legend->setVisible(true);
    plot_->legend->setIconSize(10, 10);
    QFont lf = font();
    lf.setPointSizeF(std::max(6.0, lf.pointSizeF() * 0.85));
    plot_->legend->setFont(lf);

    connect(plot_, &QCustomPlot::mousePress, this, &TimelinePlot::onMousePress);
    connect(plot_, &QCustomPlot::mouseMove, this, &TimelinePlot::onMouseMove);
    connect(plot_, &QCustomPlot::mouseRelease, this, &TimelinePlot::onMouseRelease);
    connect(plot_, &QCustomPlot::mouseWheel, this, &TimelinePlot::onWheel);
    plot_->setMouseTracking(true);
    applyPalette();
}

TimelinePlot::~TimelinePlot() = default;

const DeviceTimeline* TimelinePlot::timeline() const {
    return run_ ? run_->timeline(ref_) : nullptr;
}

void TimelinePlot::setSource(RunPtr run, DeviceRef ref, const AxisMap& map, const QString& xLabel) {
    run_ = std::move(run);
    ref_ = ref;
    map_ = map;
    bandCache_.clear();
    pinned_.reset();
    hovered_.reset();
    moduleStack_.reset();
    moduleHighlight_.reset();
    highlighted_.clear();
    allocationHighlight_.clear();
    allocationHighlightOn_ = false;
    const AllocationIndex* index = run_ ? run_->allocationIndex(ref_) : nullptr;
    p_->allocations->setSource(index ? &index->sites : nullptr, map_);
    const Trace* trace = run_ ? run_->trace(ref_) : nullptr;
    const DeviceTimeline* tl = timeline();
    // Built on the loader thread; a run made some other way builds it here.
    phases_ = run_ ? run_->phaseBands(ref_) : nullptr;
    if (!phases_)
        phases_ = std::make_shared<const PhaseBandData>(
            trace && tl ? buildPhaseBands(*trace, tl->device) : PhaseBandData{});
    p_->main->axis(QCPAxis::atBottom)->setLabel(xLabel);
    if (tl) {
        p_->peak->position->setAxes(p_->main->axis(QCPAxis::atBottom),
                                    p_->main->axis(QCPAxis::atLeft));
        p_->peak->position->setCoords(map_.forward(tl->peak.time), double(tl->peak.bytes));
        p_->peak->setVisible(tl->peak.bytes > 0);
    }
    placeOomMarks();
    rebuild();
}

void TimelinePlot::placeOomMarks() {
    for (QCPAbstractItem* item : p_->oomItems) plot_->removeItem(item);
    p_->oomItems.clear();
    oomXs_.clear();
    if (!run_) return;
    const QColor red(0xd0, 0x20, 0x20);
    for (const OomReport& r : run_->ooms(ref_)) {
        if (r.endState()) continue;  // no moment to mark: the state is the end's
        const double x = map_.forward(r.time);
        oomXs_.push_back(x);
        auto* line = new QCPItemStraightLine(plot_);
        line->setClipAxisRect(p_->main);
        line->setPen(QPen(red, 1.5));
        line->point1->setAxes(p_->main->axis(QCPAxis::atBottom), p_->main->axis(QCPAxis::atLeft));
        line->point2->setAxes(p_->main->axis(QCPAxis::atBottom), p_->main->axis(QCPAxis::atLeft));
        line->point1->setCoords(x, 0);
        line->point2->setCoords(x, 1);
        auto* label = new QCPItemText(plot_);
        label->setClipAxisRect(p_->main);
        // x on the data, y a fraction of the plot's height: the label stays
        // at the top however the bytes axis scales.
        label->position->setAxes(p_->main->axis(QCPAxis::atBottom),
                                 p_->main->axis(QCPAxis::atLeft));
        label->position->setAxisRect(p_->main);
        label->position->setTypeX(QCPItemPosition::ptPlotCoords);
        label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
        label->position->setCoords(x, 0.02);
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
        label->setPadding(QMargins(4, 1, 4, 1));
        label->setColor(red);
        label->setText(QStringLiteral("out of memory") +
                       (r.requested_bytes
                            ? QStringLiteral(": ") + formatBytes(double(*r.requested_bytes)) +
                                  QStringLiteral(" asked")
                            : QString()));
        p_->oomItems.push_back(line);
        p_->oomItems.push_back(label);
    }
}

void TimelinePlot::setZoomState(ZoomState* zoom) {
    if (zoom_) disconnect(zoom_, nullptr, this, nullptr);
    zoom_ = zoom;
    if (!zoom_) return;
    connect(zoom_, &ZoomState::rangeChanged, this, &TimelinePlot::onRangeChanged);
    connect(zoom_, &ZoomState::cursorChanged, this, [this](double x) {
        p_->cursor->point1->setCoords(x, 0);
        p_->cursor->point2->setCoords(x, 1);
        p_->cursor->setVisible(true);
        plot_->replot(QCustomPlot::rpQueuedReplot);
    });
    rebuild();
}

void TimelinePlot::setViewMode(ViewMode mode) {
    if (mode_ == mode) return;
    mode_ = mode;
    hovered_.reset();
    updateHighlight();
    updateModuleHighlight();
    rebuild();
}

void TimelinePlot::setModuleGrouping(ModuleGroupingSpec spec) {
    if (spec.by == moduleSpec_.by && spec.depth == moduleSpec_.depth) return;
    moduleSpec_ = spec;
    moduleStack_.reset();
    // A group of one grouping means nothing in another.
    moduleHighlight_.reset();
    updateModuleHighlight();
    if (mode_ == ViewMode::Module) rebuild();
}

const ModuleStack* TimelinePlot::moduleStack() {
    if (moduleStack_) return moduleStack_.get();
    const DeviceTimeline* tl = timeline();
    const Trace* trace = run_ ? run_->trace(ref_) : nullptr;
    const ModuleAttribution* attribution = run_ ? run_->moduleAttribution(ref_) : nullptr;
    if (!tl || !trace || !attribution) return nullptr;
    // Once per (device, grouping): a pass over the intervals; frames then
    // draw from its series' level of detail.
    moduleStack_ = std::make_shared<const ModuleStack>(
        buildModuleStack(*trace, *attribution, *tl, moduleSpec_));
    return moduleStack_.get();
}

void TimelinePlot::setModuleHighlight(std::optional<ModuleId> group) {
    moduleHighlight_ = group;
    if (group) {
        allocationHighlight_.clear();
        allocationHighlightOn_ = false;
    }
    updateModuleHighlight();
    rebuild();
}

void TimelinePlot::setHighlightedAllocations(std::vector<uint32_t> intervals, bool fadeAllIfEmpty) {
    allocationHighlight_ = std::move(intervals);
    allocationHighlightOn_ = !allocationHighlight_.empty() || fadeAllIfEmpty;
    if (allocationHighlightOn_) moduleHighlight_.reset();
    updateModuleHighlight();
    rebuild();
}

void TimelinePlot::updateModuleHighlight() {
    highlighted_.clear();
    const ModuleStack* stack = moduleHighlight_ ? moduleStack() : nullptr;
    if (stack) highlighted_ = intervalsOfGroup(*stack, *moduleHighlight_);
    const DeviceTimeline* tl = timeline();
    if (!moduleHighlight_ && tl) {
        for (uint32_t i : allocationHighlight_)
            if (i < tl->intervals.size()) highlighted_.push_back(i);
    }
    std::vector<bool> mask;
    const bool any = stack || (!moduleHighlight_ && allocationHighlightOn_);
    if (tl && any && mode_ == ViewMode::Allocation) {
        mask.assign(tl->intervals.size(), false);
        for (uint32_t i : highlighted_) mask[i] = true;
    }
    p_->allocations->setEmphasis(std::move(mask));
}

QString TimelinePlot::overlayMessage() const {
    return p_->message->visible() ? p_->message->text() : QString();
}

void TimelinePlot::setFixedYMax(double bytes) {
    fixedYMax_ = bytes;
    rebuild();
}

QString TimelinePlot::title() const {
    return p_->title ? p_->title->text() : QString();
}

void TimelinePlot::setTitle(const QString& title) {
    if (!p_->title) {
        plot_->plotLayout()->insertRow(0);
        p_->title = new QCPTextElement(plot_, title);
        plot_->plotLayout()->addElement(0, 0, p_->title);
    }
    p_->title->setText(title);
    applyPalette();
}

void TimelinePlot::setLegendVisible(bool visible) {
    plot_->legend->setVisible(visible);
    // A hidden legend gives its row back to the plot.
    plot_->legend->setMaximumSize(QWIDGETSIZE_MAX, visible ? QWIDGETSIZE_MAX : 0);
}

void TimelinePlot::setPinned(std::optional<uint32_t> interval) {
    pinned_ = interval;
    updateHighlight();
}

void TimelinePlot::updateHighlight() {
    const DeviceTimeline* tl = timeline();
    const std::optional<uint32_t> target = hovered_ ? hovered_ : pinned_;
    const bool show = tl && target && *target < tl->intervals.size();
    p_->pinStart->setVisible(show);
    p_->pinEnd->setVisible(show && tl->intervals[*target].free_event != kNoEvent);
    if (show) {
        const AllocationInterval& a = tl->intervals[*target];
        const QPen pen(palette().color(QPalette::Highlight), 2);
        for (auto [line, x] : {std::pair{p_->pinStart, a.start}, std::pair{p_->pinEnd, a.end}}) {
            line->setPen(pen);
            line->point1->setCoords(map_.forward(x), 0);
            line->point2->setCoords(map_.forward(x), 1);
        }
    }
    const AllocationIndex* index = run_ ? run_->allocationIndex(ref_) : nullptr;
    // Allocations without a stack share no site worth bringing forward.
    const uint32_t site = show && index ? index->sites.siteOf(*target) : AllocationSites::kNoSite;
    if (show && index)
        p_->allocations->setHighlight(
            target, site == AllocationSites::kNoSite ? std::nullopt : std::optional(site));
    else
        p_->allocations->setHighlight(std::nullopt, std::nullopt);
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

bool TimelinePlot::isPredicted() const {
    const Trace* trace = run_ ? run_->trace(ref_) : nullptr;
    return trace && trace->prediction.has_value();
}

bool TimelinePlot::drawsPredictedReserved() const {
    return isPredicted() && !p_->reserved->data()->isEmpty() &&
           p_->reserved->pen().style() == Qt::DashLine &&
           p_->reserved->name().startsWith(QStringLiteral("reserved (predicted"));
}

bool TimelinePlot::drawsPredictedHatch() const {
    return p_->predicted->visible() && !p_->predicted->data()->isEmpty() &&
           p_->predicted->brush().style() == Qt::BDiagPattern;
}

const AllocationLayout& TimelinePlot::allocationLayout() const {
    return p_->allocations->layout();
}

double TimelinePlot::lastRasterMs() const {
    return p_->allocations->visible() ? p_->allocations->lastRasterMs()
                                      : p_->bandLayer->lastRasterMs();
}

void TimelinePlot::onRangeChanged(double, double) {
    // Several range changes in one event-loop pass (a fast drag, linked views)
    // cost one rebuild.
    if (rebuildPending_) return;
    rebuildPending_ = true;
    QMetaObject::invokeMethod(
        this,
        [this] {
            if (rebuildPending_) rebuild();
        },
        Qt::QueuedConnection);
}

void TimelinePlot::renderNow() {
    // One replot: a queued one from rebuild() would draw the frame twice
    // (QCustomPlot's queued replot still fires after an immediate one).
    rebuild(false);
    plot_->replot(QCustomPlot::rpImmediateRefresh);
}

void TimelinePlot::rebuild(bool replot) {
    rebuildPending_ = false;
    const DeviceTimeline* tl = timeline();
    if (!tl || !zoom_) {
        if (replot) plot_->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    QElapsedTimer timer;
    timer.start();
    const int width = std::max(200, p_->main->width() > 0 ? p_->main->width() : plot_->width());
    const BandRequest req = bandRequest(width);
    bands_ = bandCache_.bands(*tl, map_, req, moduleStack_);
    showNoModulesMessage(req);
    const double ymax = fixedYMax_ > 0 ? fixedYMax_ : std::max(1.0, bands_.y_max * 1.08);
    updateAllocationLayout(*tl, req, width, ymax);
    updateBandGraphs(req);
    updateReservedAndPredictedLines();
    p_->main->axis(QCPAxis::atBottom)->setRange(zoom_->begin(), zoom_->end());
    p_->main->axis(QCPAxis::atLeft)->setRange(0, ymax);
    buildMs_ = double(timer.nsecsElapsed()) / 1e6;
    if (replot) plot_->replot(QCustomPlot::rpQueuedReplot);
}

BandRequest TimelinePlot::bandRequest(int width) {
    BandRequest req;
    req.mode = mode_;
    req.x0 = zoom_->begin();
    req.x1 = zoom_->end();
    // levelOfDetail keeps each bucket's min and max, so the envelope stays
    // exact with buckets of about 1.3 px (1.5 points per pixel); by
    // allocation only the scale and the reserved line come from it, and the
    // layout samples each column at its own maximum.
    req.max_points = size_t(mode_ == ViewMode::Allocation ? width : 3 * width / 2);
    req.modules = mode_ == ViewMode::Module ? moduleStack() : nullptr;
    return req;
}

// By module on a trace without modules: one grey band, and why.
void TimelinePlot::showNoModulesMessage(const BandRequest& req) {
    const bool noModules =
        mode_ == ViewMode::Module && (!req.modules || req.modules->source == ModuleSource::None);
    p_->message->setText(noModules ? noModulesMessage() : QString());
    p_->message->setVisible(noModules);
}

void TimelinePlot::updateAllocationLayout(const DeviceTimeline& tl, const BandRequest& req,
                                          int width, double ymax) {
    const AllocationIndex* index = run_->allocationIndex(ref_);
    if (mode_ != ViewMode::Allocation || !index) {
        p_->allocations->setLayout({});
        p_->allocations->setVisible(false);
        return;
    }
    // Every live allocation, one column per pixel; an allocation a pixel
    // tall or taller is a band of its own, thinner ones merge per site.
    LayoutRequest lr;
    lr.lo = map_.inverse(req.x0);
    lr.hi = std::max(addSaturating(map_.inverse(req.x1), 1), addSaturating(lr.lo, 1));
    lr.columns = size_t(width);
    const double rows = std::max(1, p_->main->height() > 0 ? p_->main->height() : height());
    // The scale follows the highest column in view; a pan that moves it
    // a little keeps the band height, so that the next layout can take
    // over the columns both frames show (a grid, below).
    lr.min_band_bytes = bandBytesForRow(ymax / rows);
    // On a grid, so that a pan sweeps only the columns it brings into
    // view and takes the rest from the frame before.
    lr.grid = true;
    p_->allocations->setLayout(
        layoutAllocations(tl, *index, lr, &p_->allocations->layout(), &p_->allocations->buffers()));
    p_->allocations->setVisible(true);
    addSiteLegendBands(*index);
}

// The legend names the sites that cover most of the picture; the bands
// without data only carry the legend's entries.
void TimelinePlot::addSiteLegendBands(const AllocationIndex& index) {
    for (uint32_t site : mostDrawnSites(p_->allocations->layout(), kLegendSites)) {
        const AllocationSite& s = index.sites.site(site);
        Band b{shortSiteLabel(s.label), siteColor(s.hash), int64_t(site), {}};
        if (site == AllocationSites::kNoSite) {
            b.label = QStringLiteral("(no stack)");
            b.color = QColor(0xa0, 0xa0, 0xa0);
        }
        b.end = 0;
        bands_.bands.insert(bands_.bands.begin(), std::move(b));  // first in the legend
    }
}

void TimelinePlot::updateBandGraphs(const BandRequest& req) {
    // By module, a highlighted group keeps its colour and the other bands fade.
    int64_t litBand = -1;
    if (mode_ == ViewMode::Module && req.modules && !highlighted_.empty())
        litBand = int64_t(req.modules->band_of[highlighted_.front()]);
    const BandFade fade{litBand, palette().color(QPalette::Base)};
    const size_t n = bands_.bands.size();
    growBandGraphs(n);
    plot_->legend->clearItems();
    styleBandGraphs(fade);
    std::vector<BandLayer::Style> styles;
    styles.reserve(n);
    for (const Band& b : bands_.bands) {
        QColor color = fade.faded(b) ? fade.apply(b.color) : b.color;
        if (b.inferred) color = color.lighter(115);
        styles.push_back({color.rgb(), b.inferred});
    }
    p_->bandLayer->setBands(&bands_, std::move(styles));
    // Legend: top band first, as stacked.
    for (size_t k = 0; k < n; ++k) {
        QCPGraph* g = p_->bandGraphs[k];
        if (!g->name().isEmpty()) g->addToLegend();
    }
}

// Grow the graph pool; graphs are reused from frame to frame.
void TimelinePlot::growBandGraphs(size_t n) {
    while (p_->bandGraphs.size() < n) {
        QCPGraph* g =
            plot_->addGraph(p_->main->axis(QCPAxis::atBottom), p_->main->axis(QCPAxis::atLeft));
        g->setLineStyle(QCPGraph::lsStepLeft);
        g->setAntialiased(false);
        g->setAntialiasedFill(false);
        p_->bandGraphs.push_back(g);
    }
}

// The graphs hold no data: the band layer draws the bands; a graph names its
// band in the legend, top band first, as stacked. The graphs past the bands
// are hidden.
void TimelinePlot::styleBandGraphs(const BandFade& fade) {
    const size_t n = bands_.bands.size();
    for (size_t k = 0; k < p_->bandGraphs.size(); ++k) {
        QCPGraph* g = p_->bandGraphs[k];
        if (k >= n) {
            g->data()->clear();
            g->setVisible(false);
            continue;
        }
        const Band& b = bands_.bands[n - 1 - k];
        // The band layer draws the band; the graph, without data, names it
        // in the legend.
        g->data()->clear();
        // Inferred categories and modules: paler and hatched, in the plot and the legend.
        QColor color = b.color;
        if (fade.faded(b)) color = fade.apply(color);
        g->setBrush(b.inferred ? QBrush(color.lighter(115), Qt::Dense2Pattern) : QBrush(color));
        // No outline: stroking thousands of step segments costs more than
        // filling them, and adjacent fills already show the band edges.
        g->setPen(Qt::NoPen);
        g->setName(b.label);
        g->setVisible(true);
    }
}

// The reserved line, and on a predicted run its predicted total, each in the
// legend when it has data.
void TimelinePlot::updateReservedAndPredictedLines() {
    QVector<QCPGraphData> rdata(qsizetype(bands_.reserved_x.size()));
    for (size_t i = 0; i < bands_.reserved_x.size(); ++i)
        rdata[qsizetype(i)] = QCPGraphData(bands_.reserved_x[i], bands_.reserved_y[i]);
    p_->reserved->data()->set(rdata, true);
    const bool predicted = isPredicted();
    // A predicted run's reserved bytes are the caching-allocator model's
    // (modelled_trace.h): dashed and named so, like its other predicted figures.
    QPen reservedPen = p_->reserved->pen();
    reservedPen.setStyle(predicted ? Qt::DashLine : Qt::SolidLine);
    p_->reserved->setPen(reservedPen);
    p_->reserved->setName(predicted ? QStringLiteral("reserved (predicted: allocator model)")
                                    : QStringLiteral("reserved"));
    if (!rdata.isEmpty()) p_->reserved->addToLegend();
    QVector<QCPGraphData> pdata;
    if (predicted) {
        pdata.resize(qsizetype(std::min(bands_.xs.size(), bands_.total.size())));
        for (qsizetype i = 0; i < pdata.size(); ++i)
            pdata[i] = QCPGraphData(bands_.xs[size_t(i)], bands_.total[size_t(i)]);
    }
    p_->predicted->data()->set(pdata, true);
    p_->predicted->setVisible(predicted);
    if (predicted) p_->predicted->addToLegend();
}

void TimelinePlot::applyPalette() {
    const QPalette pal = palette();
    applyPlotPalette(plot_, pal);
    // One pixel, cosmetic and aliased: the raster engine's fast line path
    // takes only pens at most a pixel wide. At 1.5 px every frame stroked the
    // step line as polygons, a tenth of the frames' profile samples.
    QPen reservedPen(reservedColor(pal), 1, isPredicted() ? Qt::DashLine : Qt::SolidLine);
    reservedPen.setCosmetic(true);
    p_->reserved->setPen(reservedPen);
    p_->reserved->setAntialiased(false);
    QColor hatch = pal.color(QPalette::WindowText);
    hatch.setAlpha(140);
    p_->predicted->setBrush(QBrush(hatch, Qt::BDiagPattern));
    QPen edge(pal.color(QPalette::WindowText), 1.5, Qt::DashLine);
    edge.setCosmetic(true);
    p_->predicted->setPen(edge);
    p_->peak->setColor(pal.color(QPalette::WindowText));
    p_->message->setColor(pal.color(QPalette::WindowText));
    p_->message->setBrush(pal.color(QPalette::Base));
    p_->message->setPen(QPen(pal.color(QPalette::Mid)));
    p_->allocations->setColors(pal.color(QPalette::Base), pal.color(QPalette::Highlight));
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void TimelinePlot::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) applyPalette();
}

QPointF TimelinePlot::pixelToCoord(const QPoint& pixel) const {
    return {p_->main->axis(QCPAxis::atBottom)->pixelToCoord(pixel.x()),
            p_->main->axis(QCPAxis::atLeft)->pixelToCoord(pixel.y())};
}

QPoint TimelinePlot::coordToPixel(double x, double y) const {
    return QPoint(int(std::lround(p_->main->axis(QCPAxis::atBottom)->coordToPixel(x))),
                  int(std::lround(p_->main->axis(QCPAxis::atLeft)->coordToPixel(y))));
}

std::optional<uint32_t> TimelinePlot::allocationAt(double x, double y) const {
    const DeviceTimeline* tl = timeline();
    if (!tl) return std::nullopt;
    // By allocation the drawn layout answers, so the hit is what is drawn.
    switch (mode_) {
        case ViewMode::Module: {
            const ModuleStack* stack = moduleStack_.get();  // built by the last rebuild
            return stack ? moduleAllocationAt(*tl, *stack, map_.inverse(x), y) : std::nullopt;
        }
        case ViewMode::Allocation:
            return memscope::allocationAt(*tl, p_->allocations->layout(), map_.inverse(x), y);
        case ViewMode::Category:
            break;
    }
    return memscope::allocationAt(*tl, ViewMode::Category, map_.inverse(x), y);
}

QString TimelinePlot::hoverTextAt(double x, double y) const {
    const DeviceTimeline* tl = timeline();
    const Trace* trace = run_ ? run_->trace(ref_) : nullptr;
    if (!tl || !trace) return {};
    const int64_t rx = map_.inverse(x);
    const QString head =
        QStringLiteral("%1   live %2   reserved %3")
            .arg(formatRunTime(*trace, *tl, rx), formatBytes(double(tl->live.valueAt(rx))),
                 formatBytes(double(tl->reserved.valueAt(rx))));
    const auto hit = allocationAt(x, y);
    if (!hit) return head;
    const AllocationInterval& a = tl->intervals[*hit];
    QString text = head + QLatin1Char('\n') + allocationText(*trace, *tl, a, 4);
    // By allocation the site heads the text: the user's own line of code is
    // what tells one band from its neighbours.
    const std::string site = siteLabel(*trace, a.stack);
    if (mode_ == ViewMode::Allocation && !site.empty())
        text = toQString(site) + QLatin1Char('\n') + text;
    // The module heads it in every mode: "which layer holds it" is the first
    // question, and the one a stack of frames answers slowest.
    const ModuleAttribution* attribution = run_->moduleAttribution(ref_);
    const QString module = attribution ? allocationModuleText(*trace, *attribution, a) : QString();
    return module.isEmpty() ? text : QStringLiteral("module: ") + module + QLatin1Char('\n') + text;
}

void TimelinePlot::onMousePress(QMouseEvent* e) {
    if (!zoom_) return;
    pressPos_ = e->pos();
    press0_ = zoom_->begin();
    press1_ = zoom_->end();
    pressed_ = e->button() == Qt::LeftButton;
    moved_ = false;
    boxing_ = pressed_ && (boxMode_ || (e->modifiers() & Qt::ShiftModifier));
    if (boxing_) {
        rubber_->setGeometry(QRect(pressPos_, QSize()));
        rubber_->show();
    }
}

void TimelinePlot::onMouseMove(QMouseEvent* e) {
    if (pressed_ && zoom_) {
        if ((e->pos() - pressPos_).manhattanLength() > 3) moved_ = true;
        if (boxing_) {
            rubber_->setGeometry(QRect(pressPos_, e->pos()).normalized());
        } else if (moved_) {
            const double w = std::max(1, p_->main->width());
            const double dx = double(e->pos().x() - pressPos_.x()) / w * (press1_ - press0_);
            zoom_->setRange(press0_ - dx, press1_ - dx);
        }
        return;
    }
    // Hover work is coalesced to once per event-loop pass: a fast mouse must
    // not queue one liveAt() per pixel.
    hoverPos_ = e->pos();
    if (!hoverPending_) {
        hoverPending_ = true;
        QTimer::singleShot(0, this, &TimelinePlot::updateHover);
    }
}

void TimelinePlot::updateHover() {
    hoverPending_ = false;
    if (!zoom_ || !p_->main->rect().contains(hoverPos_)) {
        if (hovered_) {
            hovered_.reset();
            updateHighlight();
        }
        emit hoverChanged(QString());
        return;
    }
    const QPointF c = pixelToCoord(hoverPos_);
    if (mode_ == ViewMode::Allocation) {
        const auto hit = allocationAt(c.x(), c.y());
        if (hit != hovered_) {
            hovered_ = hit;
            updateHighlight();
        }
    }
    zoom_->setCursor(c.x());
    emit cursorMoved(map_.inverse(c.x()));
    QString text = hoverTextAt(c.x(), c.y());
    const QString phases = phasesAt(*phases_, map_, c.x());
    if (!phases.isEmpty()) text += QStringLiteral("\nin: ") + phases;
    emit hoverChanged(text);
}

void TimelinePlot::onMouseRelease(QMouseEvent* e) {
    if (!pressed_ || !zoom_) return;
    pressed_ = false;
    if (boxing_) {
        rubber_->hide();
        boxing_ = false;
        if (moved_) {
            const double a = pixelToCoord(pressPos_).x(), b = pixelToCoord(e->pos()).x();
            zoom_->setRange(std::min(a, b), std::max(a, b), true);
        }
        return;
    }
    if (!moved_ && p_->main->rect().contains(e->pos())) {
        const QPointF c = pixelToCoord(e->pos());
        if (const auto hit = allocationAt(c.x(), c.y())) {
            setPinned(*hit);
            emit allocationClicked(*hit);
        }
    }
}

void TimelinePlot::onWheel(QWheelEvent* e) {
    if (!zoom_) return;
    const double steps = e->angleDelta().y() / 120.0;
    const double center = p_->main->axis(QCPAxis::atBottom)->pixelToCoord(e->position().x());
    zoom_->zoomBy(std::pow(0.8, steps), center);
    e->accept();
}

bool TimelinePlot::exportTo(const QString& path, QString* error) {
    rebuild();
    return exportPlot(plot_, path, error);
}

}  // namespace memscope::gui
