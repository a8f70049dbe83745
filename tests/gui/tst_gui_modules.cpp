// Which layer holds the memory, in the GUI: the by-module table at the peak
// (rows, bytes adding up to the peak), the click that highlights exactly one
// module's allocations, stacking by module (bands that add up to the live
// curve and match core's modulesAt), the module first in hover and
// inspector, the op (recorded or inferred) in the inspector, the compare view's module deltas, and
// the one message a trace without modules gets everywhere.
#include <QDockWidget>
#include <QtTest>
#include <algorithm>
#include <map>

#include "common/format.h"
#include "common/module_text.h"
#include "common/plot_export.h"
#include "compare/compare_view.h"
#include "compare/module_compare.h"
#include "gui_test_traces.h"
#include "inspect/inspector_view.h"
#include "inspect/module_panel.h"
#include "inspect/module_table_model.h"
#include "loading/run_loader.h"
#include "memscope/view/module_stack.h"
#include "run_view/run_view.h"
#include "run_view/timeline_plot.h"
#include "run_view/zoom_state.h"
#include "window/main_window.h"

using namespace memscope;
using namespace memscope::gui;

namespace {

RunPtr runOf(Trace t, const QString& name) {
    auto r = makeRun(std::move(t), name);
    return r.ok() ? *r : nullptr;
}

// The test trace's intervals by allocation address.
std::vector<uint32_t> intervalsAt(const DeviceTimeline& tl, std::initializer_list<uint64_t> addrs) {
    std::vector<uint32_t> out;
    for (uint32_t i = 0; i < tl.intervals.size(); ++i)
        if (std::find(addrs.begin(), addrs.end(), tl.intervals[i].address) != addrs.end())
            out.push_back(i);
    return out;
}

// A module of the trace by its path.
ModuleId moduleIdOf(const Trace& t, const std::string& path) {
    for (uint32_t i = 1; i <= t.modules.modules.size(); ++i)
        if (modulePath(t, ModuleId(i)) == path) return ModuleId(i);
    return {};
}

}  // namespace

class ModulesTest : public QObject {
    Q_OBJECT
private:
    RunPtr run_;
    const Trace* trace() const { return run_->trace(run_->busiestDevice()); }
    const DeviceTimeline* tl() const { return run_->timeline(run_->busiestDevice()); }
    const ModuleAttribution* attribution() const {
        return run_->moduleAttribution(run_->busiestDevice());
    }

private slots:
    void init() {
        run_ = runOf(guitest::makeModuleTrace(), QStringLiteral("modules.memscope"));
        QVERIFY(run_);
        QVERIFY(attribution());
        QVERIFY(attribution()->source() == ModuleSource::Recorded);
        QCOMPARE(tl()->peak.bytes, guitest::kModulePeakBytes);
    }

