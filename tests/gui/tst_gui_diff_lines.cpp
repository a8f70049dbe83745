// The compare view's "allocations" and "lines" tabs and the "lines at peak"
// dock: the tabs exist by their command-line names; the allocations table's
// totals are the difference of the live bytes, and a click on a group
// highlights exactly its allocations in both runs' plots; the lines dock's
// rows and each run's column of the lines tab add up to the peak, and a
// click on a line highlights its allocations.
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>

#include "analysis_test_util.h"
#include "compare/allocation_diff_panel.h"
#include "compare/compare_view.h"
#include "compare/line_compare_panel.h"
#include "gui_test_traces.h"
#include "lines/lines_panel.h"
#include "loading/run_loader.h"
#include "run_view/run_view.h"
#include "run_view/timeline_plot.h"
#include "window/app_options.h"
#include "window/main_window.h"

using namespace memscope;
using namespace memscope::gui;

namespace {

RunPtr runOf(Trace t, const QString& name) {
    auto r = makeRun(std::move(t), name);
    return r.ok() ? *r : nullptr;
}

// A keeps each step's logits (2 MiB a step at "forward (model.py:50)"), B
// frees them; both keep a hook's outputs.
std::vector<RunPtr> twoRuns() {
    return {
        runOf(
            testutil::leakyRun({.keep_logits = true, .hook_stores = true, .plateau_cache = false}),
            QStringLiteral("keeps.memscope")),
        runOf(
            testutil::leakyRun({.keep_logits = false, .hook_stores = true, .plateau_cache = false}),
            QStringLiteral("frees.memscope"))};
}

int64_t bytesOf(const DeviceTimeline& tl, const std::vector<uint32_t>& intervals) {
    int64_t sum = 0;
    for (uint32_t i : intervals) sum += int64_t(tl.intervals.at(i).size);
    return sum;
}

std::vector<uint32_t> sorted(std::vector<uint32_t> v) {
    std::sort(v.begin(), v.end());
    return v;
}

// Clicks a table's cell as a user would.
void clickCell(QTableWidget* table, int row, int column) {
    QTableWidgetItem* item = table->item(row, column);
    QVERIFY(item);
    table->scrollToItem(item);
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, table->visualItemRect(item).center());
}

}  // namespace

class DiffLinesTest : public QObject {
    Q_OBJECT
private slots:
    void tabsAndDocksByName() {
        QVERIFY(compareTabNames().contains(QStringLiteral("allocations")));
        QVERIFY(compareTabNames().contains(QStringLiteral("lines")));
        QVERIFY(dockNames().contains(QStringLiteral("lines")));
        CompareView c;
        c.setRuns(twoRuns());
        for (const QString& name :
             {QStringLiteral("allocations"), QStringLiteral("lines"), QStringLiteral("summary")}) {
            c.showTab(name);
            QCOMPARE(c.currentTabName(), name);
        }
        // Every name names its own tab.
        for (const QString& name : compareTabNames()) {
            c.showTab(name);
            QCOMPARE(c.currentTabName(), name);
        }
        const AppOptions o = parseOptions(
            {QStringLiteral("memscope"), QStringLiteral("--screenshot"), QStringLiteral("x.png"),
             QStringLiteral("--compare"), QStringLiteral("--compare-tab"),
             QStringLiteral("allocations"), QStringLiteral("a"), QStringLiteral("b")});
        QVERIFY2(o.error.isEmpty(), qPrintable(o.error));
        QCOMPARE(o.compare_tab, QStringLiteral("allocations"));
    }

