// What would have fit: an OOM replayed through the caching-allocator model
// under other settings and policies.
#include "memscope/whatif/oom_alternatives.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "../analysis_test_util.h"
#include "memscope/allocator/allocator_model_replay.h"
#include "memscope/analysis/oom_report.h"
#include "memscope/builtin_plugins.h"
#include "memscope/open/open_run.h"

namespace memscope {
namespace {

constexpr uint64_t MiB = 1024 * 1024;
using testutil::ev;

TEST(OomAlternatives, NamesTheSettingThatServesAFragmentationOom) {
    const Trace t = testutil::fragmentedOom();
    auto tl = Timeline::build(t);
    ASSERT_TRUE(tl.ok());
    auto reports = oomReports(t, (*tl)->devices().at(0));
    ASSERT_TRUE(reports.ok()) << reports.message();
    ASSERT_EQ(reports->size(), 1u);
    const OomReport& r = reports->front();
    EXPECT_EQ(r.verdict, OomVerdict::Fragmentation);

    auto a = oomAlternatives(t, **tl, r);
    ASSERT_TRUE(a.ok()) << a.message();
    EXPECT_EQ(a->device_capacity, 300 * MiB);
    EXPECT_TRUE(a->capacity_from_device_free);
    EXPECT_TRUE(a->model_agrees);  // the defaults fail it in the model too
    const OomAlternative* expandable = nullptr;
    const OomAlternative* split = nullptr;
    const OomAlternative* policy = nullptr;
    for (const OomAlternative& alt : a->alternatives) {
        if (alt.name == "expandable_segments:True") expandable = &alt;
        if (alt.name.rfind("max_split_size_mb", 0) == 0) split = &alt;
        if (alt.kind == OomAlternativeKind::Policy) policy = &alt;
    }
    ASSERT_TRUE(expandable && split && policy);
    EXPECT_TRUE(expandable->served);
    EXPECT_EQ(expandable->spare_bytes, 20 * MiB);  // 14 pages of 20 MiB mapped
    ASSERT_TRUE(split->served) << split->detail;
    EXPECT_EQ(split->name, "max_split_size_mb:256");  // the largest tried that serves
    EXPECT_FALSE(policy->served);
    EXPECT_NE(policy->detail.find("no layer chain"), std::string::npos) << policy->detail;
    EXPECT_TRUE(a->settings_verdict.empty());

    // A replay under the named setting confirms it: the request is served.
    AllocatorModelOptions o;
    o.settings = *applyAllocatorConf({}, split->name);
    o.device_capacity = a->device_capacity;
    o.stop_before = r.event_index;
    o.final_request = AllocatorModelOptions::FinalRequest{255 * MiB, 0};
    auto confirm = replayAllocatorModel(t, (*tl)->devices().at(0), o);
    ASSERT_TRUE(confirm.ok());
    EXPECT_EQ(confirm->final_request_served, true);

    const auto lines = oomAlternativeLines(*a);
    ASSERT_FALSE(lines.empty());
    EXPECT_NE(lines[0].find("300 MiB"), std::string::npos) << lines[0];
    bool named = false;
    for (const std::string& l : lines)
        named |= l.find("max_split_size_mb:256: would have served it, with") != std::string::npos;
    EXPECT_TRUE(named);
}

TEST(OomAlternatives, AFullDeviceIsServedByNoSetting) {
    Trace t;
    t.events = {ev(0, EventKind::SegmentAlloc, 0x1000000, 100 * MiB),
                ev(1, EventKind::Alloc, 0x1000000, 100 * MiB), ev(2, EventKind::Oom, 0, 50 * MiB)};
    t.attributes.push_back({2, t.internString("device_free"), t.internString("1048576")});
    auto tl = Timeline::build(t);
    ASSERT_TRUE(tl.ok());
    auto reports = oomReports(t, (*tl)->devices().at(0));
    ASSERT_TRUE(reports.ok());
    auto a = oomAlternatives(t, **tl, reports->front());
    ASSERT_TRUE(a.ok()) << a.message();
    EXPECT_TRUE(a->model_agrees);
    for (const OomAlternative& alt : a->alternatives) EXPECT_FALSE(alt.served) << alt.name;
    EXPECT_NE(a->settings_verdict.find("the device was full"), std::string::npos);
    // An end state has no request to replay.
    OomReport end;
    EXPECT_FALSE(oomAlternatives(t, **tl, end).ok());
}

TEST(OomAlternatives, RealOomOnAFullDevice) {
    const auto file = std::filesystem::path(MEMSCOPE_FIXTURES_DIR) / "snapshots" /
                      "expandable_map_unmap_oom_3dev_cpp_frames__code_location.pickle";
    if (!std::filesystem::exists(file))
        GTEST_SKIP() << "fixtures folder missing: " << MEMSCOPE_FIXTURES_DIR;
    auto run = openRun(file.string(), processRegistry());
    ASSERT_TRUE(run.ok()) << run.message();
    const OpenedTrace& part = run->parts.at(0);
    auto reports = oomReports(*part.trace, *part.timeline->device(1));
    ASSERT_TRUE(reports.ok());
    ASSERT_EQ(reports->size(), 1u);
    auto a = oomAlternatives(*part.trace, *part.timeline, reports->front());
    ASSERT_TRUE(a.ok()) << a.message();
    EXPECT_TRUE(a->model_agrees);
    for (const OomAlternative& alt : a->alternatives) EXPECT_FALSE(alt.served) << alt.name;
    // Expandable segments were on already: only max_split_size_mb is tried.
    EXPECT_EQ(a->alternatives.front().name, "max_split_size_mb");
    EXPECT_NE(a->settings_verdict.find("the device was full"), std::string::npos)
        << a->settings_verdict;
}

}  // namespace
}  // namespace memscope