    void tableAtThePeakAddsUpToThePeak() {
        ModulePanel panel;
        panel.setSource(run_, run_->busiestDevice(), {});
        QVERIFY(panel.showsTable());
        const ModuleTableModel* m = panel.model();
        std::map<QString, qint64> bytes;
        qint64 sum = 0;
        double share = 0;
        for (int r = 0; r < m->rowCount(); ++r) {
            const QString path = m->data(m->index(r, ModuleTableModel::Module)).toString();
            const qint64 b =
                m->data(m->index(r, ModuleTableModel::Bytes), ModuleTableModel::RawRole)
                    .toLongLong();
            bytes[path] = b;
            sum += b;
            share +=
                m->data(m->index(r, ModuleTableModel::Share), ModuleTableModel::RawRole).toDouble();
        }
        QCOMPARE(sum, guitest::kModulePeakBytes);
        QVERIFY(std::abs(share - 1.0) < 1e-9);
        QCOMPARE(bytes[toQString(kOutsideModulesLabel)], 1000);
        QCOMPARE(bytes[QStringLiteral("h.0")], 500);
        QCOMPARE(bytes[QStringLiteral("h.1")], 500);
        QCOMPARE(bytes[QStringLiteral("lm_head")], 250);
        QCOMPARE(m->rowCount(), 4);
        // Most bytes first, and the categories inside a row named.
        QCOMPARE(m->data(m->index(0, ModuleTableModel::Module)).toString(),
                 toQString(kOutsideModulesLabel));
        const int h0 = m->rowOf(moduleIdOf(*trace(), "h.0"));
        QVERIFY(h0 >= 0);
        QVERIFY(m->data(m->index(h0, ModuleTableModel::Categories))
                    .toString()
                    .startsWith(QStringLiteral("activation")));
        QCOMPARE(m->data(m->index(h0, ModuleTableModel::Share)).toString(),
                 QStringLiteral("22.2%"));

        // Exact modules split the layers; the sum stays the peak.
        panel.setSource(run_, run_->busiestDevice(), {ModuleGrouping::Exact, 1});
        std::map<QString, qint64> exact;
        sum = 0;
        for (int r = 0; r < m->rowCount(); ++r) {
            const qint64 b =
                m->data(m->index(r, ModuleTableModel::Bytes), ModuleTableModel::RawRole)
                    .toLongLong();
            exact[m->data(m->index(r, ModuleTableModel::Module)).toString()] = b;
            sum += b;
        }
        QCOMPARE(sum, guitest::kModulePeakBytes);
        QCOMPARE(exact[QStringLiteral("h.0.attn")], 200);
        QCOMPARE(exact[QStringLiteral("h.0.mlp")], 300);
        QCOMPARE(exact[QStringLiteral("h.1.attn")], 400);
        QCOMPARE(exact[QStringLiteral("h.1.mlp")], 100);
    }

    void moduleStackSumsToTheLiveCurveAndMatchesCore() {
        for (ModuleGroupingSpec spec :
             {ModuleGroupingSpec{}, ModuleGroupingSpec{ModuleGrouping::Exact, 1},
              ModuleGroupingSpec{ModuleGrouping::Depth, 2}}) {
            for (size_t cap : {kMaxModuleBands, size_t(2)}) {
                const ModuleStack s = buildModuleStack(*trace(), *attribution(), *tl(), spec, cap);
                QVERIFY(!s.empty());
                QVERIFY(s.groups.size() <= cap + 2);  // + outside + other
                for (int64_t x = 0; x <= 85; ++x) {
                    int64_t sum = 0;
                    for (const ModuleStackGroup& g : s.groups) sum += g.live.valueAt(x);
                    QCOMPARE(sum, tl()->live.valueAt(x));
                    // Each band with a module of its own is core's row at x.
                    const ModuleBreakdown b = modulesAt(*trace(), *attribution(), *tl(), x, spec);
                    for (const ModuleStackGroup& g : s.groups) {
                        if (g.other) continue;
                        int64_t expect = 0;
                        for (const ModuleBytes& r : b.rows)
                            if (r.module == g.module) expect = r.bytes;
                        QCOMPARE(g.live.valueAt(x), expect);
                    }
                }
            }
        }
        // The cap folds the smallest groups into one "other" band.
        const ModuleStack capped =
            buildModuleStack(*trace(), *attribution(), *tl(), {ModuleGrouping::Exact, 1}, 2);
        QVERIFY(capped.groups.back().other);
        // 6 exact modules hold memory (R0 is h.0's own, in its recompute), 2 kept.
        QCOMPARE(capped.groups.back().members, 4u);
    }

