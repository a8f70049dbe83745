// Live bytes by module: at the peak the rows add up to it, grouping by layer,
// depth and exact module, the "outside" row, and a comparison's per-layer
// deltas in words. Traces are built here, so every byte's module is known.
#include "memscope/analysis/module_breakdown.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "../analysis_test_util.h"
#include "memscope/analysis/compare_table.h"
#include "memscope/format/native_format.h"
#include "memscope/report/compare_report.h"

namespace memscope {
namespace {

using testutil::event;

// A 3-layer model: each layer's forward (in blocks.k, with attn inside)
// keeps one activation per layer (`act(k)` bytes, `k`-dependent), freed in
// backward; a parameter lives from before the first scope; a temporary
// outside every module at the start.
struct ModelRun {
    Trace trace;
    int64_t peak_time = 0;
};
ModelRun modelRun(uint64_t act_scale, bool recompute_layer_1 = false) {
    ModelRun r;
    Trace& t = r.trace;
    ModuleInterner in(t);
    t.modules.source = ModuleSource::Recorded;
    t.events.push_back(event(0, EventKind::Alloc, 0x10, 4000, Category::Parameter));
    t.events.push_back(event(5, EventKind::Alloc, 0x20, 7, Category::Temporary));
    t.events.push_back(event(6, EventKind::FreeCompleted, 0x20, 7, Category::Temporary));
    const ModuleId root = in.intern("Net", "");
    t.modules.scopes.push_back({10, 400, root, ModuleScopeKind::Forward});
    int64_t time = 20;
    for (int k = 0; k < 3; ++k) {
        const ModuleId block = in.intern("Net", "blocks." + std::to_string(k), "Block");
        const ModuleId attn = in.intern("Net", "blocks." + std::to_string(k) + ".attn");
        t.modules.scopes.push_back({time, time + 100, block, ModuleScopeKind::Forward});
        t.modules.scopes.push_back({time + 10, time + 50, attn, ModuleScopeKind::Forward});
        // One activation in attn, one in the block itself.
        t.events.push_back(event(time + 20, EventKind::Alloc, 0x1000 + 0x100 * uint64_t(k),
                                 act_scale * uint64_t(k + 1), Category::Activation));
        t.events.push_back(event(time + 60, EventKind::Alloc, 0x8000 + 0x100 * uint64_t(k), 100,
                                 Category::Activation));
        time += 110;
    }
    r.peak_time = time;
    if (recompute_layer_1) {
        const ModuleId block = in.intern("Net", "blocks.1");
        t.modules.scopes.push_back({time + 5, time + 30, block, ModuleScopeKind::Recompute});
        t.events.push_back(event(time + 10, EventKind::Alloc, 0x9000, 5000, Category::Activation));
        t.events.push_back(
            event(time + 40, EventKind::FreeCompleted, 0x9000, 5000, Category::Activation));
    }
    for (int k = 2; k >= 0; --k) {
        t.events.push_back(event(time + 50 + k, EventKind::FreeCompleted,
                                 0x1000 + 0x100 * uint64_t(k), act_scale * uint64_t(k + 1),
                                 Category::Activation));
        t.events.push_back(event(time + 60 + k, EventKind::FreeCompleted,
                                 0x8000 + 0x100 * uint64_t(k), 100, Category::Activation));
    }
    return r;
}

int64_t rowBytes(const ModuleBreakdown& b, std::string_view path) {
    for (const ModuleBytes& r : b.rows)
        if (r.path == path) return r.bytes;
    return -1;
}

TEST(ModuleBreakdown, LayersAtThePeakAddUpToIt) {
    const ModelRun r = modelRun(1000);
    auto tl = Timeline::build(r.trace);
    ASSERT_TRUE(tl);
    const DeviceTimeline& d = *(*tl)->device(0);
    const ModuleAttribution a(r.trace);
    const ModuleBreakdown b = modulesAtPeak(r.trace, a, d);
    EXPECT_EQ(b.source, ModuleSource::Recorded);
    EXPECT_EQ(b.total, d.peak.bytes);
    int64_t sum = 0;
    for (const ModuleBytes& row : b.rows) sum += row.bytes;
    EXPECT_EQ(sum, d.peak.bytes);
    EXPECT_EQ(rowBytes(b, "blocks.0"), 1100);
    EXPECT_EQ(rowBytes(b, "blocks.1"), 2100);
    EXPECT_EQ(rowBytes(b, "blocks.2"), 3100);
    // The parameter was allocated outside every module.
    EXPECT_EQ(rowBytes(b, kOutsideModulesLabel), 4000);
    EXPECT_EQ(b.rows.front().path, "(outside modules)");
    EXPECT_EQ(b.rows[1].path, "blocks.2");
    for (const ModuleBytes& row : b.rows) {
        if (row.path.starts_with("blocks.")) {
            EXPECT_EQ(row.by_category[size_t(index(Category::Activation))], row.bytes);
        }
    }
}

TEST(ModuleBreakdown, GroupingByDepthAndExactModule) {
    const ModelRun r = modelRun(1000);
    auto tl = Timeline::build(r.trace);
    ASSERT_TRUE(tl);
    const DeviceTimeline& d = *(*tl)->device(0);
    const ModuleAttribution a(r.trace);
    const ModuleBreakdown exact = modulesAtPeak(r.trace, a, d, {ModuleGrouping::Exact});
    EXPECT_EQ(rowBytes(exact, "blocks.2.attn"), 3000);
    EXPECT_EQ(rowBytes(exact, "blocks.2"), 100);
    const ModuleBreakdown depth1 = modulesAtPeak(r.trace, a, d, {ModuleGrouping::Depth, 1});
    EXPECT_EQ(rowBytes(depth1, "blocks"), 6300);
    const ModuleBreakdown depth0 = modulesAtPeak(r.trace, a, d, {ModuleGrouping::Depth, 0});
    EXPECT_EQ(rowBytes(depth0, "Net"), 6300);
}

TEST(ModuleBreakdown, RecomputedBytesAreCountedAndNoModulesSaysSo) {
    const ModelRun r = modelRun(1000, true);
    auto tl = Timeline::build(r.trace);
    ASSERT_TRUE(tl);
    const DeviceTimeline& d = *(*tl)->device(0);
    const ModuleAttribution a(r.trace);
    const ModuleBreakdown at = modulesAt(r.trace, a, d, r.peak_time + 20);
    for (const ModuleBytes& row : at.rows) {
        if (row.path == "blocks.1") {
            EXPECT_EQ(row.recomputed_bytes, 5000);
        } else {
            EXPECT_EQ(row.recomputed_bytes, 0) << row.path;
        }
    }

    Trace plain = r.trace;
    plain.modules = ModuleTable();
    const ModuleAttribution none(plain);
    const ModuleBreakdown nb = modulesAtPeak(plain, none, d);
    EXPECT_EQ(nb.source, ModuleSource::None);
    ASSERT_EQ(nb.rows.size(), 1u);
    EXPECT_EQ(nb.rows[0].path, kOutsideModulesLabel);
}

TEST(ModuleBreakdown, DeltasMatchByPathAndConsecutiveLayersShareALine) {
    const ModelRun base = modelRun(1000);
    const ModelRun cand = modelRun(100);
    auto tb = Timeline::build(base.trace);
    auto tc = Timeline::build(cand.trace);
    ASSERT_TRUE(tb && tc);
    const ModuleAttribution ab(base.trace), ac(cand.trace);
    const ModuleBreakdown b = modulesAtPeak(base.trace, ab, *(*tb)->device(0));
    const ModuleBreakdown c = modulesAtPeak(cand.trace, ac, *(*tc)->device(0));
    const auto deltas = compareModules(Baseline<ModuleBreakdown>{b}, Candidate<ModuleBreakdown>{c});
    ASSERT_FALSE(deltas.empty());
    EXPECT_EQ(deltas.front().path, "blocks.2");
    EXPECT_EQ(deltas.front().delta, -2700);
    EXPECT_EQ(deltas.front().delta_by_category[size_t(index(Category::Activation))], -2700);
    const auto lines = describeModuleChanges(deltas);
    ASSERT_EQ(lines.size(), 1u);
    // blocks.0 (−900) + blocks.1 (−1800) + blocks.2 (−2700), one line.
    EXPECT_EQ(lines[0], "blocks.0\u2013blocks.2: \u22125.27 KiB activation");

    // Through the compare table: the text names the layers, the rows carry
    // the deltas.
    const std::vector<CompareInput> inputs = {{"a", "full", RunRef{&base.trace, (*tb)->device(0)}},
                                              {"b", "ckpt", RunRef{&cand.trace, (*tc)->device(0)}}};
    const CompareTable table = buildCompareTable(inputs, 0, AlignMode::Time);
    EXPECT_TRUE(table.rows[0].module_deltas.front().delta == 0);
    EXPECT_EQ(table.rows[1].module_deltas.front().delta, -2700);
    EXPECT_NE(toText(table).find("blocks.0\u2013blocks.2: "), std::string::npos) << toText(table);
    EXPECT_NE(toJson(table).find("\"module_deltas\""), std::string::npos);
}

TEST(ModuleBreakdown, NonConsecutiveOrDifferentlyLedLayersStayApart) {
    std::vector<ModuleDelta> d(3);
    d[0].path = "h.0";
    d[0].delta = -10;
    d[0].delta_by_category[size_t(index(Category::Activation))] = -10;
    d[1].path = "h.2";  // not next to h.0
    d[1].delta = -20;
    d[1].delta_by_category[size_t(index(Category::Activation))] = -20;
    d[2].path = "h.3";  // led by another category
    d[2].delta = 30;
    d[2].delta_by_category[size_t(index(Category::Gradient))] = 30;
    const auto lines = describeModuleChanges(d, 5);
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_EQ(lines[0], "h.3: +30 B gradient");
    EXPECT_EQ(lines[1], "h.2: \u221220 B activation");
}

TEST(ModuleBreakdown, HostileModuleTablesStayBoundedThroughTheNativeFormat) {
    // 100,000 modules each nested in the one before, a scope each nested
    // likewise, 100,000 distinct names and a 1 MiB one, written by hand (not
    // through ModuleInterner's clamps) and read back.
    Trace t;
    t.modules.source = ModuleSource::Recorded;
    const StringId root = t.internString("M");
    constexpr int kCount = 100000;
    for (int i = 0; i < kCount; ++i) {
        Module m;
        m.root = root;
        m.path = t.internString(i == 7 ? std::string(1 << 20, 'n') : "m" + std::to_string(i));
        m.parent = ModuleId(uint32_t(i));  // the previous one
        t.modules.add(m);
        t.modules.scopes.push_back(
            {i, 2 * kCount - i, ModuleId(uint32_t(i + 1)), ModuleScopeKind::Forward});
    }
    t.events.push_back(event(kCount, EventKind::Alloc, 0x10, 64, Category::Activation));
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("memscope_hostile_modules_" + std::to_string(::getpid())))
                                 .string();
    ASSERT_TRUE(writeNativeTrace(t, path));
    auto loaded = readNativeTrace(path);
    std::filesystem::remove(path);
    ASSERT_TRUE(loaded) << loaded.message();
    ASSERT_EQ(loaded->modules.modules.size(), size_t(kCount));
    uint16_t deepest = 0;
    for (const Module& m : loaded->modules.modules) deepest = std::max(deepest, m.depth);
    EXPECT_EQ(deepest, kMaxModuleDepth);
    const ModuleAttribution a(*loaded);
    const auto hit = a.at(kCount);
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->module, ModuleId(uint32_t(kCount)));  // the innermost: started last
    // Walks up the chain are bounded by the depth cap, not by the chain.
    EXPECT_FALSE(layerOf(*loaded, hit->module).isNull());
    auto tl = Timeline::build(*loaded);
    ASSERT_TRUE(tl);
    const ModuleBreakdown b = modulesAtPeak(*loaded, a, *(*tl)->device(0));
    ASSERT_EQ(b.rows.size(), 1u);
    EXPECT_EQ(b.rows[0].bytes, 64);
    EXPECT_LE(b.rows[0].path.size(), size_t(1 << 20) + 64);
}

}  // namespace
}  // namespace memscope