    void allocationTotalsAreTheLiveDifferenceAndAClickHighlightsBothRuns() {
        CompareView c;
        c.resize(1400, 900);
        c.show();
        c.setRuns(twoRuns());
        QCOMPARE(c.plotCount(), 2);
        c.showTab(QStringLiteral("allocations"));
        AllocationDiffPanel* p = c.allocationPanel();
        const int a = p->baseline(), b = p->candidate();
        QVERIFY(a >= 0 && b >= 0 && a != b);
        QVERIFY2(p->diff().has_value(), qPrintable(p->headline()));
        const AllocationDiff& d = *p->diff();
        const DeviceTimeline& ta = *c.plotAt(a)->timeline();
        const DeviceTimeline& tb = *c.plotAt(b)->timeline();
        QCOMPARE(d.a.live_bytes, ta.peak.bytes);
        QCOMPARE(d.b.live_bytes, tb.peak.bytes);
        QTableWidget* t = p->table();
        QCOMPARE(t->rowCount(), int(d.groups.size()) + 1);
        const int total = t->rowCount() - 1;
        auto raw = [&](int row, int column) {
            return t->item(row, column)->data(AllocationDiffPanel::RawRole).toLongLong();
        };
        QCOMPARE(raw(total, AllocationDiffPanel::OnlyA) - raw(total, AllocationDiffPanel::OnlyB),
                 ta.peak.bytes - tb.peak.bytes);
        QCOMPARE(raw(total, AllocationDiffPanel::Change), ta.peak.bytes - tb.peak.bytes);
        // The groups' rows add up to the totals row.
        int64_t onlyA = 0, onlyB = 0;
        for (int r = 0; r < total; ++r)
            onlyA += raw(r, AllocationDiffPanel::OnlyA),
                onlyB += raw(r, AllocationDiffPanel::OnlyB);
        QCOMPARE(onlyA, raw(total, AllocationDiffPanel::OnlyA));
        QCOMPARE(onlyB, raw(total, AllocationDiffPanel::OnlyB));

        // The largest difference: the kept logits, in A only.
        QVERIFY(!d.groups.empty());
        QCOMPARE(t->item(0, AllocationDiffPanel::Site)->text(),
                 QStringLiteral("forward  (model.py:50)"));
        QVERIFY(raw(0, AllocationDiffPanel::OnlyA) > 0);
        // A click on it: its allocations alive at A's peak highlighted in A's
        // plot (the logits of every step, 2 MiB each), B's in B's, by allocation.
        clickCell(t, 0, AllocationDiffPanel::Site);
        QVERIFY(c.plotAt(a)->viewMode() == ViewMode::Allocation);
        const std::vector<uint32_t>& ha = c.plotAt(a)->highlightedAllocations();
        const std::vector<uint32_t>& hb = c.plotAt(b)->highlightedAllocations();
        QCOMPARE(sorted(ha), sorted(d.groups[0].a_intervals));
        QCOMPARE(sorted(hb), sorted(d.groups[0].b_intervals));
        QCOMPARE(bytesOf(ta, ha),
                 raw(0, AllocationDiffPanel::OnlyA) + raw(0, AllocationDiffPanel::Both));
        QCOMPARE(bytesOf(tb, hb),
                 raw(0, AllocationDiffPanel::OnlyB) + raw(0, AllocationDiffPanel::Both));
        // Independently of the group: A's allocations live at its peak of
        // the logits' size and stack are the ones highlighted.
        std::vector<uint32_t> logits;
        for (uint32_t i : ta.peak.live_intervals)
            if (ta.intervals[i].size == 2u << 20 &&
                ta.intervals[i].category == Category::Activation)
                logits.push_back(i);
        QCOMPARE(sorted(ha), sorted(logits));
        QCOMPARE(int(ha.size()), 10);
        // B freed its logits before its peak: none there, its plot fades whole.
        QVERIFY(d.groups[0].b_intervals.empty());
        QVERIFY(c.plotAt(b)->highlightActive());
        QVERIFY(c.plotAt(a)->highlightActive());
        for (uint32_t i : hb)
            QVERIFY(std::count(tb.peak.live_intervals.begin(), tb.peak.live_intervals.end(), i) ==
                    1);
        // The totals row clears the highlight.
        clickCell(t, total, AllocationDiffPanel::Site);
        QVERIFY(c.plotAt(a)->highlightedAllocations().empty());
        QVERIFY(c.plotAt(b)->highlightedAllocations().empty());
        QVERIFY(!c.plotAt(a)->highlightActive());
        QVERIFY(!c.plotAt(b)->highlightActive());

        // At a step's forward: the totals are that moment's live difference.
        p->setMoment(QStringLiteral("step:2:forward"));
        QVERIFY2(p->diff().has_value(), qPrintable(p->headline()));
        QVERIFY(!p->diff()->moment.peak);
        QCOMPARE(p->diff()->moment.step, 2);
        const int last = t->rowCount() - 1;
        QCOMPARE(raw(last, AllocationDiffPanel::Change),
                 p->diff()->a.live_bytes - p->diff()->b.live_bytes);
        QCOMPARE(p->diff()->a.live_bytes, int64_t(bytesOf(ta, ta.liveAt(p->diff()->a.time))));
    }