    void plotStackedByModuleDrawsItsBands() {
        RunView view(run_);
        view.resize(1000, 600);
        view.setViewMode(ViewMode::Module);
        view.plot()->renderNow();
        QVERIFY(view.viewMode() == ViewMode::Module);
        const BandSet& bs = view.plot()->bands();
        QStringList labels;
        for (const Band& b : bs.bands) labels << b.label;
        QCOMPARE(labels, (QStringList{toQString(kOutsideModulesLabel), QStringLiteral("h.0"),
                                      QStringLiteral("h.1"), QStringLiteral("lm_head")}));
        // Stacked: each band's top at or above the one below; the top one
        // reaches the peak.
        for (size_t b = 1; b < bs.bands.size(); ++b)
            for (size_t k = 0; k < bs.xs.size(); ++k)
                QVERIFY(bs.bands[b].ys[k] >= bs.bands[b - 1].ys[k]);
        QCOMPARE(*std::max_element(bs.bands.back().ys.begin(), bs.bands.back().ys.end()),
                 double(guitest::kModulePeakBytes));
        QVERIFY(view.plot()->overlayMessage().isEmpty());

        // Hover: the module first; stacked by module, outside (1000 B) at the
        // bottom, then h.0 with A0a (200 B) first by start.
        const double x = view.plot()->axisMap().forward(guitest::kModulePeakTime);
        const QString hover = view.plot()->hoverTextAt(x, 1100);
        QVERIFY2(hover.startsWith(QStringLiteral("module: h.0.attn\n")), qPrintable(hover));
        const auto hit = view.plot()->allocationAt(x, 1100);
        QVERIFY(hit);
        QCOMPARE(tl()->intervals[*hit].address, uint64_t(0x2000));
        // Above h.0 and h.1 (1000 + 500 + 500): lm_head.
        QCOMPARE(tl()->intervals[*view.plot()->allocationAt(x, 2100)].address, uint64_t(0x7000));
    }

    void moduleTextSaysRecomputeAndInferred() {
        const auto r0 = intervalsAt(*tl(), {0x8000});
        QCOMPARE(r0.size(), size_t(1));
        QCOMPARE(allocationModuleText(*trace(), *attribution(), tl()->intervals[r0[0]]),
                 QStringLiteral("h.0 (recompute)"));
        const auto p = intervalsAt(*tl(), {0x1000});
        QCOMPARE(allocationModuleText(*trace(), *attribution(), tl()->intervals[p[0]]),
                 toQString(kOutsideModulesLabel));

        RunPtr inferred = runOf(guitest::makeModuleTrace(1, ModuleSource::Inferred),
                                QStringLiteral("inferred.memscope"));
        const DeviceRef d = inferred->busiestDevice();
        const DeviceTimeline& itl = *inferred->timeline(d);
        const auto a = intervalsAt(itl, {0x3000});
        QCOMPARE(allocationModuleText(*inferred->trace(d), *inferred->moduleAttribution(d),
                                      itl.intervals[a[0]]),
                 QStringLiteral("h.0.mlp (inferred)"));
        // Inferred bands are marked so, as inferred categories are.
        RunView view(inferred);
        view.resize(1000, 600);
        view.setViewMode(ViewMode::Module);
        view.plot()->renderNow();
        bool marked = false;
        for (const Band& b : view.plot()->bands().bands)
            if (b.label == QStringLiteral("h.0 (inferred)")) marked = b.inferred;
        QVERIFY(marked);
        ModulePanel panel;
        panel.setSource(inferred, d, {});
        QVERIFY(panel.headline().contains(QStringLiteral("inferred")));
        QVERIFY(panel.model()
                    ->headerData(ModuleTableModel::Module, Qt::Horizontal)
                    .toString()
                    .contains(QStringLiteral("inferred")));
    }

    void inspectorShowsTheModuleFirst() {
        InspectorView insp;
        const auto a = intervalsAt(*tl(), {0x5000});
        insp.setAllocation(run_, run_->busiestDevice(), a[0]);
        QVERIFY2(insp.summaryText().startsWith(QStringLiteral("module: <b>h.1.attn</b>")),
                 qPrintable(insp.summaryText()));
    }

