#include "window/main_window.h"

#include <QCloseEvent>
#include <QCoreApplication>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QLabel>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QThread>

#include "allocator/allocator_view.h"
#include "common/format.h"
#include "compare/compare_view.h"
#include "inspect/inspector_view.h"
#include "inspect/module_panel.h"
#include "inspect/search_panel.h"
#include "lines/lines_panel.h"
#include "loading/run_loader.h"
#include "memscope/builtin_plugins.h"
#include "ranks/ranks_view.h"
#include "run_view/run_view.h"
#include "run_view/timeline_plot.h"
#include "run_view/zoom_state.h"
#include "stacks/flame_panel.h"
#include "stacks/leak_panel.h"
#include "window/recent_files.h"

namespace memscope::gui {

MainWindow::MainWindow(bool persistSettings, QWidget* parent)
    : QMainWindow(parent), persist_(persistSettings) {
    setWindowTitle(QStringLiteral("memscope"));
    setAcceptDrops(true);
    setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks);

    tabs_ = new QTabWidget(this);
    tabs_->setTabsClosable(true);
    tabs_->setDocumentMode(true);
    tabs_->setMovable(true);
    setCentralWidget(tabs_);
    auto* welcome = new QLabel(
        QStringLiteral("<h2>memscope</h2><p>Open a trace (File → Open, or drop files here), "
                       "or generate traces of the four checkpointing policies "
                       "(File → Generate Traces…).</p>"),
        tabs_);
    welcome->setAlignment(Qt::AlignCenter);
    welcome->setObjectName(QStringLiteral("welcome"));
    tabs_->addTab(welcome, QStringLiteral("Welcome"));

    inspector_ = new InspectorView(this);
    search_ = new SearchPanel(this);
    modules_ = new ModulePanel(this);
    allocator_ = new AllocatorView(this);
    flame_ = new FlamePanel(this);
    leaks_ = new LeakPanel(this);
    lines_ = new LinesPanel(this);
    auto addDock = [this](QWidget* w, const QString& title, const QString& name,
                          Qt::DockWidgetArea area) {
        auto* dock = new QDockWidget(title, this);
        dock->setObjectName(name);  // saveState() needs names
        dock->setWidget(w);
        addDockWidget(area, dock);
        return dock;
    };
    QDockWidget* insp = addDock(inspector_, QStringLiteral("Inspector"),
                                QStringLiteral("inspectorDock"), Qt::RightDockWidgetArea);
    QDockWidget* srch = addDock(search_, QStringLiteral("Search"), QStringLiteral("searchDock"),
                                Qt::RightDockWidgetArea);
    QDockWidget* alloc = addDock(allocator_, QStringLiteral("Allocator state"),
                                 QStringLiteral("allocatorDock"), Qt::BottomDockWidgetArea);
    QDockWidget* flame = addDock(flame_, QStringLiteral("Stacks alive"),
                                 QStringLiteral("flameDock"), Qt::BottomDockWidgetArea);
    QDockWidget* leaks = addDock(leaks_, QStringLiteral("Leaks"), QStringLiteral("leaksDock"),
                                 Qt::BottomDockWidgetArea);
    QDockWidget* lines = addDock(lines_, QStringLiteral("Lines at peak"),
                                 QStringLiteral("linesDock"), Qt::BottomDockWidgetArea);
    tabifyDockWidget(alloc, flame);
    tabifyDockWidget(flame, leaks);
    tabifyDockWidget(leaks, lines);
    alloc->raise();
    QDockWidget* mods = addDock(modules_, QStringLiteral("By module at the peak"),
                                QStringLiteral("modulesDock"), Qt::RightDockWidgetArea);
    tabifyDockWidget(insp, srch);
    tabifyDockWidget(srch, mods);
    insp->raise();

