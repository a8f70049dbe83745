#include "window/screenshot.h"

#include <QApplication>
#include <QDockWidget>
#include <QFileInfo>
#include <QTabWidget>
#include <cstdio>

#include "allocator/allocator_view.h"
#include "common/plot_export.h"
#include "compare/allocation_diff_panel.h"
#include "compare/compare_view.h"
#include "compare/summary_model.h"
#include "inspect/inspector_view.h"
#include "inspect/module_panel.h"
#include "lines/lines_panel.h"
#include "run_view/run_view.h"
#include "run_view/timeline_plot.h"
#include "run_view/zoom_state.h"
#include "stacks/flame_panel.h"
#include "stacks/leak_panel.h"
#include "window/main_window.h"

namespace memscope::gui {

int runScreenshot(const AppOptions& options) {
    MainWindow window(false);
    window.resize(options.size);
    window.setAttribute(Qt::WA_DontShowOnScreen, true);
    window.show();
    if (options.whatif) window.whatIfAfterLoad(*options.whatif);
    window.openPaths(options.paths, options.compare);
    window.waitForLoads();
    window.waitForWhatIf();
    const bool comparing = options.compare || options.whatif;
    for (const QString& e : window.errors()) std::fprintf(stderr, "memscope: %s\n", qPrintable(e));
    if (window.runs().empty() && window.ranksViews().empty() &&
        !(window.compareView() && !window.compareView()->runs().empty())) {
        std::fprintf(stderr, "memscope: nothing could be opened\n");
        return 1;
    }
    // The compare view gets the whole window: the docks belong to one run.
    if (comparing)
        for (QDockWidget* d : window.findChildren<QDockWidget*>()) d->hide();
    // Show something worth a picture: the first out-of-memory event of a
    // single run, else its peak, and the allocator state at that moment.
    if (RunView* v = comparing ? nullptr : window.currentRunView()) {
        if (options.color_by) v->setViewMode(*options.color_by);
        if (!v->goToOom()) v->goToPeak();
        // Pin the largest allocation live at the peak, so the inspector shows
        // a stack (not for a stacks or leaks dock: their highlight is the picture).
        const DeviceTimeline* tl = v->plot()->timeline();
        const bool dockHighlights = options.dock == QLatin1String("flame") ||
                                    options.dock == QLatin1String("leaks") ||
                                    options.dock == QLatin1String("lines");
        if (tl && !tl->peak.live_intervals.empty() && !dockHighlights) {
            const uint32_t i = tl->peak.live_intervals.front();
            v->plot()->setPinned(i);
            window.inspector()->setAllocation(v->run(), v->device(), i);
        }
    }
    // The whole run after the pin: the inspector still names the peak's
    // largest allocation, the plot shows every phase.
    if (RunView* v = comparing ? nullptr : window.currentRunView(); v && options.whole_run)
        v->zoom()->reset();
    // By module, the by-module table is the dock worth showing.
    const bool byModule = options.color_by == ViewMode::Module;
    if (byModule && !comparing)
        if (auto* dock = qobject_cast<QDockWidget*>(window.modulePanel()->parentWidget()))
            dock->raise();
    if (!options.dock.isEmpty() && !comparing && window.raiseDock(options.dock)) {
        // The bottom docks get room enough to read.
        QWidget* w =
            options.dock == QLatin1String("flame")   ? static_cast<QWidget*>(window.flamePanel())
            : options.dock == QLatin1String("leaks") ? static_cast<QWidget*>(window.leakPanel())
            : options.dock == QLatin1String("lines") ? static_cast<QWidget*>(window.linesPanel())
                                                     : nullptr;
        if (auto* dock = w ? qobject_cast<QDockWidget*>(w->parentWidget()) : nullptr)
            window.resizeDocks({dock}, {options.size.height() * 2 / 5}, Qt::Vertical);
        QApplication::processEvents();
        if (options.dock == QLatin1String("flame")) {
            // The deepest frame of the largest stack: its allocations highlighted.
            FlamePanel* f = window.flamePanel();
            const FrameTree& tree = f->tree();
            int32_t node = tree.nodes.empty() ? -1 : 0;
            // The largest stack with frames, not the allocations without one.
            if (node == 0)
                for (int32_t c : tree.nodes[0].children)
                    if (tree.nodes[size_t(c)].frame != kNoStackFrame) {
                        node = c;
                        break;
                    }
            while (node >= 0 && !tree.nodes[size_t(node)].children.empty())
                node = tree.nodes[size_t(node)].children.front();
            if (node > 0) f->activateNode(node);
        } else if (options.dock == QLatin1String("leaks")) {
            // The whole run: growth shows over the steps, not at the peak.
            if (RunView* v = window.currentRunView()) v->zoom()->reset();
            LeakPanel* l = window.leakPanel();
            for (int d = 0; d < int(l->report().devices.size()); ++d)
                if (!l->report().devices[size_t(d)].groups.empty()) {
                    l->activateGroup(d, 0);
                    break;
                }
        } else if (options.dock == QLatin1String("lines")) {
            // The largest user line: its allocations highlighted at the peak.
            LinesPanel* l = window.linesPanel();
            for (int r = 0; r < int(l->lines().rows.size()); ++r)
                if (!l->lines().rows[size_t(r)].file.empty()) {
                    l->activateRow(r);
                    break;
                }
        }
    }
    window.allocatorView()->waitForIdle();
    QApplication::processEvents();
    // The zoom's rebuild and the plot's replot are queued one after the
    // other; one processEvents pass may run the first only, and the picture
    // would show the plot before it moved to the peak.
    if (RunView* v = window.currentRunView()) v->plot()->renderNow();
    if (comparing && window.compareView()) {
        if (options.align) window.compareView()->setAlignMode(*options.align);
        if (!options.compare_tab.isEmpty()) window.compareView()->showTab(options.compare_tab);
        // The allocations tab's picture is its click: the largest group with
        // a stack highlighted in both runs' plots (without one, the largest:
        // "(no stack)" is drawn grey, its highlight hard to see).
        if (options.compare_tab == QLatin1String("allocations")) {
            AllocationDiffPanel* p = window.compareView()->allocationPanel();
            int group = 0;
            if (p->diff())
                for (int g = 0; g < int(p->diff()->groups.size()); ++g)
                    if (p->diff()->groups[size_t(g)].site != "(no stack)") {
                        group = g;
                        break;
                    }
            p->activateGroup(group);
        }
        if (byModule) window.compareView()->setViewMode(ViewMode::Module);
        QApplication::processEvents();
        const QString table = window.compareView()->summaryModel()->toTextTable();
        std::fputs(table.toUtf8().constData(), stdout);
        std::fflush(stdout);
    }
    QString error;
    if (!exportWidget(&window, options.screenshot, &error)) {
        std::fprintf(stderr, "memscope: %s\n", qPrintable(error));
        return 1;
    }
    std::fprintf(stderr, "memscope: wrote %s\n",
                 qPrintable(QFileInfo(options.screenshot).absoluteFilePath()));
    return 0;
}

}  // namespace memscope::gui