    // The op that made the memory, recorded (op scopes) or inferred from
    // the C++ frames (per allocation), says which.
    void inspectorShowsTheOpAndItsSource() {
        Trace recorded = guitest::makeSimpleTrace();
        recorded.ops.source = OpSource::Recorded;
        recorded.ops.scopes = {OpScope{8, 12, recorded.internString("aten::addmm"), 0}};
        RunPtr r = runOf(std::move(recorded), QStringLiteral("recorded.memscope"));
        QVERIFY(r);
        const DeviceRef d = r->busiestDevice();
        InspectorView insp;
        insp.setAllocation(r, d, intervalsAt(*r->timeline(d), {0x1000})[0]);
        QVERIFY2(insp.summaryText().contains(QStringLiteral("op: aten::addmm (recorded)")),
                 qPrintable(insp.summaryText()));
        // Allocated outside every op: no op line.
        insp.setAllocation(r, d, intervalsAt(*r->timeline(d), {0x2000})[0]);
        QVERIFY(!insp.summaryText().contains(QStringLiteral("op:")));

        // A snapshot's C++ frames: the op is inferred when the run opens.
        Trace cpp = guitest::makeSimpleTrace();
        const FrameId mm = cpp.internFrame(
            {cpp.internString("at::_ops::mm::call(at::Tensor const&, at::Tensor const&)"),
             cpp.internString("??"), 0});
        const FrameId fwd =
            cpp.internFrame({cpp.internString("forward"), cpp.internString("model.py"), 12});
        const std::array frames{mm, fwd};
        const StackId stack = cpp.internStack(frames);
        for (Event& e : cpp.events)
            if (e.address == 0x1000) e.stack = stack;
        RunPtr inferred = runOf(std::move(cpp), QStringLiteral("snapshot.pickle"));
        QVERIFY(inferred);
        const DeviceRef di = inferred->busiestDevice();
        QVERIFY(inferred->trace(di)->ops.source == OpSource::Inferred);
        insp.setAllocation(inferred, di, intervalsAt(*inferred->timeline(di), {0x1000})[0]);
        QVERIFY2(
            insp.summaryText().contains(QStringLiteral("op: aten::mm (inferred from C++ frames)")),
            qPrintable(insp.summaryText()));
        insp.setAllocation(inferred, di, intervalsAt(*inferred->timeline(di), {0x2000})[0]);
        QVERIFY(!insp.summaryText().contains(QStringLiteral("op:")));
    }

    void clickOnARowHighlightsExactlyThatModule() {
        MainWindow window(false);
        window.resize(1400, 900);
        window.show();
        window.showRun(run_);
        RunView* view = window.currentRunView();
        QVERIFY(view);
        view->setViewMode(ViewMode::Category);
        ModulePanel* panel = window.modulePanel();
        QVERIFY(panel->showsTable());
        auto rowOf = [&](const QString& path) {
            for (int r = 0; r < panel->model()->rowCount(); ++r)
                if (panel->model()->data(panel->model()->index(r, 0)).toString() == path) return r;
            return -1;
        };
        const int h0 = rowOf(QStringLiteral("h.0"));
        QVERIFY(h0 >= 0);
        panel->activateRow(h0);
        // Stacked by category the plot cannot show modules: it stacks by module.
        QVERIFY(view->viewMode() == ViewMode::Module);
        std::vector<uint32_t> got = view->plot()->highlightedAllocations();
        std::vector<uint32_t> want = intervalsAt(*tl(), {0x2000, 0x3000, 0x4000, 0x8000});
        std::sort(got.begin(), got.end());
        QCOMPARE(got, want);

        // By allocation the same allocations stay lit.
        view->setViewMode(ViewMode::Allocation);
        panel->activateRow(rowOf(QStringLiteral("lm_head")));
        QVERIFY(view->viewMode() != ViewMode::Module);
        QCOMPARE(view->plot()->highlightedAllocations(), intervalsAt(*tl(), {0x7000}));
        // The outside row is a group too: the parameter.
        panel->activateRow(rowOf(toQString(kOutsideModulesLabel)));
        QCOMPARE(view->plot()->highlightedAllocations(), intervalsAt(*tl(), {0x1000}));

        // Another grouping regroups the table; the highlight goes.
        view->setModuleGrouping({ModuleGrouping::Exact, 1});
        QVERIFY(rowOf(QStringLiteral("h.0.attn")) >= 0);
        QVERIFY(view->plot()->highlightedAllocations().empty());
        panel->activateRow(rowOf(QStringLiteral("h.0.attn")));
        QCOMPARE(view->plot()->highlightedAllocations(), intervalsAt(*tl(), {0x2000}));
    }

