// Menus, actions and their shortcuts; each action forwards to a view.
#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QTabBar>
#include <QTabWidget>

#include "common/plot_export.h"
#include "compare/compare_view.h"
#include "dialogs/generate_dialog.h"
#include "inspect/search_panel.h"
#include "loading/run_loader.h"
#include "run_view/run_view.h"
#include "run_view/timeline_plot.h"
#include "run_view/zoom_state.h"
#include "window/main_window.h"
#include "window/recent_files.h"

namespace memscope::gui {

namespace {

QString traceFilter() {
    QStringList patterns{QStringLiteral("*.memscope")};
    for (const Importer* imp : pluginRegistry().importers())
        for (const std::string& ext : imp->extensions())
            patterns << QStringLiteral("*") + QString::fromStdString(ext);
    patterns.removeDuplicates();
    return QStringLiteral("Traces (%1);;All files (*)").arg(patterns.join(QLatin1Char(' ')));
}

}  // namespace

void MainWindow::createActions() {
    createFileMenu();
    createViewMenu();
    createCompareMenu();
    QMenu* record = menuBar()->addMenu(QStringLiteral("&Record"));
    QAction* attach = record->addAction(QStringLiteral("&Attach to a Running Job…"), this,
                                        &MainWindow::attachDialog);
    attach->setObjectName(QStringLiteral("attachAction"));
    QMenu* help = menuBar()->addMenu(QStringLiteral("&Help"));
    help->addAction(QStringLiteral("&About memscope"), this, &MainWindow::showAbout);
}

void MainWindow::createFileMenu() {
    QMenu* file = menuBar()->addMenu(QStringLiteral("&File"));
    QAction* open = file->addAction(QStringLiteral("&Open…"), this, &MainWindow::openFilesDialog);
    open->setShortcut(QKeySequence::Open);
    QAction* openDir = file->addAction(QStringLiteral("Open &Folder of Ranks…"), this,
                                       &MainWindow::openFolderDialog);
    openDir->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
    QAction* follow = file->addAction(QStringLiteral("F&ollow…"), this, &MainWindow::followDialog);
    follow->setToolTip(QStringLiteral("Open a trace still being written and update as it grows"));
    follow->setObjectName(QStringLiteral("followAction"));
    recentMenu_ = file->addMenu(QStringLiteral("Open &Recent"));
    updateRecentMenu();
    file->addSeparator();
    QAction* gen =
        file->addAction(QStringLiteral("&Generate Traces…"), this, &MainWindow::generateTraces);
    gen->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_G));
    QAction* cmp =
        file->addAction(QStringLiteral("&Compare Open Runs"), this, &MainWindow::compareOpenRuns);
    cmp->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_M));
    file->addSeparator();
    QAction* exPlot =
        file->addAction(QStringLiteral("&Export Plot…"), this, &MainWindow::exportPlotDialog);
    exPlot->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    QAction* exCsv = file->addAction(QStringLiteral("Export Summary &Table (CSV)…"), this,
                                     &MainWindow::exportCsvDialog);
    exCsv->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
    file->addSeparator();
    QAction* quit = file->addAction(QStringLiteral("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);
}

// View actions act on the current tab's ZoomState. They are bound to the tab
// area so that arrow keys still move through tables in the docks.
void MainWindow::createViewMenu() {
    QMenu* view = menuBar()->addMenu(QStringLiteral("&View"));
    addZoomActions(view);
    addPeakAndBoxZoomActions(view);
    view->addSeparator();
    addStackModeActions(view);
    view->addSeparator();
    QAction* find = view->addAction(QStringLiteral("&Find Allocation…"));
    find->setShortcut(QKeySequence::Find);
    connect(find, &QAction::triggered, this, [this] {
        if (auto* dock = qobject_cast<QDockWidget*>(search_->parentWidget())) {
            dock->show();
            dock->raise();
        }
        search_->focusQuery();
    });
    view->addSeparator();
    for (QDockWidget* d : findChildren<QDockWidget*>()) view->addAction(d->toggleViewAction());
}

void MainWindow::addZoomActions(QMenu* view) {
    auto zoomAction = [this, view](const QString& text, QList<QKeySequence> keys, auto fn) {
        QAction* a = view->addAction(text);
        a->setShortcuts(keys);
        a->setShortcutContext(Qt::WidgetWithChildrenShortcut);
        tabs_->addAction(a);
        connect(a, &QAction::triggered, this, [this, fn] {
            if (ZoomState* z = currentZoom()) fn(z);
        });
        viewActions_.push_back(a);
        return a;
    };
    zoomAction(QStringLiteral("Zoom &In"),
               {QKeySequence::ZoomIn, QKeySequence(Qt::Key_Plus), QKeySequence(Qt::Key_Equal)},
               [](ZoomState* z) { z->zoomBy(0.5, (z->begin() + z->end()) / 2); });
    zoomAction(QStringLiteral("Zoom &Out"), {QKeySequence::ZoomOut, QKeySequence(Qt::Key_Minus)},
               [](ZoomState* z) { z->zoomBy(2.0, (z->begin() + z->end()) / 2); });
    zoomAction(QStringLiteral("Pan &Left"), {QKeySequence(Qt::Key_Left)},
               [](ZoomState* z) { z->panBy(-0.2); });
    zoomAction(QStringLiteral("Pan &Right"), {QKeySequence(Qt::Key_Right)},
               [](ZoomState* z) { z->panBy(0.2); });
    zoomAction(QStringLiteral("&Reset Zoom"), {QKeySequence(Qt::Key_Home)},
               [](ZoomState* z) { z->reset(); });
    zoomAction(QStringLiteral("&Back"), {QKeySequence::Back, QKeySequence(Qt::Key_Backspace)},
               [](ZoomState* z) { z->back(); });
}

void MainWindow::addPeakAndBoxZoomActions(QMenu* view) {
    QAction* peak = view->addAction(QStringLiteral("Go to &Peak"));
    peak->setShortcut(QKeySequence(Qt::Key_P));
    peak->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    tabs_->addAction(peak);
    connect(peak, &QAction::triggered, this, [this] {
        if (RunView* v = currentRunView())
            v->goToPeak();
        else if (compare_ && tabs_->currentWidget() == compare_)
            compare_->goToPeak();
    });
    viewActions_.push_back(peak);
    boxZoom_ = view->addAction(QStringLiteral("Bo&x Zoom (or Shift+Drag)"));
    boxZoom_->setCheckable(true);
    boxZoom_->setShortcut(QKeySequence(Qt::Key_B));
    boxZoom_->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    tabs_->addAction(boxZoom_);
    connect(boxZoom_, &QAction::toggled, this, [this](bool on) {
        for (int i = 0; i < tabs_->count(); ++i)
            for (TimelinePlot* p : tabs_->widget(i)->findChildren<TimelinePlot*>())
                p->setBoxZoomMode(on);
    });
}

void MainWindow::addStackModeActions(QMenu* view) {
    stackGroup_ = new QActionGroup(this);
    const std::pair<QString, ViewMode> modes[] = {
        {QStringLiteral("Stack by &Category"), ViewMode::Category},
        {QStringLiteral("Stack by &Allocation"), ViewMode::Allocation},
        {QStringLiteral("Stack by &Module"), ViewMode::Module}};
    int key = Qt::Key_1;
    for (const auto& [text, mode] : modes) {
        QAction* a = view->addAction(text);
        a->setCheckable(true);
        a->setChecked(mode == ViewMode::Category);
        a->setShortcut(QKeySequence(key++));
        a->setShortcutContext(Qt::WidgetWithChildrenShortcut);
        tabs_->addAction(a);
        stackGroup_->addAction(a);
        connect(a, &QAction::triggered, this, [this, m = mode] {
            if (RunView* v = currentRunView())
                v->setViewMode(m);
            else if (compare_ && tabs_->currentWidget() == compare_)
                compare_->setViewMode(m);
        });
    }
}

void MainWindow::createCompareMenu() {
    QMenu* compare = menuBar()->addMenu(QStringLiteral("&Compare"));
    addWhatIfActions(compare);
    addAlignModeActions(compare);
    compare->addSeparator();
    QAction* grid = compare->addAction(QStringLiteral("&Grid Layout"));
    grid->setCheckable(true);
    grid->setChecked(true);
    grid->setShortcut(QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_G));
    connect(grid, &QAction::toggled, this, [this](bool on) {
        if (compare_) compare_->setGridLayout(on);
    });
}

