#include "compare/compare_view.h"

#include <QComboBox>
#include <QFile>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QScrollArea>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "common/format.h"
#include "common/plot_export.h"
#include "compare/allocation_diff_panel.h"
#include "compare/composition_chart.h"
#include "compare/difference_plot.h"
#include "compare/line_compare_panel.h"
#include "compare/module_compare.h"
#include "compare/policy_map.h"
#include "compare/summary_model.h"
#include "compare/theory_charts.h"
#include "memscope/base/units.h"
#include "run_view/timeline_plot.h"
#include "run_view/zoom_state.h"
#include "window/app_options.h"

namespace memscope::gui {

namespace {

QString axisLabel(AlignMode mode, const QString& unit) {
    switch (mode) {
        case AlignMode::Time:
            return unit == QLatin1String("s") ? QStringLiteral("seconds since start")
                                              : QStringLiteral("event index");
        case AlignMode::Step:
            return QStringLiteral("training step");
        case AlignMode::Phase:
            return QStringLiteral("training step (forward/backward aligned)");
    }
    return {};
}

}  // namespace

CompareView::CompareView(QWidget* parent) : QWidget(parent) {
    zoom_ = new ZoomState(this);
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout;
    alignBox_ = new QComboBox(this);
    alignBox_->addItems({QStringLiteral("Align by time"), QStringLiteral("Align by step"),
                         QStringLiteral("Align by phase")});
    layoutBox_ = new QComboBox(this);
    layoutBox_->addItems({QStringLiteral("Grid"), QStringLiteral("Stacked")});
    stackBox_ = new QComboBox(this);
    stackBox_->addItems({QStringLiteral("Stack by category"), QStringLiteral("Stack by allocation"),
                         QStringLiteral("Stack by module")});
    baselineBox_ = new QComboBox(this);
    scopeBox_ = new QComboBox(this);
    scopeBox_->addItem(QStringLiteral("Peak of the whole run"));
    for (TrainingPhase p : kAllTrainingPhases)
        scopeBox_->addItem(QStringLiteral("Peak in %1").arg(toQString(toString(p))));
    bar->addWidget(alignBox_);
    bar->addWidget(layoutBox_);
    bar->addWidget(stackBox_);
    bar->addWidget(new QLabel(QStringLiteral("Baseline:"), this));
    bar->addWidget(baselineBox_);
    bar->addWidget(scopeBox_);
    bar->addStretch(1);
    layout->addLayout(bar);
    notes_ = new QLabel(this);
    notes_->setVisible(false);
    layout->addWidget(notes_);

    auto* split = new QSplitter(Qt::Vertical, this);
    // Stacked runs scroll rather than shrink below a readable height.
    auto* scroll = new QScrollArea(split);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    grid_ = new QWidget(scroll);
    gridLayout_ = new QGridLayout(grid_);
    gridLayout_->setContentsMargins(0, 0, 0, 0);
    gridLayout_->setSpacing(4);
    scroll->setWidget(grid_);
    split->addWidget(scroll);

    tabs_ = new QTabWidget(split);
    summary_ = new SummaryTableModel(this);
    table_ = new QTableView(tabs_);
    table_->setModel(summary_);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->verticalHeader()->hide();
    tabs_->addTab(table_, QStringLiteral("Summary"));
    composition_ = new CompositionChart(tabs_);
    tabs_->addTab(composition_, QStringLiteral("Peak composition"));
    policyMap_ = new PolicyMap(tabs_);
    tabs_->addTab(policyMap_, QStringLiteral("Policy map"));
    connect(policyMap_, &PolicyMap::runActivated, this, [this](int entry) {
        const auto& entries = summary_->entries();
        if (entry >= 0 && size_t(entry) < entries.size())
            emit openRunRequested(entries[size_t(entry)].run);
    });
    theory_ = new TheoryCharts(tabs_);
    tabs_->addTab(theory_, QStringLiteral("Theory"));
    auto* diffPage = new QWidget(tabs_);
    auto* diffLayout = new QVBoxLayout(diffPage);
    auto* diffBar = new QHBoxLayout;
    diffA_ = new QComboBox(diffPage);
    diffB_ = new QComboBox(diffPage);
    diffBar->addWidget(diffA_);
    diffBar->addWidget(new QLabel(QStringLiteral("minus"), diffPage));
    diffBar->addWidget(diffB_);
    diffBar->addStretch(1);
    diffLayout->addLayout(diffBar);
    diff_ = new DifferencePlot(diffPage);
    diff_->setZoomState(zoom_);
    diffLayout->addWidget(diff_, 1);
    tabs_->addTab(diffPage, QStringLiteral("Difference"));
    modules_ = new ModuleComparePanel(tabs_);
    tabs_->addTab(modules_, QStringLiteral("By module"));
    allocations_ = new AllocationDiffPanel(tabs_);
    tabs_->addTab(allocations_, QStringLiteral("Allocations"));
    connect(allocations_, &AllocationDiffPanel::highlightRequested, this,
            [this](int a, std::vector<uint32_t> ia, int b, std::vector<uint32_t> ib) {
                // The other runs take no part in A against B.
                RunHighlights perRun(runs_.size());
                if (size_t(a) < perRun.size()) perRun[size_t(a)] = std::move(ia);
                if (size_t(b) < perRun.size()) perRun[size_t(b)] = std::move(ib);
                highlightAllocations(perRun);
            });
    lines_ = new LineComparePanel(tabs_);
    tabs_->addTab(lines_, QStringLiteral("Lines"));
    connect(lines_, &LineComparePanel::highlightRequested, this,
            [this](const std::vector<std::vector<uint32_t>>& perRun) {
                highlightAllocations(RunHighlights(perRun.begin(), perRun.end()));
            });
    split->addWidget(tabs_);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 1);
    split->setSizes({700, 260});
    layout->addWidget(split, 1);
    hover_ = new QLabel(this);
    hover_->setWordWrap(true);
    hover_->setMinimumHeight(hover_->fontMetrics().lineSpacing() * 3);
    layout->addWidget(hover_);