    loader_ = new RunLoader(this);
    progress_ = new QProgressBar(this);
    progress_->setMaximumWidth(240);
    progress_->setFormat(QStringLiteral("%p%"));
    progress_->setVisible(false);
    cancel_ = new QPushButton(QStringLiteral("Cancel"), this);
    cancel_->setVisible(false);
    status_ = new QLabel(this);
    statusBar()->addWidget(status_, 1);
    statusBar()->addPermanentWidget(progress_);
    statusBar()->addPermanentWidget(cancel_);
    // The one plugin report (the CLI prints the same): say once what was skipped.
    for (const std::string& e : processPluginReport().errors)
        errors_ << QStringLiteral("plugin skipped: %1").arg(QString::fromStdString(e));
    if (!errors_.isEmpty()) status_->setText(errors_.join(QStringLiteral("; ")));

    connect(cancel_, &QPushButton::clicked, loader_, &RunLoader::cancel);
    // The what-if the command line starts reports in the same status bar.
    whatIf_ = new WhatIfRunner(this);
    connect(cancel_, &QPushButton::clicked, whatIf_, &WhatIfRunner::cancel);
    connect(whatIf_, &WhatIfRunner::progress, this, [this](int done, int total) {
        progress_->setRange(0, std::max(1, total));
        progress_->setValue(done);
    });
    connect(whatIf_, &WhatIfRunner::finished, this, [this](WhatIfOutcome outcome) {
        whatIfPending_ = false;
        progress_->setVisible(loading_);
        cancel_->setVisible(loading_);
        int refused = 0;
        for (const WhatIfRow& row : outcome.report->rows) refused += row.refused ? 1 : 0;
        status_->setText(
            QStringLiteral("Predicted %1 policies from %2%3.")
                .arg(outcome.predicted.size())
                .arg(outcome.source->name)
                .arg(refused ? QStringLiteral(", %1 refused").arg(refused) : QString()));
        for (const WhatIfRow& row : outcome.report->rows)
            if (row.refused)
                errors_ << QStringLiteral("what-if %1 refused: %2")
                               .arg(toQString(row.policy), toQString(*row.refused));
        if (!outcome.predicted.empty()) showPredictions(outcome);
    });
    connect(whatIf_, &WhatIfRunner::failed, this, [this](const QString& message, bool cancelled) {
        whatIfPending_ = false;
        progress_->setVisible(loading_);
        cancel_->setVisible(loading_);
        status_->setText(cancelled ? QStringLiteral("Prediction cancelled.")
                                   : QStringLiteral("Could not predict: %1").arg(message));
        if (!cancelled) errors_ << QStringLiteral("what-if: %1").arg(message);
    });
    connect(loader_, &RunLoader::progress, this, [this](qint64 done, qint64 total) {
        // Bytes can exceed int: show per mille.
        progress_->setRange(0, 1000);
        progress_->setValue(total > 0 ? int(std::min<qint64>(1000, done * 1000 / total)) : 0);
    });
    connect(loader_, &RunLoader::runLoaded, this, &MainWindow::onRunLoaded);
    connect(loader_, &RunLoader::failedToOpen, this, &MainWindow::onFailedToOpen);
    connect(loader_, &RunLoader::finished, this, &MainWindow::onLoadFinished);
    connect(tabs_, &QTabWidget::currentChanged, this, &MainWindow::onCurrentTabChanged);
    connect(tabs_, &QTabWidget::tabCloseRequested, this, [this](int i) {
        QWidget* w = tabs_->widget(i);
        tabs_->removeTab(i);
        w->deleteLater();
        nameRunTabs();
    });
    connect(search_, &SearchPanel::allocationChosen, this, [this](uint32_t i) {
        if (RunView* v = currentRunView()) v->showAllocation(i);
    });
    connect(modules_, &ModulePanel::moduleHighlightRequested, this,
            [this](std::optional<ModuleId> group) {
                if (RunView* v = currentRunView()) v->highlightModule(group);
            });
    auto highlight = [this](RunPtr run, DeviceRef ref, std::vector<uint32_t> intervals) {
        RunView* v = currentRunView();
        if (!v || v->run() != run) return;
        if (!(v->device() == ref)) v->setDevice(ref);
        v->highlightAllocations(std::move(intervals));
    };
    connect(flame_, &FlamePanel::allocationsHighlightRequested, this, highlight);
    connect(leaks_, &LeakPanel::allocationsHighlightRequested, this, highlight);
    connect(lines_, &LinesPanel::allocationsHighlightRequested, this, highlight);
    connect(inspector_, &InspectorView::neighbourActivated, this, [this](uint32_t i) {
        if (RunView* v = currentRunView()) v->showAllocation(i);
    });