// What If in the Compare menu, and the same on a run tab's own menu (right
// click).
void MainWindow::addWhatIfActions(QMenu* compare) {
    QAction* whatIf = compare->addAction(QStringLiteral("&What If… Other Checkpointing Policies"),
                                         this, &MainWindow::whatIfDialog);
    whatIf->setShortcut(QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_W));
    whatIf->setToolTip(
        QStringLiteral("Predict the memory of other checkpointing policies from this run"));
    compare->addSeparator();
    tabs_->tabBar()->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(tabs_->tabBar(), &QWidget::customContextMenuRequested, this, [this](const QPoint& at) {
        const int i = tabs_->tabBar()->tabAt(at);
        if (!qobject_cast<RunView*>(tabs_->widget(i))) return;
        tabs_->setCurrentIndex(i);
        QMenu menu(this);
        QAction* a = menu.addAction(QStringLiteral("What If… Other Checkpointing Policies"), this,
                                    &MainWindow::whatIfDialog);
        a->setEnabled(whatIfSource() != nullptr);  // not from a predicted run
        menu.exec(tabs_->tabBar()->mapToGlobal(at));
    });
}

void MainWindow::addAlignModeActions(QMenu* compare) {
    auto* alignGroup = new QActionGroup(this);
    const std::pair<QString, AlignMode> aligns[] = {
        {QStringLiteral("Align by &Time"), AlignMode::Time},
        {QStringLiteral("Align by &Step"), AlignMode::Step},
        {QStringLiteral("Align by &Phase"), AlignMode::Phase}};
    int akey = Qt::Key_1;
    for (const auto& [text, mode] : aligns) {
        QAction* a = compare->addAction(text);
        a->setCheckable(true);
        a->setChecked(mode == AlignMode::Time);
        a->setShortcut(QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key(akey++)));
        alignGroup->addAction(a);
        connect(a, &QAction::triggered, this, [this, m = mode] {
            if (compare_) compare_->setAlignMode(m);
        });
    }
}