    connect(alignBox_, &QComboBox::currentIndexChanged, this,
            [this](int i) { setAlignMode(AlignMode(i)); });
    connect(layoutBox_, &QComboBox::currentIndexChanged, this,
            [this](int i) { setGridLayout(i == 0); });
    connect(stackBox_, &QComboBox::currentIndexChanged, this,
            [this](int i) { setViewMode(ViewMode(std::clamp(i, 0, 2))); });
    connect(baselineBox_, &QComboBox::currentIndexChanged, this, [this](int i) {
        if (i >= 0) setBaseline(i);
    });
    connect(scopeBox_, &QComboBox::currentIndexChanged, this, [this](int i) {
        setScope(i <= 0 ? PeakScope{} : PeakScope{kAllTrainingPhases[size_t(i - 1)]});
    });
    connect(diffA_, &QComboBox::currentIndexChanged, this, &CompareView::updateDifference);
    connect(diffB_, &QComboBox::currentIndexChanged, this, &CompareView::updateDifference);
}

QString CompareView::hoverText() const {
    return hover_->text();
}

void CompareView::setRuns(std::vector<RunPtr> runs) {
    runs_ = std::move(runs);
    for (TimelinePlot* p : plots_) {
        // Queued signals of an old plot must not reach lambdas that index the new runs.
        p->disconnect(this);
        p->hide();
        p->deleteLater();
    }
    plots_.clear();
    devices_.clear();
    // Runs of equal names (two runs of one script) told apart, as in `compare`.
    names_ = distinctNames(runs_);
    const QSignalBlocker b1(baselineBox_), b2(diffA_), b3(diffB_);
    baselineBox_->clear();
    diffA_->clear();
    diffB_->clear();
    bool predictedLegend = false;
    for (size_t i = 0; i < runs_.size(); ++i) {
        devices_.push_back(runs_[i]->busiestDevice());
        auto* plot = new TimelinePlot(grid_);
        plot->setMinimumHeight(260);
        plot->setZoomState(zoom_);
        // One legend is enough, colours are shared; the first predicted run's
        // plot shows one too, for its hatching.
        const Trace* trace = runs_[i]->trace(devices_.back());
        const bool firstPredicted = trace && trace->prediction && !predictedLegend;
        predictedLegend = predictedLegend || firstPredicted;
        plot->setLegendVisible(i == 0 || firstPredicted);
        plot->setViewMode(mode_);
        connect(plot, &TimelinePlot::hoverChanged, this, [this, i](const QString& t) {
            if (!t.isEmpty())
                hover_->setText(names_[qsizetype(i)] + QStringLiteral(": ") +
                                QString(t).replace(QLatin1Char('\n'), QStringLiteral("   ")));
        });
        connect(plot, &TimelinePlot::cursorMoved, this,
                [this, i](int64_t x) { emit cursorMoved(runs_[i], devices_[i], x); });
        connect(plot, &TimelinePlot::allocationClicked, this,
                [this, i](uint32_t a) { emit allocationPinned(runs_[i], devices_[i], a); });
        plots_.push_back(plot);
        baselineBox_->addItem(names_[qsizetype(i)]);
        diffA_->addItem(names_[qsizetype(i)]);
        diffB_->addItem(names_[qsizetype(i)]);
    }
    // The full-save policy is the natural baseline when it is among the runs
    // (core's rule, as the CLI's compare applies it, by the runs' own names).
    std::vector<CompareInput> inputs;
    for (size_t i = 0; i < runs_.size(); ++i)
        inputs.push_back({{},
                          runs_[i]->name.toStdString(),
                          {runs_[i]->trace(devices_[i]), runs_[i]->timeline(devices_[i])}});
    baseline_ = int(defaultBaseline(inputs));
    baselineBox_->setCurrentIndex(baseline_);
    diffB_->setCurrentIndex(baseline_);
    if (runs_.size() > 1) diffA_->setCurrentIndex(baseline_ == 0 ? 1 : 0);
    relayout();
    realign();
}

