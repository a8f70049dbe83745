#include "run_view/run_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFontDatabase>
#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QVBoxLayout>
#include <algorithm>

#include "common/format.h"
#include "memscope/analysis/compare.h"
#include "memscope/analysis/oom_report.h"
#include "memscope/base/units.h"
#include "memscope/view/allocation_order.h"
#include "run_view/overview_strip.h"
#include "run_view/timeline_plot.h"
#include "run_view/zoom_state.h"

namespace memscope::gui {

RunView::RunView(RunPtr run, QWidget* parent) : QWidget(parent), run_(std::move(run)) {
    zoom_ = new ZoomState(this);
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout;
    devices_ = new QComboBox(this);
    for (DeviceRef r : run_->devices())
        devices_->addItem(run_->deviceLabel(r),
                          QVariant::fromValue(QPoint(r.part, r.device_index)));
    mode_ = new QComboBox(this);
    // In ViewMode's order: an entry's index is its mode.
    mode_->addItem(QStringLiteral("Stack by category"));
    mode_->addItem(QStringLiteral("Stack by allocation"));
    mode_->addItem(QStringLiteral("Stack by module"));
    grouping_ = new QComboBox(this);
    grouping_->setToolTip(
        QStringLiteral("How modules are grouped, in the plot and the by-module table"));
    auto* peak = new QPushButton(QStringLiteral("Go to peak"), this);
    oomButton_ = new QPushButton(QStringLiteral("Go to OOM"), this);
    oomButton_->setVisible(false);
    auto* home = new QPushButton(QStringLiteral("Reset zoom"), this);
    followEnd_ = new QCheckBox(QStringLiteral("Follow end"), this);
    followEnd_->setToolTip(
        QStringLiteral("Keep the end of the recording in view as new data arrives"));
    followEnd_->setChecked(true);
    followEnd_->setVisible(false);
    bar->addWidget(new QLabel(QStringLiteral("Device:"), this));
    bar->addWidget(devices_);
    bar->addWidget(mode_);
    bar->addWidget(grouping_);
    bar->addStretch(1);
    bar->addWidget(followEnd_);
    bar->addWidget(oomButton_);
    bar->addWidget(peak);
    bar->addWidget(home);
    layout->addLayout(bar);

    // Why the run ran out of memory, above the plot: the commonest reason a
    // snapshot is taken. The headline and the verdict always; the rest
    // (composition, sites) behind "Details".
    auto* banner = new QFrame(this);
    banner->setFrameShape(QFrame::StyledPanel);
    banner->setStyleSheet(
        QStringLiteral("QFrame { border: 1px solid #d02020; border-radius: 3px; }"
                       "QLabel { border: none; }"));
    auto* bannerLayout = new QVBoxLayout(banner);
    bannerLayout->setContentsMargins(6, 4, 6, 4);
    auto* headRow = new QHBoxLayout;
    oomHead_ = new QLabel(banner);
    oomHead_->setWordWrap(true);
    oomHead_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* details = new QPushButton(QStringLiteral("Details"), banner);
    details->setCheckable(true);
    headRow->addWidget(oomHead_, 1);
    headRow->addWidget(details, 0, Qt::AlignTop);
    bannerLayout->addLayout(headRow);
    oomDetails_ = new QLabel(banner);
    oomDetails_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    oomDetails_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    oomDetails_->setVisible(false);
    bannerLayout->addWidget(oomDetails_);
    connect(details, &QPushButton::toggled, oomDetails_, &QWidget::setVisible);
    oomBanner_ = banner;
    oomBanner_->setVisible(false);
    layout->addWidget(oomBanner_);

    plot_ = new TimelinePlot(this);
    plot_->setZoomState(zoom_);
    layout->addWidget(plot_, 1);
    overview_ = new OverviewStrip(this);
    overview_->setZoomState(zoom_);
    layout->addWidget(overview_);
    hover_ = new QLabel(this);
    hover_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    hover_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    hover_->setMinimumHeight(hover_->fontMetrics().lineSpacing() * 5);
    hover_->setText(
        QStringLiteral("Hover the plot for the allocation under the cursor; click to pin it. "
                       "Wheel: zoom, drag: pan, Shift+drag: box zoom, Home: reset."));
    hover_->setWordWrap(true);
    layout->addWidget(hover_);

    connect(devices_, &QComboBox::currentIndexChanged, this, [this](int i) {
        const QPoint p = devices_->itemData(i).toPoint();
        setDevice({p.x(), p.y()});
    });
    connect(mode_, &QComboBox::currentIndexChanged, this,
            [this](int i) { plot_->setViewMode(ViewMode(std::clamp(i, 0, 2))); });
    // Only the user's own choice is remembered for the run (activated, not
    // currentIndexChanged: the default set below is not a choice).
    connect(mode_, &QComboBox::activated, this, [this](int i) {
        QSettings().setValue(stackModeKey(),
                             QString::fromUtf8(toString(ViewMode(std::clamp(i, 0, 2))).data()));
    });
    connect(grouping_, &QComboBox::currentIndexChanged, this, [this](int i) {
        if (i < 0) return;
        const QPoint g = grouping_->itemData(i).toPoint();
        const ModuleGroupingSpec spec{ModuleGrouping(g.x()), uint16_t(g.y())};
        plot_->setModuleGrouping(spec);
        emit moduleGroupingChanged(spec);
    });
    connect(peak, &QPushButton::clicked, this, &RunView::goToPeak);
    connect(oomButton_, &QPushButton::clicked, this, [this] { goToOom(); });
    connect(home, &QPushButton::clicked, zoom_, &ZoomState::reset);
    // While following, the user's own zoom or pan decides whether the end is
    // followed: on when the view reaches the end, off when it leaves it out.
    connect(zoom_, &ZoomState::rangeChanged, this, [this](double x0, double x1) {
        if (!following_ || updating_) return;
        const double tolerance = (x1 - x0) * 1e-6;
        followEnd_->setChecked(x1 >= zoom_->fullEnd() - tolerance);
    });
    connect(followEnd_, &QCheckBox::clicked, this, [this](bool on) {
        if (!on) return;
        const double width = zoom_->end() - zoom_->begin();
        const QSignalBlocker block(followEnd_);
        zoom_->setRange(zoom_->fullEnd() - width, zoom_->fullEnd());
    });
    connect(plot_, &TimelinePlot::hoverChanged, this, [this](const QString& t) {
        if (!t.isEmpty()) hover_->setText(t);
    });
    connect(plot_, &TimelinePlot::allocationClicked, this,
            [this](uint32_t i) { emit allocationPinned(run_, ref_, i); });
    connect(plot_, &TimelinePlot::cursorMoved, this,
            [this](int64_t x) { emit cursorMoved(run_, ref_, x); });

    if (run_->devices().empty())
        hover_->setText(QStringLiteral(
            "This trace holds no allocator events or segments: there is nothing to draw."));
    // A run that ran out of memory opens on its first OOM; others on the
    // device with the highest peak.
    const std::optional<DeviceRef> oomDevice = run_->firstOomDevice();
    const DeviceRef first = oomDevice.value_or(run_->busiestDevice());
    for (int i = 0; i < devices_->count(); ++i)
        if (devices_->itemData(i).toPoint() == QPoint(first.part, first.device_index))
            devices_->setCurrentIndex(i);
    setDevice(first);
    // The mode the user chose for this run last time, else what suits the
    // file: by category where it recorded categories, by allocation otherwise.
    const QString remembered = QSettings().value(stackModeKey()).toString();
    std::optional<ViewMode> mode = viewModeFromString(remembered.toStdString());
    if (!mode)
        if (const DeviceTimeline* tl = run_->timeline(first)) mode = defaultViewMode(*tl);
    setViewMode(mode.value_or(ViewMode::Category));
    if (oomDevice) goToOom();
}

QString RunView::stackModeKey() const {
    return QStringLiteral("stackMode/") + run_->paths.join(QLatin1Char('|'));
}

void RunView::setDevice(DeviceRef ref) {
    const DeviceTimeline* tl = run_->timeline(ref);
    const Trace* trace = run_->trace(ref);
    if (!tl || !trace) return;
    const bool changed = !(ref == ref_) || !plot_->timeline();
    ref_ = ref;
    const RunRef rr{trace, tl};
    const Alignment a = alignRuns(std::span(&rr, 1), AlignMode::Time).front();
    const QString unit = trace->metadata.time_base == TimeBase::EventIndex
                             ? QStringLiteral("event index")
                             : QStringLiteral("seconds since start");
    const auto [x0, x1] = fullRangeOf(*tl, a.map);
    zoom_->setFullRange(x0, x1);
    plot_->setSource(run_, ref_, a.map, unit);
    overview_->setSource(run_, ref_, a.map);
    fillGroupings();
    showOomReport();
    if (changed) emit deviceChanged();
}

QString RunView::hoverText() const {
    return hover_->text();
}

ViewMode RunView::viewMode() const {
    return plot_->viewMode();
}

void RunView::setViewMode(ViewMode mode) {
    mode_->setCurrentIndex(int(mode));
}

ModuleGroupingSpec RunView::moduleGrouping() const {
    return plot_->moduleGrouping();
}

void RunView::setModuleGrouping(ModuleGroupingSpec spec) {
    for (int i = 0; i < grouping_->count(); ++i) {
        const QPoint g = grouping_->itemData(i).toPoint();
        if (g.x() == int(spec.by) && (spec.by != ModuleGrouping::Depth || g.y() == spec.depth)) {
            grouping_->setCurrentIndex(i);
            return;
        }
    }
}

void RunView::highlightModule(std::optional<ModuleId> group) {
    if (group && plot_->viewMode() == ViewMode::Category) setViewMode(ViewMode::Module);
    plot_->setModuleHighlight(group);
}

void RunView::highlightAllocations(std::vector<uint32_t> intervals) {
    if (!intervals.empty() && plot_->viewMode() != ViewMode::Allocation)
        setViewMode(ViewMode::Allocation);
    plot_->setHighlightedAllocations(std::move(intervals));
}

void RunView::fillGroupings() {
    const Trace* trace = run_->trace(ref_);
    const ModuleAttribution* attribution = run_->moduleAttribution(ref_);
    const bool has =
        attribution && !attribution->empty() && attribution->source() != ModuleSource::None;
    grouping_->setVisible(has);
    uint16_t deepest = 1;
    if (trace)
        for (const Module& m : trace->modules.modules) deepest = std::max(deepest, m.depth);
    const ModuleGroupingSpec was = plot_->moduleGrouping();
    const QSignalBlocker block(grouping_);
    grouping_->clear();
    grouping_->addItem(QStringLiteral("Modules by layer"), QPoint(int(ModuleGrouping::Layer), 1));
    // Deeper than a handful of levels, "exact" says the same more plainly.
    for (uint16_t d = 1; d <= std::min<uint16_t>(deepest, 6); ++d)
        grouping_->addItem(QStringLiteral("Modules at depth %1").arg(d),
                           QPoint(int(ModuleGrouping::Depth), d));
    grouping_->addItem(QStringLiteral("Modules exactly"), QPoint(int(ModuleGrouping::Exact), 1));
    grouping_->setCurrentIndex(0);
    for (int i = 0; i < grouping_->count(); ++i) {
        const QPoint g = grouping_->itemData(i).toPoint();
        if (g.x() == int(was.by) && (was.by != ModuleGrouping::Depth || g.y() == was.depth))
            grouping_->setCurrentIndex(i);
    }
    // A depth this device's modules lack falls back to layers.
    const QPoint g = grouping_->currentData().toPoint();
    plot_->setModuleGrouping({ModuleGrouping(g.x()), uint16_t(g.y())});
}

void RunView::setBoxZoom(bool on) {
    plot_->setBoxZoomMode(on);
}

double RunView::peakX() const {
    const DeviceTimeline* tl = plot_->timeline();
    return tl ? plot_->axisMap().forward(tl->peak.time) : 0.0;
}

void RunView::centreOn(double x) {
    const DeviceTimeline* tl = plot_->timeline();
    // Zoomed in on a trace of one moment, the view would show 5% of an axis
    // unit around it (a -0.02..0.02 axis) and nothing more: it stays whole.
    if (tl && tl->start == tl->end)
        zoom_->reset();
    else
        zoom_->centerOn(x, std::max((zoom_->fullEnd() - zoom_->fullBegin()) * 0.05, 1e-12));
    zoom_->setCursor(x);
}

void RunView::goToPeak() {
    const DeviceTimeline* tl = plot_->timeline();
    if (!tl) return;
    const double x = peakX();
    centreOn(x);
    hover_->setText(plot_->hoverTextAt(x, double(tl->peak.bytes) * 0.999));
    emit cursorMoved(run_, ref_, tl->peak.time);
}

void RunView::showOomReport() {
    const Trace* trace = run_->trace(ref_);
    const std::span<const OomReport> ooms = run_->ooms(ref_);
    oomBanner_->setVisible(trace && !ooms.empty());
    oomButton_->setVisible(!plot_->oomMarks().empty());
    if (!trace || ooms.empty()) return;
    const OomReport& r = ooms.front();
    const std::vector<std::string> lines = oomReportLines(*trace, r);
    QString head = toQString(lines.front());
    if (ooms.size() > 1)
        head += QStringLiteral("  (the first of %1 reported)").arg(qsizetype(ooms.size()));
    oomHead_->setText(
        QStringLiteral("<b>%1</b><br>%2")
            .arg(head.toHtmlEscaped(), toQString(describeVerdict(r)).toHtmlEscaped()));
    QStringList all;
    for (const std::string& l : lines) all << toQString(l);
    // What would have fit the first OOM: the caching-allocator model's answer,
    // worked out when the run opened (device_view.h).
    if (const DeviceView* v = run_->view(ref_); v && v->first_oom_alternatives && !r.endState())
        for (const std::string& l : oomAlternativeLines(*v->first_oom_alternatives))
            all << toQString(l);
    oomDetails_->setText(all.join(QLatin1Char('\n')));
}

QString RunView::oomText() const {
    return run_->ooms(ref_).empty() ? QString() : oomDetails_->text();
}

bool RunView::goToOom() {
    const DeviceTimeline* tl = plot_->timeline();
    const std::span<const OomReport> ooms = run_->ooms(ref_);
    const auto it =
        std::find_if(ooms.begin(), ooms.end(), [](const OomReport& r) { return !r.endState(); });
    if (!tl || it == ooms.end()) return false;
    centreOn(plot_->axisMap().forward(it->time));
    emit cursorMoved(run_, ref_, it->time);
    return true;
}

void RunView::showAllocation(uint32_t interval) {
    const DeviceTimeline* tl = plot_->timeline();
    if (!tl || interval >= tl->intervals.size()) return;
    const AllocationInterval& a = tl->intervals[interval];
    const AxisMap& m = plot_->axisMap();
    const double x0 = m.forward(a.start),
                 x1 = m.forward(a.free_event == kNoEvent ? tl->end : a.end);
    const double pad = std::max((x1 - x0) * 0.25, (zoom_->fullEnd() - zoom_->fullBegin()) * 0.002);
    zoom_->setRange(x0 - pad, x1 + pad, true);
    plot_->setPinned(interval);
    emit allocationPinned(run_, ref_, interval);
}

void RunView::setFollowing(bool on) {
    following_ = on;
    followEnd_->setVisible(on);
    if (on) followEnd_->setChecked(zoom_->end() >= zoom_->fullEnd());
}

bool RunView::followsEnd() const {
    return following_ && followEnd_->isChecked();
}

void RunView::setFollowEnd(bool on) {
    followEnd_->setChecked(on);
    if (on) {
        const double width = zoom_->end() - zoom_->begin();
        zoom_->setRange(zoom_->fullEnd() - width, zoom_->fullEnd());
    }
}

void RunView::updateRun(RunPtr run) {
    if (!run) return;
    const double x0 = zoom_->begin(), x1 = zoom_->end();
    const bool whole = x0 <= zoom_->fullBegin() && x1 >= zoom_->fullEnd();
    const bool toEnd = followsEnd();
    const double cursor = zoom_->cursor();
    const bool hadTimeline = plot_->timeline() != nullptr;
    updating_ = true;
    run_ = std::move(run);
    // The devices as they are now: one may have appeared.
    DeviceRef ref = ref_;
    {
        const QSignalBlocker block(devices_);
        devices_->clear();
        const std::vector<DeviceRef> refs = run_->devices();
        if (std::find(refs.begin(), refs.end(), ref) == refs.end() && !refs.empty())
            ref = run_->busiestDevice();
        for (DeviceRef r : refs) {
            devices_->addItem(run_->deviceLabel(r),
                              QVariant::fromValue(QPoint(r.part, r.device_index)));
            if (r == ref) devices_->setCurrentIndex(devices_->count() - 1);
        }
    }
    if (hadTimeline) ref_ = DeviceRef{-1, -1};  // setDevice shows it anew
    setDevice(ref);
    // setDevice reset the view to the whole run: put it back (a view that
    // had nothing to show yet shows the whole run).
    if (hadTimeline && toEnd && !whole) {
        const double width = x1 - x0;
        zoom_->setRange(zoom_->fullEnd() - width, zoom_->fullEnd());
    } else if (hadTimeline && !toEnd) {
        zoom_->setRange(x0, x1);
    }
    zoom_->setCursor(cursor);
    updating_ = false;
}

}  // namespace memscope::gui
