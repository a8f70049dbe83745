#pragma once
// The main window only wires views together: run tabs, the compare tab, the
// inspector, search, by-module, allocator-state, stacks-alive and leaks
// docks, the loader's progress, menus.

#include <QMainWindow>
#include <QPointer>
#include <optional>
#include <vector>

#include "loading/run.h"
#include "loading/whatif_runner.h"

class QAction;
class QActionGroup;
class QLabel;
class QMenu;
class QProgressBar;
class QPushButton;
class QTabWidget;

namespace memscope::gui {

class AllocatorView;
class CompareView;
class InspectorView;
class FlamePanel;
class LeakPanel;
class LinesPanel;
class ModulePanel;
class RunLoader;
class RunView;
class RanksView;
class SearchPanel;
class WhatIfDialog;
class ZoomState;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    // persistSettings = false for tests and screenshots: nothing is read from or
    // written to the user's settings.
    explicit MainWindow(bool persistSettings = true, QWidget* parent = nullptr);
    ~MainWindow() override;

    // Each path becomes a run (a folder: one multi-rank run). With compare, the
    // runs of this batch open together in the compare view once loaded.
    void openPaths(const QStringList& paths, bool compare = false);
    bool isLoading() const { return loading_; }
    // Follows a trace still being written (File → Follow…, --follow): its
    // run view appears once the file holds a readable header and updates as
    // it grows (main_window_follow.cpp). The path need not exist yet.
    void followPath(const QString& path);
    // Record → Attach to a running job…: `memscope-cli attach PID --steps N`
    // in the background; the traces it writes open when it is done.
    void attachToJob(qint64 pid, int steps);
    // Processes events until every requested load has finished (tests, screenshots).
    void waitForLoads();

    void showCompare(const std::vector<RunPtr>& runs);
    // The run's own tab, made if it has none (the policy map's click).
    void showRun(RunPtr run);
    std::vector<RunPtr> runs() const;
    // The Ranks views open (multi-rank runs), in tab order.
    std::vector<RanksView*> ranksViews() const;
    QTabWidget* tabs() const { return tabs_; }
    RunView* currentRunView() const;
    CompareView* compareView() const;
    InspectorView* inspector() const { return inspector_; }
    SearchPanel* searchPanel() const { return search_; }
    ModulePanel* modulePanel() const { return modules_; }
    AllocatorView* allocatorView() const { return allocator_; }
    FlamePanel* flamePanel() const { return flame_; }
    LeakPanel* leakPanel() const { return leaks_; }
    LinesPanel* linesPanel() const { return lines_; }
    // Shows and raises a dock by its short name: "inspector", "search",
    // "modules", "allocator", "flame", "leaks"; false for another name.
    bool raiseDock(const QString& name);
    QStringList errors() const { return errors_; }  // every "file: problem" shown so far

    // main_window_whatif.cpp. The run What if… predicts from: the current
    // run tab's, else the compare view's baseline (a measured one); null when none.
    RunPtr whatIfSource() const;
    // Opens the What if… dialog on whatIfSource() (the action).
    WhatIfDialog* openWhatIfDialog();
    // Predicts `policies` (empty: core's default sweep) from `run` without the
    // dialog, progress in the status bar (--whatif, tests); false while busy.
    bool startWhatIf(RunPtr run, std::vector<WhatIfPolicy> policies);
    // --whatif: predicts from the first run that the next load opens.
    void whatIfAfterLoad(std::vector<WhatIfPolicy> policies);
    // Processes events until a what-if started here has finished and is shown.
    void waitForWhatIf();
    // The predicted runs join the compare view, beside what is open.
    void showPredictions(const WhatIfOutcome& outcome);
    // "Record with this policy": the measured traces open in the compare
    // view beside the run predicted from and the prediction (null: none).
    void showMeasuredBesidePrediction(RunPtr source, RunPtr predicted, const QStringList& traces);
    ZoomState* currentZoom() const;

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void closeEvent(QCloseEvent* event) override;

private:
    // main_window_actions.cpp
    void createActions();
    void createFileMenu();
    void createViewMenu();
    void addZoomActions(QMenu* view);
    void addPeakAndBoxZoomActions(QMenu* view);
    void addStackModeActions(QMenu* view);
    void createCompareMenu();
    void addWhatIfActions(QMenu* compare);
    void addAlignModeActions(QMenu* compare);
    void updateRecentMenu();
    void updateActionStates();
    void openFilesDialog();
    void openFolderDialog();
    void followDialog();
    void attachDialog();
    void exportPlotDialog();
    void exportCsvDialog();
    void generateTraces();
    void compareOpenRuns();
    void whatIfDialog();
    void showAbout();

    // main_window.cpp
    void startNextLoad();
    void onRunLoaded(RunPtr run);
    void onFailedToOpen(const QString& path, const QString& message);
    void onLoadFinished(int loaded, int failed, bool cancelled);
    RunView* addRunView(RunPtr run);
    // The Ranks view of a multi-rank run, as its own tab.
    void addRanksView(RunPtr run);
    void nameRunTabs();
    void onCurrentTabChanged();
    void followCursor(RunPtr run, DeviceRef ref, int64_t runX);
    void pinAllocation(RunPtr run, DeviceRef ref, uint32_t interval);

    bool persist_ = true;
    QTabWidget* tabs_ = nullptr;
    QPointer<CompareView> compare_;
    InspectorView* inspector_ = nullptr;
    SearchPanel* search_ = nullptr;
    ModulePanel* modules_ = nullptr;
    AllocatorView* allocator_ = nullptr;
    FlamePanel* flame_ = nullptr;
    LeakPanel* leaks_ = nullptr;
    LinesPanel* lines_ = nullptr;
    RunLoader* loader_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QPushButton* cancel_ = nullptr;
    QLabel* status_ = nullptr;
    QMenu* recentMenu_ = nullptr;
    std::vector<QAction*> viewActions_;  // need a run or compare tab
    QAction* boxZoom_ = nullptr;
    QActionGroup* stackGroup_ = nullptr;

    struct Batch {
        QStringList paths;
        bool compare = false;
        // Compared beside the batch's runs (a prediction and its source).
        std::vector<RunPtr> alongside = {};
    };
    std::vector<Batch> queue_;
    Batch current_;
    bool loading_ = false;
    WhatIfRunner* whatIf_ = nullptr;
    bool whatIfPending_ = false;  // started here, its result not yet shown
    std::optional<std::vector<WhatIfPolicy>> whatIfAfterLoad_;
    std::vector<RunPtr> batchRuns_;
    QStringList batchErrors_;
    QStringList errors_;
};

}  // namespace memscope::gui