    void traceWithoutModulesSaysSo() {
        // No frames either: nothing to infer modules from.
        Trace t = guitest::makeSimpleTrace();
        for (Event& e : t.events) e.stack = {};
        RunPtr plain = runOf(std::move(t), QStringLiteral("simple.memscope"));
        QVERIFY(plain);
        const DeviceRef d = plain->busiestDevice();
        ModulePanel panel;
        panel.setSource(plain, d, {});
        QCOMPARE(panel.headline(), noModulesMessage());
        QVERIFY(!panel.showsTable());
        QVERIFY(noModulesMessage().startsWith(QStringLiteral("no modules in this trace")));

        RunView view(plain);
        view.resize(1000, 600);
        view.setViewMode(ViewMode::Module);
        view.plot()->renderNow();
        QCOMPARE(view.plot()->overlayMessage(), noModulesMessage());
        view.setViewMode(ViewMode::Category);
        view.plot()->renderNow();
        QVERIFY(view.plot()->overlayMessage().isEmpty());

        InspectorView insp;
        insp.setAllocation(plain, d, 0);
        QVERIFY(insp.summaryText().contains(noModulesMessage().toHtmlEscaped()));
        // Hover has no module line to show.
        QVERIFY(!view.plot()
                     ->hoverTextAt(view.plot()->axisMap().forward(20), 50)
                     .contains(QStringLiteral("module:")));

        ModuleComparePanel cmp;
        cmp.setEntries({{plain, d, {}, QStringLiteral("a")}, {plain, d, {}, QStringLiteral("b")}},
                       0);
        QCOMPARE(cmp.headline(), noModulesMessage());
        QVERIFY(!cmp.showsTable());
    }

    void trainingRunByLayer() {
        RunPtr run = runOf(guitest::makeModuleTrainingTrace(6, 2), QStringLiteral("gpt.memscope"));
        QVERIFY(run);
        const DeviceRef d = run->busiestDevice();
        ModulePanel panel;
        panel.setSource(run, d, {});
        const ModuleTableModel* m = panel.model();
        constexpr qint64 kMiB = 1 << 20;
        qint64 sum = 0;
        int layers = 0;
        for (int r = 0; r < m->rowCount(); ++r) {
            const qint64 b =
                m->data(m->index(r, ModuleTableModel::Bytes), ModuleTableModel::RawRole)
                    .toLongLong();
            sum += b;
            const ModuleBytes& row = m->breakdown().rows[size_t(r)];
            if (!row.path.starts_with("h.")) continue;
            ++layers;
            // Each block: its saved activations (step 1's forward) and the
            // gradient its backward made in step 0.
            QCOMPARE(b, 36 * kMiB);
            QCOMPARE(row.by_category[size_t(index(Category::Activation))], 28 * kMiB);
            QCOMPARE(row.by_category[size_t(index(Category::Gradient))], 8 * kMiB);
        }
        QCOMPARE(layers, 6);
        QCOMPARE(sum, run->timeline(d)->peak.bytes);
    }