void CompareView::relayout() {
    while (gridLayout_->count() > 0) delete gridLayout_->takeAt(0);
    const int n = int(plots_.size());
    const int cols = gridMode_ ? std::max(1, int(std::ceil(std::sqrt(double(n))))) : 1;
    for (int i = 0; i < n; ++i) gridLayout_->addWidget(plots_[size_t(i)], i / cols, i % cols);
}

void CompareView::realign() {
    // The table (core's buildCompareTable) holds each run's alignment and summary.
    std::vector<CompareEntry> entries;
    for (size_t i = 0; i < runs_.size(); ++i)
        entries.push_back({runs_[i], devices_[i], {}, names_[qsizetype(i)]});
    summary_->setRuns(std::move(entries), baseline_, align_, scope_);
    const CompareTable& table = summary_->table();
    alignments_.clear();
    double x0 = 0, x1 = 0, ymax = 1;
    bool first = true;
    QStringList fellBack;
    for (size_t i = 0; i < runs_.size(); ++i) {
        alignments_.push_back(table.rows[i].alignment);
        const DeviceTimeline* tl = runs_[i]->timeline(devices_[i]);
        if (!tl) continue;
        const AxisMap& m = alignments_[i].map;
        const auto [a, b] = fullRangeOf(*tl, m);
        x0 = first ? a : std::min(x0, a);
        x1 = first ? b : std::max(x1, b);
        first = false;
        const RunSummary& s = table.rows[i].summary;
        ymax = std::max({ymax, double(s.peak_bytes), double(s.reserved_peak)});
        if (alignments_[i].fell_back) fellBack << names_[qsizetype(i)];
    }
    const QString unit = toQString(table.axis_unit);
    zoom_->setFullRange(x0, x1);
    for (size_t i = 0; i < plots_.size(); ++i) {
        plots_[i]->setSource(runs_[i], devices_[i], alignments_[i].map,
                             axisLabel(alignments_[i].mode, unit));
        plots_[i]->setTitle(QStringLiteral("%1 — %2").arg(names_[qsizetype(i)],
                                                          runs_[i]->deviceLabel(devices_[i])));
        plots_[i]->setFixedYMax(ymax * 1.12);  // one y scale for every run, room for the peak label
    }
    notes_->setVisible(!fellBack.isEmpty());
    notes_->setText(QStringLiteral("No training steps recorded in %1: shown by time.")
                        .arg(fellBack.join(QStringLiteral(", "))));
    table_->resizeColumnsToContents();
    composition_->setEntries(summary_->entries());
    policyMap_->setEntries(summary_->entries());
    theory_->setEntries(summary_->entries());
    modules_->setEntries(summary_->entries(), baseline_);
    allocations_->setEntries(summary_->entries(), baseline_);
    lines_->setEntries(summary_->entries());
    updateDifference();
}