    createActions();
    resize(1400, 900);
    if (persist_) {
        QSettings s;
        restoreGeometry(s.value(QStringLiteral("window/geometry")).toByteArray());
        restoreState(s.value(QStringLiteral("window/state")).toByteArray());
    }
    updateActionStates();
}

MainWindow::~MainWindow() = default;

void MainWindow::closeEvent(QCloseEvent* event) {
    loader_->cancel();
    if (persist_) {
        QSettings s;
        s.setValue(QStringLiteral("window/geometry"), saveGeometry());
        s.setValue(QStringLiteral("window/state"), saveState());
    }
    QMainWindow::closeEvent(event);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    QStringList paths;
    for (const QUrl& u : event->mimeData()->urls())
        if (u.isLocalFile()) paths << u.toLocalFile();
    if (!paths.isEmpty()) {
        openPaths(paths, false);
        event->acceptProposedAction();
    }
}

void MainWindow::openPaths(const QStringList& paths, bool compare) {
    if (paths.isEmpty()) return;
    queue_.push_back({paths, compare});
    if (!loading_) startNextLoad();
}

void MainWindow::startNextLoad() {
    if (queue_.empty()) return;
    current_ = queue_.front();
    queue_.erase(queue_.begin());
    loading_ = true;
    batchRuns_.clear();
    batchErrors_.clear();
    progress_->setRange(0, 1000);
    progress_->setValue(0);
    progress_->setVisible(true);
    cancel_->setVisible(true);
    status_->setText(QStringLiteral("Loading %1…")
                         .arg(current_.paths.size() == 1
                                  ? QFileInfo(current_.paths.front()).fileName()
                                  : QStringLiteral("%1 files").arg(current_.paths.size())));
    if (persist_) addRecentFiles(current_.paths);
    updateRecentMenu();
    loader_->load(current_.paths);
}

void MainWindow::waitForLoads() {
    while (loading_ || !queue_.empty()) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        if (loader_->isBusy()) QThread::msleep(1);
    }
    QCoreApplication::processEvents();
}

void MainWindow::onRunLoaded(RunPtr run) {
    // Many ranks arrive as digests only: their Ranks view is all there is to
    // show, and the compare view, which needs timelines, leaves them out.
    if (run->parts.empty()) {
        if (run->ranks) addRanksView(run);
        return;
    }
    batchRuns_.push_back(run);
    // A damaged tail still loads; say what was lost instead of hiding it.
    for (const RunPart& part : run->parts)
        for (const LoadWarning& w : part.warnings)
            batchErrors_ << QStringLiteral("%1: opened, but %2")
                                .arg(part.path, QString::fromStdString(w.message));
    if (!current_.compare) addRunView(run);
    if (run->ranks && !current_.compare) addRanksView(run);
}

void MainWindow::addRanksView(RunPtr run) {
    auto* view = new RanksView(run, tabs_);
    // A rank opens as a run of its own: only the ranks looked into keep a timeline.
    connect(view, &RanksView::openRankRequested, this,
            [this](const QString& path) { openPaths({path}, false); });
    const int i = tabs_->addTab(view, QStringLiteral("%1: ranks").arg(run->name));
    tabs_->setTabToolTip(i, run->paths.join(QLatin1Char('\n')));
    if (QWidget* w = tabs_->findChild<QWidget*>(QStringLiteral("welcome"))) {
        tabs_->removeTab(tabs_->indexOf(w));
        w->deleteLater();
    }
    tabs_->setCurrentWidget(view);
}

std::vector<RanksView*> MainWindow::ranksViews() const {
    std::vector<RanksView*> out;
    for (int i = 0; i < tabs_->count(); ++i)
        if (auto* v = qobject_cast<RanksView*>(tabs_->widget(i))) out.push_back(v);
    return out;
}