    void aThirdRunTakesNoPartInAgainstB() {
        std::vector<RunPtr> runs = twoRuns();
        runs.push_back(runOf(testutil::leakyRun({}), QStringLiteral("third.memscope")));
        CompareView c;
        c.resize(1400, 900);
        c.show();
        c.setRuns(runs);
        AllocationDiffPanel* p = c.allocationPanel();
        QCOMPARE(p->baseline(), 0);
        p->setCandidate(1);
        QVERIFY(p->diff().has_value());
        p->activateGroup(0);
        QVERIFY(!c.plotAt(0)->highlightedAllocations().empty());
        QVERIFY(c.plotAt(1)->highlightActive());
        QVERIFY(!c.plotAt(2)->highlightActive());
        QVERIFY(c.plotAt(2)->highlightedAllocations().empty());
    }

    void compareLinesAddUpPerRunAndAClickHighlightsEveryRun() {
        CompareView c;
        c.resize(1400, 900);
        c.show();
        c.setRuns(twoRuns());
        c.showTab(QStringLiteral("lines"));
        LineComparePanel* p = c.linePanel();
        QTableWidget* t = p->table();
        const LinesCompared& lines = p->lines();
        QCOMPARE(t->rowCount(), int(lines.rows.size()) + 1);
        for (int k = 0; k < 2; ++k) {
            const int64_t peak = c.plotAt(k)->timeline()->peak.bytes;
            int64_t sum = 0;
            for (int r = 0; r + 1 < t->rowCount(); ++r)
                sum += t->item(r, LineComparePanel::bytesColumn(k))
                           ->data(LineComparePanel::RawRole)
                           .toLongLong();
            QCOMPARE(sum, peak);
            QCOMPARE(t->item(t->rowCount() - 1, LineComparePanel::bytesColumn(k))
                         ->data(LineComparePanel::RawRole)
                         .toLongLong(),
                     peak);
        }
        // One row per line in both runs: the hook's line is in both.
        int hook = -1;
        for (int r = 0; r < int(lines.rows.size()); ++r)
            if (lines.rows[size_t(r)].label == "save_output  (train.py:20)") hook = r;
        QVERIFY(hook >= 0);
        QVERIFY(lines.rows[size_t(hook)].bytes[0] > 0 && lines.rows[size_t(hook)].bytes[1] > 0);
        clickCell(t, hook, 0);
        for (int k = 0; k < 2; ++k) {
            const std::vector<uint32_t>& h = c.plotAt(k)->highlightedAllocations();
            QCOMPARE(sorted(h), sorted(lines.rows[size_t(hook)].intervals[size_t(k)]));
            QCOMPARE(bytesOf(*c.plotAt(k)->timeline(), h),
                     lines.rows[size_t(hook)].bytes[size_t(k)]);
        }
    }

    void linesDockRowsAddUpToThePeakAndAClickHighlights() {
        QTemporaryDir dir;
        const QString path = guitest::writeTrace(
            testutil::leakyRun({.keep_logits = true, .hook_stores = true, .plateau_cache = false}),
            dir.filePath(QStringLiteral("leaky.memscope")));
        QVERIFY(!path.isEmpty());
        MainWindow w(false);
        w.resize(1200, 800);
        w.show();
        w.openPaths({path});
        w.waitForLoads();
        RunView* v = w.currentRunView();
        QVERIFY(v);
        QVERIFY(w.raiseDock(QStringLiteral("lines")));
        QApplication::processEvents();
        LinesPanel* panel = w.linesPanel();
        QTableWidget* t = panel->table();
        const DeviceTimeline* tl = v->plot()->timeline();
        QVERIFY(tl);
        QVERIFY(t->rowCount() > 1);
        int64_t sum = 0;
        for (int r = 0; r < t->rowCount(); ++r)
            sum += t->item(r, LinesPanel::Bytes)->data(LinesPanel::RawRole).toLongLong();
        QCOMPARE(sum, tl->peak.bytes);
        QCOMPARE(panel->lines().total, tl->peak.bytes);
        QCOMPARE(t->item(0, LinesPanel::Line)->text(),
                 QStringLiteral("forward  (/home/me/model.py:50)"));
        QCOMPARE(t->item(0, LinesPanel::Module)->text(), QStringLiteral("head"));
        clickCell(t, 0, LinesPanel::Bytes);
        QVERIFY(v->viewMode() == ViewMode::Allocation);
        const std::vector<uint32_t>& h = v->plot()->highlightedAllocations();
        QCOMPARE(sorted(h), sorted(panel->lines().rows[0].intervals));
        QCOMPARE(int(h.size()), 10);
        QCOMPARE(bytesOf(*tl, h),
                 t->item(0, LinesPanel::Bytes)->data(LinesPanel::RawRole).toLongLong());
        for (uint32_t i : h) QCOMPARE(tl->intervals[i].size, uint64_t(2u << 20));
    }
};

QTEST_MAIN(DiffLinesTest)
#include "tst_gui_diff_lines.moc"