void CompareView::showTab(const QString& name) {
    const int i = int(compareTabNames().indexOf(name));
    if (i >= 0 && i < tabs_->count()) tabs_->setCurrentIndex(i);
}

QString CompareView::currentTabName() const {
    return compareTabNames().value(tabs_->currentIndex());
}

void CompareView::highlightAllocations(const RunHighlights& perRun) {
    bool any = false;
    for (const auto& v : perRun) any = any || (v && !v->empty());
    // The highlight is drawn by allocation only, as in a run's view.
    if (any && mode_ != ViewMode::Allocation) setViewMode(ViewMode::Allocation);
    for (size_t i = 0; i < plots_.size(); ++i) {
        const bool takesPart = i < perRun.size() && perRun[i].has_value();
        // A run without any of them fades whole: "none here" is its answer.
        plots_[i]->setHighlightedAllocations(takesPart ? *perRun[i] : std::vector<uint32_t>{},
                                             any && takesPart);
    }
}

void CompareView::updateDifference() {
    const int a = diffA_->currentIndex(), b = diffB_->currentIndex();
    if (a < 0 || b < 0 || size_t(a) >= runs_.size() || size_t(b) >= runs_.size() ||
        alignments_.size() != runs_.size())
        return;
    const QString unit =
        toQString(alignUnit(align_, {runs_[size_t(a)]->trace(devices_[size_t(a)]), nullptr}));
    diff_->setRuns({runs_[size_t(a)], devices_[size_t(a)], alignments_[size_t(a)].map, names_[a]},
                   {runs_[size_t(b)], devices_[size_t(b)], alignments_[size_t(b)].map, names_[b]},
                   axisLabel(align_, unit));
}

void CompareView::setAlignMode(AlignMode mode) {
    align_ = mode;
    if (alignBox_->currentIndex() != int(mode)) alignBox_->setCurrentIndex(int(mode));
    realign();
}

void CompareView::setGridLayout(bool grid) {
    gridMode_ = grid;
    if (layoutBox_->currentIndex() != (grid ? 0 : 1)) layoutBox_->setCurrentIndex(grid ? 0 : 1);
    relayout();
}

void CompareView::setBaseline(int index) {
    if (index < 0 || size_t(index) >= runs_.size()) return;
    baseline_ = index;
    if (baselineBox_->currentIndex() != index) baselineBox_->setCurrentIndex(index);
    // Phase alignment uses the baseline's phase fractions, so realign.
    realign();
}

void CompareView::setScope(PeakScope scope) {
    scope_ = scope;
    const int i = scope.phase ? index(*scope.phase) + 1 : 0;
    if (scopeBox_->currentIndex() != i) scopeBox_->setCurrentIndex(i);
    realign();
}

void CompareView::setViewMode(ViewMode mode) {
    mode_ = mode;
    if (stackBox_->currentIndex() != int(mode)) stackBox_->setCurrentIndex(int(mode));
    for (TimelinePlot* p : plots_) p->setViewMode(mode);
}

void CompareView::goToPeak() {
    if (baseline_ < 0 || size_t(baseline_) >= plots_.size()) return;
    const DeviceTimeline* tl = plots_[size_t(baseline_)]->timeline();
    if (!tl) return;
    const double x = alignments_[size_t(baseline_)].map.forward(tl->peak.time);
    zoom_->centerOn(x, (zoom_->fullEnd() - zoom_->fullBegin()) * 0.1);
    zoom_->setCursor(x);
}

bool CompareView::exportPlots(const QString& path, QString* error) {
    return exportWidget(grid_, path, error);
}

bool CompareView::exportCsv(const QString& path, QString* error) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text)) {
        if (error) *error = QStringLiteral("%1: %2").arg(path, f.errorString());
        return false;
    }
    f.write(summary_->toCsv().toUtf8());
    return true;
}

}  // namespace memscope::gui
