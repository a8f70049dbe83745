// The stacks-alive and leaks docks: the icicle's widths add up to the live
// bytes at the peak and at a time, a click on a frame highlights exactly its
// live allocations in the plot; the leaks dock lists core's growth per device
// and its groups, a click on a group highlights its survivors, and a run that
// does not grow says so.
#include <QDockWidget>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>
#include <algorithm>

#include "analysis_test_util.h"
#include "gui_test_traces.h"
#include "loading/run_loader.h"
#include "run_view/run_view.h"
#include "run_view/timeline_plot.h"
#include "stacks/flame_panel.h"
#include "stacks/leak_panel.h"
#include "window/main_window.h"

using namespace memscope;
using namespace memscope::gui;

namespace {

RunPtr runOf(Trace t, const QString& name) {
    auto r = makeRun(std::move(t), name);
    return r.ok() ? *r : nullptr;
}

std::vector<uint32_t> intervalsAt(const DeviceTimeline& tl, std::initializer_list<uint64_t> addrs) {
    std::vector<uint32_t> out;
    for (uint32_t i = 0; i < tl.intervals.size(); ++i)
        if (std::find(addrs.begin(), addrs.end(), tl.intervals[i].address) != addrs.end())
            out.push_back(i);
    return out;
}

int32_t nodeNamed(const FrameTree& tree, const std::string& prefix) {
    for (size_t i = 0; i < tree.nodes.size(); ++i)
        if (tree.nodes[i].frame.rfind(prefix, 0) == 0) return int32_t(i);
    return -1;
}

// The sum of a row's rectangles, in pixels.
double rowWidth(const FlameGraph* g, const FrameTree& tree, int depth) {
    double w = 0;
    for (size_t i = 0; i < tree.nodes.size(); ++i)
        if (tree.nodes[i].depth == depth) w += g->nodeRect(int32_t(i)).width();
    return w;
}

}  // namespace

class StacksTest : public QObject {
    Q_OBJECT
private slots:
    void flameWidthsAddUpToTheLiveBytes() {
        RunPtr run = runOf(guitest::makeSimpleTrace(), QStringLiteral("simple.memscope"));
        QVERIFY(run);
        FlamePanel panel;
        panel.resize(800, 300);
        panel.show();
        panel.setSource(run, run->busiestDevice());
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        const FrameTree& tree = panel.tree();
        QVERIFY(!tree.nodes.empty());
        QVERIFY(panel.stacks().at_peak);
        QCOMPARE(tree.nodes[0].bytes, int64_t(400));
        QVERIFY2(panel.headline().contains(QStringLiteral("at the peak")),
                 qPrintable(panel.headline()));
        const FlameGraph* g = panel.graph();
        QVERIFY(g->width() > 100);
        // The root spans the graph; the row under it too (every stack has a
        // frame): the widths add up to the live bytes.
        QCOMPARE(g->nodeRect(0).width(), double(g->width()));
        QVERIFY(std::abs(rowWidth(g, tree, 1) - g->width()) < 1e-6);
        const double perByte = double(g->width()) / 400.0;
        for (size_t i = 1; i < tree.nodes.size(); ++i)
            QVERIFY(std::abs(g->nodeRect(int32_t(i)).width() - tree.nodes[i].bytes * perByte) <
                    1e-6);
        const int32_t bwd = nodeNamed(tree, "backward");
        QVERIFY(bwd > 0);
        QCOMPARE(tree.nodes[size_t(bwd)].bytes, int64_t(300));
        // Hover names the frame and its bytes.
        const QRectF r = g->nodeRect(bwd);
        QCOMPARE(g->nodeAt(r.center()), bwd);
        QVERIFY2(g->nodeText(bwd).contains(QStringLiteral("300 B")), qPrintable(g->nodeText(bwd)));
        QVERIFY(g->nodeText(bwd).contains(QStringLiteral("backward")));

        // At t = 45: B (300) and C (50, no stack) live.
        panel.setTime(45);
        QVERIFY(!panel.stacks().at_peak);
        QCOMPARE(panel.tree().nodes[0].bytes, int64_t(350));
        QVERIFY(std::abs(rowWidth(g, panel.tree(), 1) - g->width()) < 1e-6);
        QVERIFY(nodeNamed(panel.tree(), "(no stack)") > 0);
        panel.setTime(std::nullopt);
        QCOMPARE(panel.tree().nodes[0].bytes, int64_t(400));
    }

