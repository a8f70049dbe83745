// The allocation-set diff (memscope/analysis/allocation_diff.h): a full-save
// run A and a checkpointed run B, recorded from two checkouts of one script,
// differ by the recomputed layers' saved tensors and one extra tensor; the
// sites match across the checkouts; only-A minus only-B adds up to the
// difference of the moments' live bytes.
#include "memscope/analysis/allocation_diff.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "../analysis_test_util.h"
#include "memscope/report/allocation_diff_report.h"

namespace memscope {
namespace {

constexpr uint64_t MiB = 1 << 20;

// One step: parameters (4 x 1 MiB), forward saving `saved` MiB per block for
// each of blocks 0-3 (B: only block 0, and a 256 KiB checkpoint input for
// each other), an extra 3 MiB tensor when `extra`; backward frees the saved.
Trace diffRun(const std::string& root, bool checkpointed, bool extra) {
    Trace t;
    auto frame = [&](const char* fn, const std::string& file, uint32_t line) {
        return t.internFrame({t.internString(fn), t.internString(root + file), line});
    };
    const FrameId train = frame("train", "/train.py", 80);
    const FrameId init = frame("__init__", "/model.py", 10);
    const FrameId fwd = frame("forward", "/model.py", 30);
    const FrameId boundary = frame("checkpoint_input", "/model.py", 35);
    const FrameId more = frame("log_extra", "/train.py", 90);
    const FrameId torch_frame =
        t.internFrame({t.internString("linear"),
                       t.internString("/usr/lib/python3/dist-packages/torch/nn/functional.py"), 5});
    const FrameId s_init[] = {init, train}, s_fwd[] = {torch_frame, fwd, train},
                  s_boundary[] = {boundary, train}, s_more[] = {more, train};
    const StackId k_init = t.internStack(s_init), k_fwd = t.internStack(s_fwd),
                  k_boundary = t.internStack(s_boundary), k_more = t.internStack(s_more);
    const int64_t t0 = 1'000'000'000'000'000'000;
    const PhaseId step =
        t.addPhase({t.internString("step"), PhaseKind::Step, {}, 0, -1, -1, t0, t0 + 10000});
    const PhaseId f =
        t.addPhase({t.internString("forward"), PhaseKind::Forward, step, 0, -1, -1, t0, t0 + 5000});
    const PhaseId bw = t.addPhase(
        {t.internString("backward"), PhaseKind::Backward, step, 0, -1, -1, t0 + 5000, t0 + 9000});
    uint64_t next = 0x1000000;
    std::vector<std::pair<uint64_t, uint64_t>> freed;
    int64_t now = t0 - 100;
    auto alloc = [&](uint64_t size, StackId s, PhaseId ph) {
        Event e = testutil::event(now += 10, EventKind::Alloc, next, size, Category::Unknown, ph);
        e.stack = s;
        t.events.push_back(e);
        next += 0x1000000;
        return std::pair{e.address, size};
    };
    for (int k = 0; k < 4; ++k) alloc(MiB, k_init, {});
    now = t0 + 100;
    for (int k = 0; k < 4; ++k) {
        if (!checkpointed || k == 0)
            freed.push_back(alloc(MiB, k_fwd, f));
        else
            freed.push_back(alloc(MiB / 4, k_boundary, f));
    }
    if (extra) freed.push_back(alloc(3 * MiB, k_more, f));
    now = t0 + 6000;
    for (const auto& [address, size] : freed)
        t.events.push_back(testutil::event(now += 10, EventKind::FreeCompleted, address, size,
                                           Category::Unknown, bw));
    return t;
}

struct Diffed {
    Trace a, b;
    std::shared_ptr<const Timeline> ta, tb;
};

Diffed diffed(bool extra) {
    Diffed d{diffRun("/home/me/main", false, extra), diffRun("/tmp/other-checkout", true, false),
             nullptr, nullptr};
    d.ta = *Timeline::build(d.a);
    d.tb = *Timeline::build(d.b);
    return d;
}

TEST(AllocationDiff, RecomputedLayersAreOnlyInTheFullSaveRunAndTheGroupsAddUp) {
    const Diffed d = diffed(true);
    const DeviceTimeline& ta = d.ta->devices().at(0);
    const DeviceTimeline& tb = d.tb->devices().at(0);
    auto diff = diffAllocations(d.a, ta, d.b, tb, {});
    ASSERT_TRUE(diff.ok()) << diff.message();
    EXPECT_EQ(diff->a.live_bytes, ta.peak.bytes);
    EXPECT_EQ(diff->b.live_bytes, tb.peak.bytes);
    EXPECT_EQ(diff->only_a_bytes - diff->only_b_bytes, ta.peak.bytes - tb.peak.bytes);
    int64_t only_a = 0, only_b = 0, both = 0;
    for (const DiffGroup& g : diff->groups)
        only_a += g.only_a_bytes, only_b += g.only_b_bytes, both += g.both_bytes;
    EXPECT_EQ(only_a - only_b, ta.peak.bytes - tb.peak.bytes);
    EXPECT_EQ(both + only_a, ta.peak.bytes);
    EXPECT_EQ(both + only_b, tb.peak.bytes);
    // Largest difference first: the recomputed layers' saved tensors, at the
    // site they share across the two checkouts (matched by file name).
    ASSERT_EQ(diff->groups.size(), 4u);
    const DiffGroup& fwd = diff->groups[0];
    EXPECT_EQ(fwd.site, "forward  (model.py:30)");
    EXPECT_EQ(fwd.frames,
              (std::vector<std::string>{"train  (train.py:80)", "forward  (model.py:30)"}));
    EXPECT_EQ(fwd.only_a_bytes, int64_t(3 * MiB));
    EXPECT_EQ(fwd.only_a_count, 3u);
    EXPECT_EQ(fwd.both_bytes, int64_t(MiB));
    EXPECT_EQ(fwd.only_b_count, 0u);
    EXPECT_EQ(diff->groups[1].site, "log_extra  (train.py:90)");
    EXPECT_EQ(diff->groups[1].only_a_bytes, int64_t(3 * MiB));
    EXPECT_EQ(diff->groups[2].site, "checkpoint_input  (model.py:35)");
    EXPECT_EQ(diff->groups[2].only_b_bytes, int64_t(3 * MiB / 4));
    EXPECT_EQ(diff->groups[2].only_b_count, 3u);
    EXPECT_EQ(diff->groups[3].site, "__init__  (model.py:10)");
    EXPECT_EQ(diff->groups[3].both_bytes, int64_t(4 * MiB));
    EXPECT_EQ(diff->groups[3].both_count, 4u);

    // Each group names its allocations on both sides: they are the ones
    // alive at the moment, each once, and add up to the group's bytes.
    auto bytesOf = [](const DeviceTimeline& tl, const std::vector<uint32_t>& intervals) {
        int64_t sum = 0;
        for (uint32_t i : intervals) sum += int64_t(tl.intervals.at(i).size);
        return sum;
    };
    std::vector<uint32_t> all_a, all_b;
    for (const DiffGroup& g : diff->groups) {
        EXPECT_EQ(bytesOf(ta, g.a_intervals), g.only_a_bytes + g.both_bytes) << g.site;
        EXPECT_EQ(bytesOf(tb, g.b_intervals), g.only_b_bytes + g.both_bytes) << g.site;
        EXPECT_EQ(g.a_intervals.size(), size_t(g.only_a_count + g.both_count)) << g.site;
        EXPECT_EQ(g.b_intervals.size(), size_t(g.only_b_count + g.both_count)) << g.site;
        all_a.insert(all_a.end(), g.a_intervals.begin(), g.a_intervals.end());
        all_b.insert(all_b.end(), g.b_intervals.begin(), g.b_intervals.end());
    }
    auto sorted = [](std::vector<uint32_t> v) {
        std::sort(v.begin(), v.end());
        return v;
    };
    EXPECT_EQ(sorted(all_a), sorted(ta.peak.live_intervals));
    EXPECT_EQ(sorted(all_b), sorted(tb.peak.live_intervals));
    // The recomputed layers' group: A's four saved tensors (their site's), B's one.
    EXPECT_EQ(fwd.a_intervals.size(), 4u);
    EXPECT_EQ(fwd.b_intervals.size(), 1u);
    for (uint32_t i : fwd.a_intervals) EXPECT_EQ(ta.intervals.at(i).size, MiB);
    // The log_extra tensor is in A only.
    EXPECT_EQ(diff->groups[1].a_intervals.size(), 1u);
    EXPECT_TRUE(diff->groups[1].b_intervals.empty());

    const std::string text = allocationDiffText(*diff, "a.memscope", "b.memscope");
    EXPECT_NE(text.find("only in A 6.00 MiB (4), in both 5.00 MiB (5), only in B 768 KiB (3); "
                        "A - B = +5.25 MiB"),
              std::string::npos)
        << text;
}

TEST(AllocationDiff, RunsThatDifferByOneTensorAtAStepAndPhase) {
    Trace a = diffRun("/x", false, true), b = diffRun("/x", false, false);
    auto ta = Timeline::build(a), tb = Timeline::build(b);
    ASSERT_TRUE(ta.ok() && tb.ok());
    auto m = parseAllocationMoment("step:0:forward");
    ASSERT_TRUE(m.ok());
    auto diff = diffAllocations(a, (*ta)->devices().at(0), b, (*tb)->devices().at(0), *m);
    ASSERT_TRUE(diff.ok()) << diff.message();
    EXPECT_EQ(diff->only_a_bytes, int64_t(3 * MiB));
    EXPECT_EQ(diff->only_a_count, 1u);
    EXPECT_EQ(diff->only_b_bytes, 0);
    EXPECT_EQ(diff->only_a_bytes - diff->only_b_bytes, diff->a.live_bytes - diff->b.live_bytes);
    EXPECT_EQ(diff->groups[0].site, "log_extra  (train.py:90)");
    EXPECT_EQ(toString(*m), "step 0 forward");
    // In backward the saved tensors are gone: both hold the parameters only.
    auto back = diffAllocations(a, (*ta)->devices().at(0), b, (*tb)->devices().at(0),
                                *parseAllocationMoment("step:0:backward"));
    ASSERT_TRUE(back.ok()) << back.message();
    EXPECT_EQ(back->a.live_bytes - back->b.live_bytes, back->only_a_bytes - back->only_b_bytes);
}

TEST(AllocationDiff, BadMomentsAreClearErrors) {
    for (const char* bad : {"", "peek", "step:", "step:x", "step:-1", "step:1:sideways"}) {
        auto m = parseAllocationMoment(bad);
        ASSERT_FALSE(m.ok()) << bad;
        EXPECT_NE(m.message().find("give peak, step:N or step:N:PHASE"), std::string::npos);
    }
    EXPECT_TRUE(parseAllocationMoment("step:3").ok());
    const Diffed d = diffed(false);
    auto missing = diffAllocations(d.a, d.ta->devices().at(0), d.b, d.tb->devices().at(0),
                                   *parseAllocationMoment("step:5"));
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.message(), "A: device 0 has no step 5");
    auto no_opt = diffAllocations(d.a, d.ta->devices().at(0), d.b, d.tb->devices().at(0),
                                  *parseAllocationMoment("step:0:optimizer"));
    ASSERT_FALSE(no_opt.ok());
    EXPECT_EQ(no_opt.message(), "A: device 0's step 0 has no optimizer");
}

}  // namespace
}  // namespace memscope