void MainWindow::onFailedToOpen(const QString& path, const QString& message) {
    // Core's errors usually name the file; make sure the dialog always does.
    const QString name = QFileInfo(path).fileName();
    const QString text =
        message.contains(name) ? message : QStringLiteral("%1: %2").arg(path, message);
    batchErrors_ << text;
    errors_ << text;
}

void MainWindow::onLoadFinished(int loaded, int failed, bool cancelled) {
    loading_ = false;
    progress_->setVisible(false);
    cancel_->setVisible(false);
    status_->setText(
        cancelled ? QStringLiteral("Loading cancelled.")
                  : QStringLiteral("Loaded %1 run(s)%2.")
                        .arg(loaded)
                        .arg(failed ? QStringLiteral(", %1 failed").arg(failed) : QString()));
    if (current_.compare && !batchRuns_.empty()) {
        std::vector<RunPtr> shown = current_.alongside;
        shown.insert(shown.end(), batchRuns_.begin(), batchRuns_.end());
        showCompare(shown);
    }
    if (whatIfAfterLoad_ && !batchRuns_.empty()) {
        startWhatIf(batchRuns_.front(), std::move(*whatIfAfterLoad_));
        whatIfAfterLoad_.reset();
    }
    if (!batchErrors_.isEmpty()) {
        // Non-modal: the app stays usable and tests can inspect the box.
        auto* box = new QMessageBox(QMessageBox::Warning, QStringLiteral("Problems opening files"),
                                    batchErrors_.size() == 1
                                        ? QStringLiteral("One file could not be opened completely.")
                                        : QStringLiteral("%1 files could not be opened completely.")
                                              .arg(batchErrors_.size()),
                                    QMessageBox::Ok, this);
        box->setInformativeText(batchErrors_.join(QLatin1Char('\n')));
        box->setObjectName(QStringLiteral("openErrorBox"));
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->open();
    }
    updateActionStates();
    startNextLoad();
}

RunView* MainWindow::addRunView(RunPtr run) {
    auto* view = new RunView(run, tabs_);
    connect(view, &RunView::cursorMoved, this, &MainWindow::followCursor);
    connect(view, &RunView::allocationPinned, this, &MainWindow::pinAllocation);
    connect(view, &RunView::deviceChanged, this, &MainWindow::onCurrentTabChanged);
    connect(view, &RunView::moduleGroupingChanged, this, [this, view](ModuleGroupingSpec spec) {
        if (currentRunView() == view) modules_->setSource(view->run(), view->device(), spec);
    });
    const int i = tabs_->addTab(view, run->name);
    tabs_->setTabToolTip(i, run->paths.join(QLatin1Char('\n')));
    nameRunTabs();
    if (QWidget* w = tabs_->findChild<QWidget*>(QStringLiteral("welcome"))) {
        tabs_->removeTab(tabs_->indexOf(w));
        w->deleteLater();
    }
    tabs_->setCurrentWidget(view);
    // Opened on its first OOM: again, now that the docks follow its cursor.
    view->goToOom();
    return view;
}

// Run tabs by their runs' names ("train.py rank 1"), told apart where two
// share one (two runs of one script: by pid, else by file), as `compare` does.
void MainWindow::nameRunTabs() {
    std::vector<RunPtr> runs;
    std::vector<int> at;
    for (int i = 0; i < tabs_->count(); ++i)
        if (auto* v = qobject_cast<RunView*>(tabs_->widget(i))) {
            runs.push_back(v->run());
            at.push_back(i);
        }
    const QStringList names = distinctNames(runs);
    for (size_t k = 0; k < at.size(); ++k) tabs_->setTabText(at[k], names[qsizetype(k)]);
    // The window's title names the current run the same way.
    if (RunView* v = currentRunView())
        setWindowTitle(QStringLiteral("%1 — memscope").arg(tabs_->tabText(tabs_->indexOf(v))));
}

void MainWindow::showRun(RunPtr run) {
    if (!run) return;
    for (int i = 0; i < tabs_->count(); ++i)
        if (auto* view = qobject_cast<RunView*>(tabs_->widget(i)); view && view->run() == run) {
            tabs_->setCurrentIndex(i);
            return;
        }
    addRunView(run);
}

