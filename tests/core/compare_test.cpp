// Compare alignment, run summaries, difference curves and the allocator replay,
// on traces built by hand so that every expected number is known.
#include "memscope/compare.h"

#include <gtest/gtest.h>

#include <climits>
#include <cmath>

#include "memscope/allocation_order.h"
#include "memscope/allocator_replay.h"
#include "memscope/step_series.h"
#include "memscope/units.h"

namespace memscope {
namespace {

Event ev(int64_t t, EventKind k, uint64_t addr, uint64_t size, Category c = Category::Activation) {
    Event e;
    e.time = t;
    e.kind = k;
    e.address = addr;
    e.size = size;
    e.category = c;
    return e;
}

// Two steps of `len` ns each starting at 1000; forward takes the first 40%,
// backward the next 50%. One activation of 100 bytes lives through each forward.
Trace makeRun(int64_t len, std::string name) {
    Trace t;
    t.metadata.name = std::move(name);
    int64_t s = 1000;
    for (int k = 0; k < 2; ++k) {
        Phase step{t.internString("step " + std::to_string(k)),
                   PhaseKind::Step,
                   {},
                   k,
                   -1,
                   -1,
                   s,
                   s + len};
        const PhaseId sid = t.addPhase(step);
        const PhaseId fwd = t.addPhase(Phase{t.internString("forward"), PhaseKind::Forward, sid, k,
                                             -1, -1, s, s + len * 4 / 10});
        t.addPhase(Phase{t.internString("backward"), PhaseKind::Backward, sid, k, -1, -1,
                         s + len * 4 / 10, s + len * 9 / 10});
        t.events.push_back(ev(s + 1, EventKind::SegmentAlloc, 0x1000, 1024));
        t.events.push_back(ev(s + 2, EventKind::Alloc, 0x1000, 100));
        t.events.back().phase = fwd;
        t.events.push_back(ev(s + len * 4 / 10 + 1, EventKind::FreeCompleted, 0x1000, 100));
        t.events.push_back(ev(s + len - 1, EventKind::SegmentFree, 0x1000, 1024));
        s += len;
    }
    return t;
}

TEST(AxisMap, LinearAndKnots) {
    const AxisMap lin = AxisMap::linear(100, 0.5);
    EXPECT_DOUBLE_EQ(lin.forward(100), 0.0);
    EXPECT_DOUBLE_EQ(lin.forward(110), 5.0);
    EXPECT_EQ(lin.inverse(5.0), 110);

    const AxisMap m =
        AxisMap::fromKnots({0, 10, 30, 20}, {0.0, 1.0, 2.0, 3.0});  // 20 breaks order: dropped
    EXPECT_EQ(m.knotCount(), 3u);
    EXPECT_DOUBLE_EQ(m.forward(20), 1.5);
    EXPECT_EQ(m.inverse(1.5), 20);
    EXPECT_DOUBLE_EQ(m.forward(40), 2.5);  // extrapolated with the last slope
    EXPECT_DOUBLE_EQ(m.forward(-10), -1.0);
}

// A hostile trace whose times span more than 2^63 ns: the axis maps stay
// finite and ordered, and inverse() saturates instead of overflowing (UBSan
// runs this).
TEST(AxisMap, SpansPastInt64Range) {
    const int64_t lo = INT64_MIN + 10, hi = INT64_MAX - 10;
    const AxisMap linear = AxisMap::linear(lo, 1e-9);
    const double a = linear.forward(lo), b = linear.forward(0), c = linear.forward(hi);
    EXPECT_TRUE(std::isfinite(c));
    EXPECT_LT(a, b);
    EXPECT_LT(b, c);
    EXPECT_NEAR(c, 18.446744073709552e9, 1e3);  // 2^64 ns in seconds
    EXPECT_EQ(linear.inverse(1e30), INT64_MAX);
    EXPECT_EQ(linear.inverse(-1e30), INT64_MIN);
    const AxisMap knots = AxisMap::fromKnots({lo, 0, hi}, {0.0, 1.0, 2.0});
    EXPECT_DOUBLE_EQ(knots.forward(0), 1.0);
    EXPECT_NEAR(knots.forward(hi / 2), 1.5, 1e-9);
    EXPECT_EQ(knots.inverse(5.0), INT64_MAX);
    EXPECT_EQ(addSaturating(INT64_MAX, 1), INT64_MAX);
    EXPECT_EQ(addSaturating(INT64_MIN, -1), INT64_MIN);

    StepSeries s;
    s.append(lo, 5);
    s.append(0, 7);
    s.append(hi, -3);
    s.finalize();
    const auto points = s.levelOfDetail(lo, hi, 4);
    ASSERT_FALSE(points.empty());
    for (size_t i = 1; i < points.size(); ++i) EXPECT_LE(points[i - 1].x, points[i].x);
}

TEST(Compare, StepAndPhaseAlignmentLineUpRunsOfDifferentSpeed) {
    const Trace fast = makeRun(1000, "fast");
    const Trace slow = makeRun(3000, "slow");
    auto tf = Timeline::build(fast);
    auto ts = Timeline::build(slow);
    ASSERT_TRUE(tf.ok() && ts.ok());
    const RunRef runs[] = {{&fast, &(*tf)->devices().at(0)}, {&slow, &(*ts)->devices().at(0)}};

    const auto time = alignRuns(runs, AlignMode::Time);
    EXPECT_NEAR(time[1].map.forward(1001 + 3000), 3000e-9,
                1e-15);  // the timeline starts at its first event

    const auto step = alignRuns(runs, AlignMode::Step);
    ASSERT_EQ(step.size(), 2u);
    EXPECT_FALSE(step[1].fell_back);
    EXPECT_DOUBLE_EQ(step[0].map.forward(2000), 1.0);  // second step starts at step 1
    EXPECT_DOUBLE_EQ(step[1].map.forward(4000), 1.0);
    EXPECT_DOUBLE_EQ(step[1].map.forward(1000 + 1500), 0.5);

    const auto phase = alignRuns(runs, AlignMode::Phase);
    // backward start is at 40% of the step in both runs.
    EXPECT_NEAR(phase[0].map.forward(1400), 0.4, 1e-9);
    EXPECT_NEAR(phase[1].map.forward(1000 + 1200), 0.4, 1e-9);
    EXPECT_EQ(std::string(alignUnit(AlignMode::Step, runs[0])), "step");
}

TEST(Compare, NoStepsFallsBackToTime) {
    Trace t;
    t.events.push_back(ev(5, EventKind::Alloc, 0x10, 8));
    auto tl = Timeline::build(t);
    ASSERT_TRUE(tl.ok());
    const RunRef r{&t, &(*tl)->devices().at(0)};
    const auto a = alignRuns(std::span(&r, 1), AlignMode::Phase);
    EXPECT_TRUE(a[0].fell_back);
    EXPECT_EQ(a[0].mode, AlignMode::Time);
}

TEST(Compare, SummaryAndBaselineDelta) {
    Trace a = makeRun(1000, "a");
    // Recorded metrics win over the step phases' lengths; the warm-up step is left out.
    RunMetrics m;
    m.step_ns = {1200, 1000, 1000};
    m.recompute_ns = {0, 250, 250};
    a.metrics = m;
    Trace b = makeRun(2000, "b");
    b.events.push_back(ev(4990, EventKind::Alloc, 0x9000, 400, Category::Gradient));
    auto ta = Timeline::build(a);
    auto tb = Timeline::build(b);
    ASSERT_TRUE(ta.ok() && tb.ok());
    const RunSummary sa = summarizeRun({&a, &(*ta)->devices().at(0)});
    const RunSummary sb = summarizeRun({&b, &(*tb)->devices().at(0)});
    EXPECT_EQ(sa.name, "a");
    EXPECT_EQ(sa.peak_bytes, 100);
    EXPECT_EQ(sa.peak_phase, "step 0 / forward");
    EXPECT_EQ(sa.steps, 2u);
    ASSERT_TRUE(sa.step_time_s.has_value());
    EXPECT_NEAR(*sa.step_time_s, 1000e-9, 1e-15);
    ASSERT_TRUE(sa.recompute_overhead.has_value());
    EXPECT_DOUBLE_EQ(*sa.recompute_overhead, 0.25);
    EXPECT_EQ(sa.reserved_peak, 1024);
    EXPECT_EQ(sb.peak_bytes, 400);
    EXPECT_EQ(sb.peak_by_category[index(Category::Gradient)], 400);

    const SummaryDelta d = compareToBaseline(Baseline<RunSummary>{sa}, Candidate<RunSummary>{sb});
    EXPECT_EQ(d.peak_bytes, 300);
    EXPECT_DOUBLE_EQ(d.peak_ratio, 4.0);
    ASSERT_TRUE(d.step_time_ratio.has_value());
    EXPECT_DOUBLE_EQ(*d.step_time_ratio, 2.0);
}

TEST(Compare, DifferenceCurveOnSharedAxis) {
    StepSeries a, b;
    a.append(0, 10);
    a.append(10, 30);
    a.finalize();
    b.append(0, 5);
    b.append(20, 50);
    b.finalize();
    const AxisMap id = AxisMap::linear(0, 1.0);
    const auto d = differenceCurve(a, id, b, id, 0, 30, 64);
    ASSERT_FALSE(d.empty());
    auto at = [&](double x) {
        int64_t y = 0;
        for (const CurvePoint& p : d)
            if (p.x <= x) y = p.y;
        return y;
    };
    EXPECT_EQ(at(0), 5);
    EXPECT_EQ(at(15), 25);
    EXPECT_EQ(at(25), -20);
}

TEST(Compare, PhasePathWithProducersThatNameWholePaths) {
    Trace t;
    const PhaseId step =
        t.addPhase({t.internString("step 1"), PhaseKind::Step, {}, 1, -1, -1, 0, 10});
    const PhaseId bwd = t.addPhase(
        {t.internString("step 1 / backward"), PhaseKind::Backward, step, 1, -1, -1, 0, 10});
    const PhaseId blk =
        t.addPhase({t.internString("block 0"), PhaseKind::Block, bwd, 1, 0, -1, 0, 10});
    EXPECT_EQ(phasePath(t, blk), "step 1 / backward / block 0");
    EXPECT_EQ(phasePath(t, bwd), "step 1 / backward");
    EXPECT_EQ(phasePath(t, PhaseId{}), "");
}

TEST(Compare, LargestIntervals) {
    Trace t;
    t.events = {ev(0, EventKind::Alloc, 0x10, 8), ev(1, EventKind::Alloc, 0x20, 64),
                ev(2, EventKind::Alloc, 0x30, 16)};
    auto tl = Timeline::build(t);
    ASSERT_TRUE(tl.ok());
    const auto& d = (*tl)->devices().at(0);
    const auto top = largestIntervals(d, 2);
    ASSERT_EQ(top.size(), 2u);
    EXPECT_EQ(d.intervals[top[0]].size, 64u);
    EXPECT_EQ(d.intervals[top[1]].size, 16u);
}

TEST(AllocatorReplay, ForwardFromEmpty) {
    Trace t;
    t.events = {ev(0, EventKind::SegmentAlloc, 0x1000, 1000), ev(1, EventKind::Alloc, 0x1000, 100),
                ev(2, EventKind::Alloc, 0x1200, 100), ev(3, EventKind::FreeCompleted, 0x1000, 100)};
    auto tl = Timeline::build(t);
    ASSERT_TRUE(tl.ok());
    const auto& d = (*tl)->devices().at(0);
    auto s2 = allocatorStateAt(t, d, 2);
    ASSERT_TRUE(s2.ok()) << s2.message();
    EXPECT_FALSE(s2->backwards);
    ASSERT_EQ(s2->segments.size(), 1u);
    EXPECT_EQ(s2->segments[0].blocks.size(), 2u);
    EXPECT_EQ(s2->active_bytes, 200u);
    EXPECT_EQ(s2->reserved_bytes, 1000u);
    auto s3 = allocatorStateAt(t, d, 3);
    ASSERT_TRUE(s3.ok());
    EXPECT_EQ(s3->active_bytes, 100u);
    EXPECT_EQ(s3->largest_free_gap, 0x200u);  // the freed first block, larger than the tail
}

TEST(AllocatorReplay, BackwardFromEndStateAndExpandableUnmap) {
    Trace t;
    t.events = {ev(0, EventKind::SegmentMap, 0x1000, 400), ev(1, EventKind::Alloc, 0x1000, 100),
                ev(2, EventKind::SegmentMap, 0x1190, 400), ev(3, EventKind::Alloc, 0x1190, 50),
                ev(4, EventKind::FreeCompleted, 0x1000, 100)};
    AllocatorState end;
    Segment seg;
    seg.address = 0x1000;
    seg.total_size = 800;
    seg.expandable = true;
    seg.block_count = 1;
    end.segments.push_back(seg);
    end.blocks.push_back(Block{0x1190, 50, 50, {}, BlockState::ActiveAllocated});
    t.allocator_state = end;
    auto tl = Timeline::build(t);
    ASSERT_TRUE(tl.ok());
    const auto& d = (*tl)->devices().at(0);
    auto s = allocatorStateAt(t, d, 1);  // after the first map and alloc
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_TRUE(s->backwards);
    EXPECT_EQ(s->reserved_bytes, 400u);
    EXPECT_EQ(s->active_bytes, 100u);
    auto before = allocatorStateAt(t, d, -1);
    ASSERT_TRUE(before.ok());
    EXPECT_EQ(before->event_index, -1);
    EXPECT_EQ(before->reserved_bytes, 0u);
}

}  // namespace
}  // namespace memscope
