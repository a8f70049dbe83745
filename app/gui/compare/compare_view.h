#pragma once
// Several runs side by side (a grid or stacked) with one shared y scale and one
// ZoomState on the shared axis (time, step or phase, from core's alignRuns),
// the summary table, the peak-composition bars, a two-run difference curve
// and the change by module.

#include <QWidget>
#include <optional>
#include <vector>

#include "loading/run.h"
#include "memscope/analysis/compare_table.h"
#include "memscope/view/view_mode.h"
#include "run_view/timeline_bands.h"

class QComboBox;
class QGridLayout;
class QLabel;
class QTabWidget;
class QTableView;

namespace memscope::gui {

class AllocationDiffPanel;
class CompositionChart;
class LineComparePanel;
class DifferencePlot;
class ModuleComparePanel;
class PolicyMap;
class TheoryCharts;
class SummaryTableModel;
class TimelinePlot;
class ZoomState;

class CompareView : public QWidget {
    Q_OBJECT
public:
    explicit CompareView(QWidget* parent = nullptr);

    void setRuns(std::vector<RunPtr> runs);
    const std::vector<RunPtr>& runs() const { return runs_; }
    // Parallel to runs(): each as the view names it (distinctNames).
    const QStringList& runNames() const { return names_; }
    int plotCount() const { return int(plots_.size()); }
    TimelinePlot* plotAt(int i) const { return plots_[size_t(i)]; }
    SummaryTableModel* summaryModel() const { return summary_; }
    ZoomState* zoom() const { return zoom_; }
    DifferencePlot* differencePlot() const { return diff_; }
    PolicyMap* policyMap() const { return policyMap_; }
    TheoryCharts* theoryCharts() const { return theory_; }
    ModuleComparePanel* modulePanel() const { return modules_; }
    AllocationDiffPanel* allocationPanel() const { return allocations_; }
    LineComparePanel* linePanel() const { return lines_; }
    // The lower pane's tab by its command-line name ("summary", "composition",
    // "policy-map", "theory", "difference", "modules", "allocations", "lines":
    // compareTabNames()); unknown names are ignored.
    void showTab(const QString& name);
    QString currentTabName() const;
    // Brings forward these allocations in each run's plot (parallel to
    // runs(), DeviceTimeline::intervals), by allocation; a run given none
    // while another has some fades whole, a run left out (nullopt, or past
    // the end) shows no highlight; all empty: none.
    using RunHighlights = std::vector<std::optional<std::vector<uint32_t>>>;
    void highlightAllocations(const RunHighlights& perRun);
    QString hoverText() const;

    void setAlignMode(AlignMode mode);
    AlignMode alignMode() const { return align_; }
    void setGridLayout(bool grid);
    void setBaseline(int index);
    // The compare table's peaks: the whole run's, or within one training phase.
    void setScope(PeakScope scope);
    PeakScope scope() const { return scope_; }
    // Every run's plot stacked the same way (the box's entries in ViewMode's order).
    void setViewMode(ViewMode mode);
    // Centres the shared view on the baseline run's peak.
    void goToPeak();

    bool exportPlots(const QString& path, QString* error);
    bool exportCsv(const QString& path, QString* error);

signals:
    void cursorMoved(memscope::gui::RunPtr run, memscope::gui::DeviceRef ref, int64_t runX);
    // The policy map's point of a run was clicked.
    void openRunRequested(memscope::gui::RunPtr run);
    void allocationPinned(memscope::gui::RunPtr run, memscope::gui::DeviceRef ref,
                          uint32_t interval);

private:
    void realign();
    void relayout();
    void updateDifference();

    std::vector<RunPtr> runs_;
    QStringList names_;  // parallel to runs_: as shown (distinctNames)
    std::vector<DeviceRef> devices_;
    std::vector<Alignment> alignments_;
    std::vector<TimelinePlot*> plots_;
    ZoomState* zoom_ = nullptr;
    AlignMode align_ = AlignMode::Time;
    bool gridMode_ = true;
    int baseline_ = 0;
    PeakScope scope_;
    ViewMode mode_ = ViewMode::Category;

    QWidget* grid_ = nullptr;
    QGridLayout* gridLayout_ = nullptr;
    QComboBox* alignBox_ = nullptr;
    QComboBox* layoutBox_ = nullptr;
    QComboBox* baselineBox_ = nullptr;
    QComboBox* stackBox_ = nullptr;
    QComboBox* scopeBox_ = nullptr;
    QComboBox* diffA_ = nullptr;
    QComboBox* diffB_ = nullptr;
    QLabel* hover_ = nullptr;
    QLabel* notes_ = nullptr;
    QTabWidget* tabs_ = nullptr;
    QTableView* table_ = nullptr;
    SummaryTableModel* summary_ = nullptr;
    CompositionChart* composition_ = nullptr;
    PolicyMap* policyMap_ = nullptr;
    TheoryCharts* theory_ = nullptr;
    DifferencePlot* diff_ = nullptr;
    ModuleComparePanel* modules_ = nullptr;
    AllocationDiffPanel* allocations_ = nullptr;
    LineComparePanel* lines_ = nullptr;
};

}  // namespace memscope::gui