void MainWindow::showCompare(const std::vector<RunPtr>& runs) {
    if (!compare_) {
        compare_ = new CompareView(tabs_);
        connect(compare_, &CompareView::cursorMoved, this, &MainWindow::followCursor);
        connect(compare_, &CompareView::allocationPinned, this, &MainWindow::pinAllocation);
        connect(compare_, &CompareView::openRunRequested, this, &MainWindow::showRun);
        tabs_->addTab(compare_, QStringLiteral("Compare"));
    }
    compare_->setRuns(runs);
    if (QWidget* w = tabs_->findChild<QWidget*>(QStringLiteral("welcome"))) {
        tabs_->removeTab(tabs_->indexOf(w));
        w->deleteLater();
    }
    tabs_->setCurrentWidget(compare_);
    if (!runs.empty()) {
        allocator_->setSource(runs.front(), runs.front()->busiestDevice());
        search_->setSource(runs.front(), runs.front()->busiestDevice());
    }
    updateActionStates();
}

std::vector<RunPtr> MainWindow::runs() const {
    std::vector<RunPtr> out;
    for (int i = 0; i < tabs_->count(); ++i)
        if (auto* v = qobject_cast<RunView*>(tabs_->widget(i))) out.push_back(v->run());
    if (out.empty() && compare_) out = compare_->runs();
    return out;
}

CompareView* MainWindow::compareView() const {
    return compare_.data();
}

RunView* MainWindow::currentRunView() const {
    return qobject_cast<RunView*>(tabs_->currentWidget());
}

ZoomState* MainWindow::currentZoom() const {
    if (RunView* v = currentRunView()) return v->zoom();
    if (compare_ && tabs_->currentWidget() == compare_) return compare_->zoom();
    return nullptr;
}

void MainWindow::onCurrentTabChanged() {
    if (RunView* v = currentRunView()) {
        search_->setSource(v->run(), v->device());
        allocator_->setSource(v->run(), v->device());
        modules_->setSource(v->run(), v->device(), v->moduleGrouping());
        flame_->setSource(v->run(), v->device());
        leaks_->setSource(v->run(), v->device());
        lines_->setSource(v->run(), v->device());
        setWindowTitle(QStringLiteral("%1 — memscope").arg(tabs_->tabText(tabs_->indexOf(v))));
    } else {
        setWindowTitle(QStringLiteral("memscope"));
    }
    updateActionStates();
}

bool MainWindow::raiseDock(const QString& name) {
    QWidget* w = name == QLatin1String("inspector")   ? static_cast<QWidget*>(inspector_)
                 : name == QLatin1String("search")    ? static_cast<QWidget*>(search_)
                 : name == QLatin1String("modules")   ? static_cast<QWidget*>(modules_)
                 : name == QLatin1String("allocator") ? static_cast<QWidget*>(allocator_)
                 : name == QLatin1String("flame")     ? static_cast<QWidget*>(flame_)
                 : name == QLatin1String("leaks")     ? static_cast<QWidget*>(leaks_)
                 : name == QLatin1String("lines")     ? static_cast<QWidget*>(lines_)
                                                      : nullptr;
    auto* dock = w ? qobject_cast<QDockWidget*>(w->parentWidget()) : nullptr;
    if (!dock) return false;
    dock->show();
    dock->raise();
    return true;
}

void MainWindow::followCursor(RunPtr run, DeviceRef ref, int64_t runX) {
    if (flame_->isVisible()) flame_->cursorMovedTo(run, ref, runX);
    if (!allocator_->isVisible()) return;  // no replay for a hidden dock
    allocator_->setSource(run, ref);       // returns at once when unchanged
    allocator_->setTime(runX);
}

void MainWindow::pinAllocation(RunPtr run, DeviceRef ref, uint32_t interval) {
    inspector_->setAllocation(run, ref, interval);
    if (auto* dock = qobject_cast<QDockWidget*>(inspector_->parentWidget())) {
        dock->show();
        dock->raise();
    }
}

}  // namespace memscope::gui
