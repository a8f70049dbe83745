// The out-of-memory report: the request, the cache's and the device's free
// memory, the largest free block, the verdict both ways, what was alive by
// category and site, and the phase; on hand-built traces and real snapshots.
#include "memscope/analysis/oom_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>

#include "../analysis_test_util.h"
#include "memscope/builtin_plugins.h"
#include "memscope/open/open_run.h"
#include "memscope/timeline/timeline.h"

namespace memscope {
namespace {

using testutil::event;

constexpr uint64_t kSeg = 0x10000;

// One 1000-byte segment: five blocks, then the first (300 B) and the third
// (300 B) freed, so the cache holds 600 B free in two 300-byte holes between
// 400 B still live (a parameter of 100 B, activations of 100 B and 200 B).
// Then an OOM asking for `request` bytes, with device_free recorded as 64.
Trace fragmentedRun(uint64_t request, PhaseId phase = {}) {
    Trace t;
    t.events = {
        event(10, EventKind::SegmentAlloc, kSeg, 1000, Category::Unknown),
        event(11, EventKind::Alloc, kSeg, 300, Category::Temporary),
        event(12, EventKind::Alloc, kSeg + 300, 100, Category::Parameter),
        event(13, EventKind::Alloc, kSeg + 400, 300, Category::Temporary),
        event(14, EventKind::Alloc, kSeg + 700, 100, Category::Activation),
        event(15, EventKind::Alloc, kSeg + 800, 200, Category::Activation),
        event(16, EventKind::FreeCompleted, kSeg, 300, Category::Temporary),
        event(17, EventKind::FreeCompleted, kSeg + 400, 300, Category::Temporary),
        event(20, EventKind::Oom, 0, request, Category::Unknown, phase),
        event(30, EventKind::FreeCompleted, kSeg + 800, 200, Category::Activation),
    };
    t.attributes.push_back(EventAttribute{8, t.internString("device_free"), t.internString("64")});
    return t;
}

std::vector<OomReport> reportsOf(const Trace& t) {
    auto tl = Timeline::build(t);
    EXPECT_TRUE(tl.ok()) << tl.message();
    auto r = oomReports(t, (*tl)->devices().at(0));
    EXPECT_TRUE(r.ok()) << r.message();
    return r.ok() ? *r : std::vector<OomReport>{};
}

TEST(OomReport, FragmentationWhenTheCacheHoldsEnoughButNoBlockThatLarge) {
    const auto reports = reportsOf(fragmentedRun(500));
    ASSERT_EQ(reports.size(), 1u);
    const OomReport& r = reports[0];
    EXPECT_EQ(r.device, 0);
    EXPECT_EQ(r.trace_event, 8u);
    EXPECT_EQ(r.event_index, 8);
    EXPECT_EQ(r.time, 20);
    EXPECT_EQ(r.since_start, 10);
    EXPECT_EQ(r.requested_bytes, 500u);
    EXPECT_EQ(r.device_free_bytes, 64u);
    EXPECT_EQ(r.reserved_bytes, 1000u);
    EXPECT_EQ(r.allocated_bytes, 400u);
    EXPECT_EQ(r.cachedFreeBytes(), 600u);
    EXPECT_EQ(r.largest_free_block, 300u);
    EXPECT_EQ(r.active_bytes, 400);
    EXPECT_EQ(r.verdict, OomVerdict::Fragmentation);
    EXPECT_EQ(r.by_category[size_t(index(Category::Parameter))], 100);
    EXPECT_EQ(r.by_category[size_t(index(Category::Activation))], 300);
    EXPECT_EQ(r.by_category[size_t(index(Category::Temporary))], 0);
    EXPECT_TRUE(r.category_sources[size_t(index(Category::Activation))].recorded);
    EXPECT_FALSE(r.category_sources[size_t(index(Category::Activation))].inferred);
    const std::string v = describeVerdict(r);
    EXPECT_NE(v.find("fragmentation"), std::string::npos) << v;
    EXPECT_NE(v.find("600 B free"), std::string::npos) << v;
    EXPECT_NE(v.find("largest free block was 300 B"), std::string::npos) << v;
}

TEST(OomReport, MemoryFullWhenTheCacheHoldsLessThanTheRequest) {
    const auto reports = reportsOf(fragmentedRun(700));
    ASSERT_EQ(reports.size(), 1u);
    EXPECT_EQ(reports[0].verdict, OomVerdict::MemoryFull);
    const std::string v = describeVerdict(reports[0]);
    EXPECT_NE(v.find("memory full"), std::string::npos) << v;
    EXPECT_NE(v.find("the device 64 B"), std::string::npos) << v;
    EXPECT_NE(v.find("700 B asked for"), std::string::npos) << v;
}

TEST(OomReport, AFreeBlockLargeEnoughIsNamedAsUnusableNotFragmentation) {
    const auto reports = reportsOf(fragmentedRun(250));
    ASSERT_EQ(reports.size(), 1u);
    EXPECT_EQ(reports[0].verdict, OomVerdict::FreeBlockElsewhere);
}

TEST(OomReport, PhaseAndSitesAtTheOom) {
    testutil::Stacked s = testutil::realisticStack();
    Phase forward;
    forward.name = s.trace.internString("forward");
    forward.kind = PhaseKind::Forward;
    forward.start = 5;
    forward.end = 40;
    forward.inferred = true;
    const PhaseId f = s.trace.addPhase(forward);
    Trace base = fragmentedRun(500, f);
    s.trace.events = base.events;
    s.trace.attributes = {
        EventAttribute{8, s.trace.internString("device_free"), s.trace.internString("64")}};
    s.trace.events[4].stack = s.trace.events[5].stack = s.stack;  // the activations
    const auto reports = reportsOf(s.trace);
    ASSERT_EQ(reports.size(), 1u);
    const OomReport& r = reports[0];
    EXPECT_EQ(r.phase, f);
    EXPECT_TRUE(r.phase_inferred);
    ASSERT_FALSE(r.sites.empty());
    EXPECT_EQ(r.sites[0].label, "forward  (/home/me/project/model.py:7)");
    EXPECT_EQ(r.sites[0].bytes, 300);
    EXPECT_EQ(r.sites[0].count, 2u);
    const auto lines = oomReportLines(s.trace, r);
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines[0], "out of memory on device 0 at 0.000 s (event 8)");
    auto has = [&](std::string_view text) {
        return std::any_of(lines.begin(), lines.end(),
                           [&](const std::string& l) { return l.find(text) != std::string::npos; });
    };
    EXPECT_TRUE(has("asked for          500 B"));
    EXPECT_TRUE(has("largest free block 300 B"));
    EXPECT_TRUE(has("phase              forward  (inferred)"));
    EXPECT_TRUE(has("activation       300 B"));
    EXPECT_TRUE(has("model.py:7"));
}

TEST(OomReport, OneReportPerOomInTimeOrderAndNoneWithoutOne) {
    Trace t = fragmentedRun(500);
    t.events.push_back(event(40, EventKind::Oom, 0, 2000, Category::Unknown));
    auto reports = reportsOf(t);
    ASSERT_EQ(reports.size(), 2u);
    EXPECT_EQ(reports[1].time, 40);
    EXPECT_EQ(reports[1].active_bytes, 200);  // the 200-byte activation was freed at 30
    EXPECT_EQ(reports[1].verdict, OomVerdict::MemoryFull);
    EXPECT_FALSE(reports[1].device_free_bytes);

    t.events.resize(8);  // no OOM, but a history: nothing to report
    EXPECT_TRUE(reportsOf(t).empty());
}

TEST(OomReport, AnEndStateAloneGetsTheReportWithoutARequest) {
    Trace t;
    AllocatorState st;
    st.blocks = {Block{0x1000, 400, 400, {}, BlockState::ActiveAllocated},
                 Block{0x1190, 100, 0, {}, BlockState::Inactive},
                 Block{0x11f4, 500, 500, {}, BlockState::ActiveAllocated}};
    st.segments = {Segment{0x1000, 1000, 0, 0, 0, {}, 0, 3, 0, false, true}};
    t.allocator_state = st;
    const auto reports = reportsOf(t);
    ASSERT_EQ(reports.size(), 1u);
    const OomReport& r = reports[0];
    EXPECT_TRUE(r.endState());
    EXPECT_FALSE(r.requested_bytes);
    EXPECT_EQ(r.reserved_bytes, 1000u);
    EXPECT_EQ(r.active_bytes, 900);
    EXPECT_EQ(r.largest_free_block, 100u);
    EXPECT_EQ(r.verdict, OomVerdict::Unknown);
    const auto lines = oomReportLines(t, r);
    EXPECT_NE(lines.at(0).find("end state on device 0"), std::string::npos);
}

std::filesystem::path snapshot(const char* name) {
    return std::filesystem::path(MEMSCOPE_FIXTURES_DIR) / "snapshots" / name;
}

TEST(OomReport, RealSnapshotWithAnOomOnDeviceOne) {
    const auto file = snapshot("expandable_map_unmap_oom_3dev_cpp_frames__code_location.pickle");
    if (!std::filesystem::exists(file))
        GTEST_SKIP() << "fixtures folder missing: " << MEMSCOPE_FIXTURES_DIR;
    auto run = openRun(file.string(), processRegistry());
    ASSERT_TRUE(run.ok()) << run.message();
    const OpenedTrace& part = run->parts.at(0);
    for (int16_t dev : {0, 2}) {
        auto none = oomReports(*part.trace, *part.timeline->device(dev));
        ASSERT_TRUE(none.ok());
        EXPECT_TRUE(none->empty()) << "device " << dev;
    }
    auto reports = oomReports(*part.trace, *part.timeline->device(1));
    ASSERT_TRUE(reports.ok()) << reports.message();
    ASSERT_EQ(reports->size(), 1u);
    const OomReport& r = reports->front();
    constexpr double GiB = 1024.0 * 1024 * 1024, MiB = 1024.0 * 1024;
    EXPECT_EQ(r.device, 1);
    EXPECT_EQ(r.requested_bytes, 5308694528u);  // 4.94 GiB
    EXPECT_EQ(r.device_free_bytes, 95682560u);  // 91.2 MiB
    EXPECT_NEAR(double(r.active_bytes) / GiB, 78.3, 0.05);
    EXPECT_NEAR(double(*r.device_free_bytes) / MiB, 91.25, 0.05);
    EXPECT_GE(r.reserved_bytes, uint64_t(r.active_bytes));
    EXPECT_LT(r.cachedFreeBytes(), *r.requested_bytes);
    EXPECT_LT(r.largest_free_block, *r.requested_bytes);
    EXPECT_EQ(r.verdict, OomVerdict::MemoryFull);
    int64_t sum = 0;
    for (int64_t b : r.by_category) sum += b;
    EXPECT_EQ(sum, r.active_bytes);
    EXPECT_FALSE(r.sites.empty());
}

TEST(OomReport, RealLegacySnapshotOfTheEndStateOnly) {
    const auto file = snapshot("legacy_block_history_oom__LLM-inference.pickle");
    if (!std::filesystem::exists(file))
        GTEST_SKIP() << "fixtures folder missing: " << MEMSCOPE_FIXTURES_DIR;
    auto run = openRun(file.string(), processRegistry());
    ASSERT_TRUE(run.ok()) << run.message();
    const OpenedTrace& part = run->parts.at(0);
    auto reports = oomReports(*part.trace, *part.timeline->device(0));
    ASSERT_TRUE(reports.ok()) << reports.message();
    ASSERT_EQ(reports->size(), 1u);
    const OomReport& r = reports->front();
    EXPECT_TRUE(r.endState());
    EXPECT_EQ(r.reserved_bytes, 11844714496u);
    EXPECT_EQ(r.active_bytes, 11840159744);
    EXPECT_EQ(r.largest_free_block, 2080768u);
    EXPECT_EQ(r.verdict, OomVerdict::Unknown);
    EXPECT_FALSE(r.sites.empty());
}

}  // namespace
}  // namespace memscope