    void clickingAFrameHighlightsItsAllocations() {
        QTemporaryDir dir;
        const QString path = guitest::writeTrace(guitest::makeSimpleTrace(),
                                                 dir.filePath(QStringLiteral("simple.memscope")));
        QVERIFY(!path.isEmpty());
        MainWindow w(false);
        w.resize(1200, 800);
        w.show();
        w.openPaths({path});
        w.waitForLoads();
        RunView* v = w.currentRunView();
        QVERIFY(v);
        QVERIFY(w.raiseDock(QStringLiteral("flame")));
        QVERIFY(!w.raiseDock(QStringLiteral("nope")));
        FlamePanel* panel = w.flamePanel();
        QCOMPARE(panel->run(), v->run());
        QApplication::processEvents();
        const FrameTree& tree = panel->tree();
        const int32_t bwd = nodeNamed(tree, "backward");
        QVERIFY(bwd > 0);
        FlameGraph* g = panel->graph();
        QVERIFY(g->isVisible());
        QTest::mouseClick(g, Qt::LeftButton, {}, g->nodeRect(bwd).center().toPoint());
        QCOMPARE(g->selected(), bwd);
        const DeviceTimeline* tl = v->plot()->timeline();
        QVERIFY(v->viewMode() == ViewMode::Allocation);
        QVERIFY(v->plot()->highlightedAllocations() == intervalsAt(*tl, {0x2000}));
        // The root: every allocation live at the peak.
        panel->activateNode(0);
        QVERIFY(v->plot()->highlightedAllocations() == intervalsAt(*tl, {0x1000, 0x2000}));
        // A module highlight replaces it; clearing leaves none.
        v->highlightAllocations({});
        QVERIFY(v->plot()->highlightedAllocations().empty());
    }

    void leaksListGrowthAndGroups() {
        const Trace t =
            testutil::leakyRun({.keep_logits = true, .hook_stores = true, .plateau_cache = false});
        RunPtr run = runOf(t, QStringLiteral("leaky.memscope"));
        QVERIFY(run);
        RunView view(run);
        view.resize(1000, 500);
        view.show();
        LeakPanel panel;
        QObject::connect(&panel, &LeakPanel::allocationsHighlightRequested, &view,
                         [&view](RunPtr, DeviceRef, std::vector<uint32_t> iv) {
                             view.highlightAllocations(std::move(iv));
                         });
        panel.setSource(run, run->busiestDevice());
        QCOMPARE(panel.report().devices.size(), size_t(1));
        const DeviceGrowth& g = panel.report().devices[0];
        QVERIFY(g.grows);
        QVERIFY(!panel.report().steps_inferred);
        const QString text = panel.deviceText(0);
        QVERIFY2(text.contains(QStringLiteral("grows 2.50 MiB per step")), qPrintable(text));
        QVERIFY(!text.contains(QStringLiteral("inferred")));
        QTreeWidget* tree = panel.tree();
        QCOMPARE(tree->topLevelItemCount(), 1);
        QTreeWidgetItem* dev = tree->topLevelItem(0);
        QCOMPARE(dev->text(0), text);
        QCOMPARE(dev->childCount(), 2);
        QCOMPARE(dev->child(0)->text(0), QStringLiteral("head"));
        QCOMPARE(dev->child(0)->text(1), QStringLiteral("forward  (/home/me/model.py:50)"));
        QCOMPARE(dev->child(0)->text(4), QString::number(g.groups[0].first_step));
        QCOMPARE(dev->child(1)->text(0), QStringLiteral("blocks.3"));
        // A click on a group: its survivors, every one a 2 MiB logits.
        panel.activateGroup(0, 0);
        const std::vector<uint32_t>& hl = view.plot()->highlightedAllocations();
        QVERIFY(hl == g.groups[0].intervals);
        QCOMPARE(hl.size(), size_t(g.groups[0].count));
        const DeviceTimeline* tl = view.plot()->timeline();
        for (uint32_t i : hl) QCOMPARE(tl->intervals[i].size, uint64_t(2 << 20));
        QVERIFY(view.viewMode() == ViewMode::Allocation);
        QCOMPARE(tree->currentItem(), dev->child(0));
    }

    void aRunThatDoesNotGrowSaysSo() {
        RunPtr run = runOf(testutil::leakyRun({}), QStringLiteral("fixed.memscope"));
        QVERIFY(run);
        LeakPanel panel;
        panel.setSource(run, run->busiestDevice());
        QVERIFY2(panel.deviceText(0).endsWith(QStringLiteral("no growth")),
                 qPrintable(panel.deviceText(0)));
        QCOMPARE(panel.tree()->topLevelItem(0)->childCount(), 0);
        QVERIFY(panel.headline().contains(QStringLiteral("0 of 1 device grow")));
    }
};

QTEST_MAIN(StacksTest)
#include "tst_gui_stacks.moc"
