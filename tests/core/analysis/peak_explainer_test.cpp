// The explanation of a peak: the sites live at it by their first user frame,
// the change per category, and the bytes born in recompute phases.
#include "memscope/analysis/peak_explainer.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <filesystem>

#include "../analysis_test_util.h"
#include "memscope/builtin_plugins.h"
#include "memscope/inference/frames.h"
#include "memscope/open/open_run.h"
#include "memscope/timeline/timeline.h"

namespace memscope {
namespace {

using testutil::event;
using testutil::realisticStack;
using testutil::Stacked;

TEST(PeakExplainer, SitesAtThePeakByUserFrame) {
    Stacked s = realisticStack();
    Trace& t = s.trace;
    const std::array other{
        t.internFrame({t.internString("step"), t.internString("/home/me/project/optim.py"), 3})};
    const StackId opt = t.internStack(other);
    t.events = {event(1, EventKind::Alloc, 0x100, 4000, Category::Activation),
                event(2, EventKind::Alloc, 0x200, 1000, Category::Activation),
                event(3, EventKind::Alloc, 0x300, 3000, Category::OptimizerState),
                event(4, EventKind::Alloc, 0x400, 500, Category::Unknown)};
    t.events[0].stack = t.events[1].stack = s.stack;
    t.events[2].stack = opt;
    auto tl = *Timeline::build(t);
    const DeviceTimeline& d = tl->devices().at(0);
    const auto sites = sitesAtPeak(t, d, 10);
    ASSERT_EQ(sites.size(), 3u);
    EXPECT_EQ(sites[0].label, "forward  (/home/me/project/model.py:7)");
    EXPECT_EQ(sites[0].bytes, 5000);
    EXPECT_EQ(sites[0].count, 2u);
    EXPECT_EQ(sites[0].category, Category::Activation);
    EXPECT_EQ(d.intervals[sites[0].largest].size, 4000u);
    EXPECT_EQ(sites[1].bytes, 3000);
    EXPECT_EQ(sites[2].label, "(no stack)");
    EXPECT_EQ(sitesAtPeak(t, d, 1).size(), 1u);
    EXPECT_EQ(sitesAt(t, d, 2, 10)[0].bytes, 5000);  // the two activations live at t = 2
}

TEST(PeakExplainer, ChangesPerCategoryLargestFirst) {
    std::array<int64_t, kCategoryCount> d{};
    EXPECT_EQ(describeChange(d), "no change");
    d[size_t(index(Category::Activation))] = -(int64_t(36) << 27);  // -4.5 GiB
    d[size_t(index(Category::Temporary))] = int64_t(200) << 20;
    d[size_t(index(Category::Gradient))] = 1;
    EXPECT_EQ(describeChange(d, 2), "\u22124.50 GiB activation, +200 MiB temporary");
    // A rise made mostly of bytes born in recompute phases says so; a fall never does.
    std::array<int64_t, kCategoryCount> recomputed{};
    recomputed[size_t(index(Category::Temporary))] = int64_t(150) << 20;
    recomputed[size_t(index(Category::Activation))] = int64_t(1) << 30;
    EXPECT_EQ(describeChange(d, 2, &recomputed),
              "\u22124.50 GiB activation, +200 MiB temporary (recompute)");
    recomputed[size_t(index(Category::Temporary))] = int64_t(50) << 20;
    EXPECT_EQ(describeChange(d, 2, &recomputed), "\u22124.50 GiB activation, +200 MiB temporary");
    d[size_t(index(Category::Gradient))] = INT64_MIN;  // no overflow in the magnitude
    EXPECT_EQ(describeChange(d, 1), "\u22128192 PiB gradient");
}

TEST(PeakExplainer, RecomputedBytesAreThoseBornInRecomputePhases) {
    Trace t;
    Phase backward;
    backward.kind = PhaseKind::Backward;
    backward.start = 0;
    backward.end = 100;
    const PhaseId b = t.addPhase(backward);
    Phase recompute;
    recompute.kind = PhaseKind::Recompute;
    recompute.parent = b;
    recompute.start = 10;
    recompute.end = 20;
    const PhaseId r = t.addPhase(recompute);
    t.events.push_back(testutil::event(5, EventKind::Alloc, 0x100, 1000, Category::Temporary, b));
    t.events.push_back(testutil::event(15, EventKind::Alloc, 0x200, 300, Category::Activation, r));
    t.events.push_back(testutil::event(16, EventKind::Alloc, 0x300, 70, Category::Temporary, r));
    auto tl = Timeline::build(t);
    ASSERT_TRUE(tl.ok());
    const auto bytes = recomputedBytesAt(t, (*tl)->devices().front(), 50);
    EXPECT_EQ(bytes[size_t(index(Category::Activation))], 300);
    EXPECT_EQ(bytes[size_t(index(Category::Temporary))], 70);
}

TEST(PeakExplainer, RealSnapshotNamesTheUsersFrames) {
    const std::filesystem::path file = std::filesystem::path(MEMSCOPE_FIXTURES_DIR) / "snapshots" /
                                       "user_metadata_compile_ctx__bcrafton_a2.pickle";
    if (!std::filesystem::exists(file))
        GTEST_SKIP() << "fixtures folder missing: " << MEMSCOPE_FIXTURES_DIR;
    auto run = openRun(file.string(), processRegistry());
    ASSERT_TRUE(run.ok()) << run.message();
    const OpenedTrace& part = run->parts.at(0);
    const DeviceTimeline& d = part.timeline->devices().at(0);
    const auto sites = sitesAtPeak(*part.trace, d, 10);
    ASSERT_FALSE(sites.empty());
    size_t user = 0;
    for (const SiteAtPeak& s : sites) {
        if (!s.site) continue;
        // No allocator, dispatcher or interpreter frame ever names a site.
        EXPECT_NE(frameRole(*part.trace, *s.site), FrameRole::Noise) << s.label;
        if (frameRole(*part.trace, *s.site) == FrameRole::User) ++user;
    }
    EXPECT_GE(user, 3u);
}

}  // namespace
}  // namespace memscope