void MainWindow::updateActionStates() {
    const bool haveView = currentZoom() != nullptr;
    for (QAction* a : viewActions_) a->setEnabled(haveView);
}

void MainWindow::updateRecentMenu() {
    if (!recentMenu_) return;
    recentMenu_->clear();
    const QStringList files = persist_ ? recentFiles() : QStringList();
    for (const QString& f : files)
        recentMenu_->addAction(QFileInfo(f).fileName(), this, [this, f] { openPaths({f}); })
            ->setToolTip(f);
    recentMenu_->setToolTipsVisible(true);
    if (!files.isEmpty()) {
        recentMenu_->addSeparator();
        recentMenu_->addAction(QStringLiteral("Clear List"), this, [this] {
            clearRecentFiles();
            updateRecentMenu();
        });
    }
    recentMenu_->setEnabled(!files.isEmpty());
}

void MainWindow::openFilesDialog() {
    const QStringList files = QFileDialog::getOpenFileNames(this, QStringLiteral("Open traces"),
                                                            QString(), traceFilter());
    openPaths(files, false);
}

void MainWindow::openFolderDialog() {
    const QString dir =
        QFileDialog::getExistingDirectory(this, QStringLiteral("Open a folder of per-rank traces"));
    if (!dir.isEmpty()) openPaths({dir}, false);
}

void MainWindow::exportPlotDialog() {
    const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export plot"),
                                                      QString(), plotExportFilter());
    if (path.isEmpty()) return;
    QString error;
    bool ok = false;
    if (RunView* v = currentRunView())
        ok = v->plot()->exportTo(path, &error);
    else if (compare_ && tabs_->currentWidget() == compare_)
        ok = compare_->exportPlots(path, &error);
    else
        error = QStringLiteral("Open a run or a comparison first.");
    if (!ok) QMessageBox::warning(this, QStringLiteral("Export failed"), error);
}

void MainWindow::exportCsvDialog() {
    if (!compare_) {
        QMessageBox::information(
            this, QStringLiteral("Export table"),
            QStringLiteral("The summary table belongs to the compare view: compare runs first."));
        return;
    }
    const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export summary table"),
                                                      QString(), QStringLiteral("CSV (*.csv)"));
    if (path.isEmpty()) return;
    QString error;
    if (!compare_->exportCsv(path, &error))
        QMessageBox::warning(this, QStringLiteral("Export failed"), error);
}

void MainWindow::generateTraces() {
    auto* dialog = new GenerateDialog(this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &GenerateDialog::tracesReady, this,
            [this](const QStringList& paths) { openPaths(paths, true); });
    dialog->open();
}

void MainWindow::compareOpenRuns() {
    std::vector<RunPtr> all;
    for (int i = 0; i < tabs_->count(); ++i)
        if (auto* v = qobject_cast<RunView*>(tabs_->widget(i))) all.push_back(v->run());
    if (all.size() < 2) {
        QMessageBox::information(this, QStringLiteral("Compare"),
                                 QStringLiteral("Open at least two runs to compare."));
        return;
    }
    showCompare(all);
}

void MainWindow::showAbout() {
    QMessageBox::about(
        this, QStringLiteral("About memscope"),
        QStringLiteral("<b>memscope</b> %1<p>Memory timelines of deep-learning training: "
                       "inspect one run, compare checkpointing policies side by side.</p>")
            .arg(QCoreApplication::applicationVersion()));
}

}  // namespace memscope::gui