    // Not a check: with MEMSCOPE_MODULES_PNG set, the main window on a
    // training run stacked by module, the by-module dock raised, is written
    // there (the screenshot of the by-module views); with
    // MEMSCOPE_MODULES_TRACE, the run itself as a native trace.
    void screenshotWhenAsked() {
        const QString out = qEnvironmentVariable("MEMSCOPE_MODULES_PNG");
        if (out.isEmpty()) QSKIP("MEMSCOPE_MODULES_PNG not set");
        const Trace trace = guitest::makeModuleTrainingTrace(6, 2);
        // The same run as a file, for `memscope --screenshot --color-by module`.
        const QString file = qEnvironmentVariable("MEMSCOPE_MODULES_TRACE");
        if (!file.isEmpty()) QVERIFY(!guitest::writeTrace(trace, file).isEmpty());
        RunPtr run = runOf(trace, QStringLiteral("gpt.memscope"));
        MainWindow window(false);
        window.resize(1600, 1000);
        window.setAttribute(Qt::WA_DontShowOnScreen, true);
        window.show();
        window.showRun(run);
        RunView* v = window.currentRunView();
        v->setViewMode(ViewMode::Module);
        v->goToPeak();
        v->zoom()->reset();
        if (auto* dock = qobject_cast<QDockWidget*>(window.modulePanel()->parentWidget()))
            dock->raise();
        window.modulePanel()->activateRow(1);
        const DeviceTimeline* tl = v->plot()->timeline();
        v->plot()->setPinned(tl->peak.live_intervals.front());
        window.inspector()->setAllocation(run, v->device(), tl->peak.live_intervals.front());
        QApplication::processEvents();
        QString error;
        QVERIFY2(exportWidget(&window, out, &error), qPrintable(error));
    }

    void compareTableGivesDeltasAgainstTheBaseline() {
        RunPtr bigger = runOf(guitest::makeModuleTrace(2), QStringLiteral("bigger.memscope"));
        QVERIFY(bigger);
        CompareView view;
        view.resize(1200, 800);
        view.setRuns({run_, bigger});
        view.setBaseline(0);
        ModuleComparePanel* panel = view.modulePanel();
        QVERIFY(panel->showsTable());
        QCOMPARE(panel->candidate(), 1);
        const ModuleDeltaModel* m = panel->model();
        std::map<QString, std::array<qint64, 3>> rows;
        for (int r = 0; r < m->rowCount(); ++r) {
            auto raw = [&](int c) {
                return m->data(m->index(r, c), ModuleDeltaModel::RawRole).toLongLong();
            };
            rows[m->data(m->index(r, ModuleDeltaModel::Module)).toString()] = {
                raw(ModuleDeltaModel::Baseline), raw(ModuleDeltaModel::Candidate),
                raw(ModuleDeltaModel::Change)};
        }
        // The candidate's peak is at t 52 too: h.1 holds 2 x 500 there.
        QCOMPARE(rows[QStringLiteral("h.1")], (std::array<qint64, 3>{500, 1000, 500}));
        QCOMPARE(rows[QStringLiteral("h.0")], (std::array<qint64, 3>{500, 500, 0}));
        QCOMPARE(rows[QStringLiteral("lm_head")], (std::array<qint64, 3>{250, 250, 0}));
        // Largest change first, in core's order, and in core's words.
        QCOMPARE(m->data(m->index(0, ModuleDeltaModel::Module)).toString(), QStringLiteral("h.1"));
        QVERIFY(m->data(m->index(0, ModuleDeltaModel::ByCategory))
                    .toString()
                    .startsWith(QStringLiteral("activation")));
        QVERIFY(panel->headline().contains(QStringLiteral("h.1")));

        // The other way round: the deltas flip.
        view.setBaseline(1);
        QCOMPARE(panel->candidate(), 0);
        for (int r = 0; r < m->rowCount(); ++r)
            if (m->data(m->index(r, ModuleDeltaModel::Module)).toString() == QStringLiteral("h.1"))
                QCOMPARE(m->data(m->index(r, ModuleDeltaModel::Change), ModuleDeltaModel::RawRole)
                             .toLongLong(),
                         -500);
        // The compare plots stack by module too.
        view.setViewMode(ViewMode::Module);
        QVERIFY(view.plotAt(0)->viewMode() == ViewMode::Module);
        QVERIFY(view.plotAt(1)->viewMode() == ViewMode::Module);
    }
};

QTEST_MAIN(ModulesTest)
#include "tst_gui_modules.moc"
