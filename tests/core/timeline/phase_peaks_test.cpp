// Per-phase and per-step peaks: the peak within forward, backward and
// optimizer, its increase over the phase's start, and its composition.
#include <gtest/gtest.h>

#include "../analysis_test_util.h"
#include "memscope/timeline/timeline.h"

namespace memscope {
namespace {

using testutil::event;
using testutil::trainingRun;

const DeviceTimeline& only(const std::shared_ptr<const Timeline>& tl) {
    return tl->devices().at(0);
}

TEST(PhasePeaks, ForwardBackwardOptimizerPeaksAndIncreases) {
    const Trace t = trainingRun("full", "full", /*act=*/5000);
    auto built = Timeline::build(t);
    ASSERT_TRUE(built.ok()) << built.message();
    const DeviceTimeline& d = only(*built);
    const PhasePeaks& p = d.phase_peaks;
    ASSERT_TRUE(p.by_phase[index(TrainingPhase::Forward)]);
    ASSERT_TRUE(p.by_phase[index(TrainingPhase::Backward)]);
    ASSERT_TRUE(p.by_phase[index(TrainingPhase::Optimizer)]);
    // Step 0 forward: params 1000 + act 5000 + temp 50. Step 1 also holds the
    // optimizer state (2000), so its forward is the highest: 8050, up 5050.
    const WindowPeak& f = *p.by_phase[index(TrainingPhase::Forward)];
    EXPECT_EQ(f.bytes, 8050);
    EXPECT_EQ(f.start_bytes, 3000);
    EXPECT_EQ(f.increaseBytes(), 5050);
    EXPECT_EQ(f.step, 1);
    EXPECT_EQ(f.by_category[index(Category::Activation)], 5000);
    EXPECT_EQ(f.by_category[index(Category::Temporary)], 50);
    // Backward: gradient (1000) allocated while the activation (5000) lives.
    const WindowPeak& b = *p.by_phase[index(TrainingPhase::Backward)];
    EXPECT_EQ(b.bytes, 9000);
    EXPECT_EQ(b.increaseBytes(), 1000);
    // Optimizer: params + grads + state + temporary.
    const WindowPeak& o = *p.by_phase[index(TrainingPhase::Optimizer)];
    EXPECT_EQ(o.bytes, 1000 + 1000 + 2000 + 300);
    EXPECT_EQ(o.step, 0);  // the first step is as high, and earlier
    EXPECT_EQ(o.start_bytes, 2000);
    // The whole run's peak is the highest phase's.
    EXPECT_EQ(p.highest()->bytes, d.peak.bytes);

    ASSERT_EQ(p.by_step.size(), 2u);
    EXPECT_EQ(p.by_step[0].index, 0);
    EXPECT_EQ(p.by_step[0].recorded_step, 0);
    EXPECT_EQ(p.by_step[0].whole.bytes,
              6000 + 1000);  // params + act + grad, before the state exists
    EXPECT_EQ(p.by_step[1].whole.bytes, 9000);
    ASSERT_TRUE(p.by_step[0].phases[index(TrainingPhase::Forward)]);
    EXPECT_EQ(p.by_step[0].phases[index(TrainingPhase::Forward)]->bytes, 6050);
}

TEST(PhasePeaks, RecomputeAndOptimizerInsideBackwardCountAsBackward) {
    const Trace t = trainingRun("fused", "opt-in-bwd", 5000, /*recompute=*/2000, 1,
                                /*optimizer_in_backward=*/true);
    auto built = Timeline::build(t);
    ASSERT_TRUE(built.ok());
    const PhasePeaks& p = only(*built).phase_peaks;
    EXPECT_FALSE(p.by_phase[index(TrainingPhase::Optimizer)]);
    ASSERT_TRUE(p.by_phase[index(TrainingPhase::Backward)]);
    // params 1000 + act 5000 + recompute 2000, inside backward's recompute phase.
    EXPECT_EQ(p.by_phase[index(TrainingPhase::Backward)]->bytes, 8000);
    EXPECT_EQ(p.by_phase[index(TrainingPhase::Backward)]->by_category[index(Category::Activation)],
              7000);
    // The optimizer state is born inside backward: it counts there too.
    EXPECT_EQ(only(*built).peak.bytes, 8000);
}

TEST(PhasePeaks, EventsWithoutRecordedPhasesFallInTheRangeThatHoldsThem) {
    Trace t = trainingRun("full", "full", 5000);
    for (Event& e : t.events) e.phase = PhaseId();  // as a snapshot with annotations only
    auto built = Timeline::build(t);
    ASSERT_TRUE(built.ok());
    const PhasePeaks& p = only(*built).phase_peaks;
    ASSERT_TRUE(p.by_phase[index(TrainingPhase::Forward)]);
    EXPECT_EQ(p.by_phase[index(TrainingPhase::Forward)]->bytes, 8050);
    EXPECT_EQ(p.by_phase[index(TrainingPhase::Optimizer)]->bytes, 4300);
    EXPECT_EQ(p.by_step.size(), 2u);
}

TEST(PhasePeaks, APhaseWithoutAllocationsHoldsTheValueInForce) {
    Trace t;
    const PhaseId fwd =
        t.addPhase({t.internString("forward"), PhaseKind::Forward, {}, -1, -1, -1, 100, 200});
    (void)fwd;
    t.events = {event(10, EventKind::Alloc, 0x10, 64, Category::Parameter),
                event(300, EventKind::Alloc, 0x20, 32, Category::Activation)};
    auto built = Timeline::build(t);
    ASSERT_TRUE(built.ok());
    const auto& f = only(*built).phase_peaks.by_phase[index(TrainingPhase::Forward)];
    ASSERT_TRUE(f);
    EXPECT_EQ(f->bytes, 64);
    EXPECT_EQ(f->increaseBytes(), 0);
    EXPECT_EQ(f->by_category[index(Category::Parameter)], 64);
}

TEST(PhasePeaks, GhostsRaiseEveryWindowAndATraceWithoutPhasesHasNone) {
    Trace t = trainingRun("full", "full", 5000, 0, 1);
    // A free of a block never allocated in the trace: 4096 B live from the start.
    t.events.push_back(event(t.events.back().time + 10, EventKind::FreeCompleted, 0xdead0000, 4096,
                             Category::Unknown));
    auto built = Timeline::build(t);
    ASSERT_TRUE(built.ok());
    const auto& f = only(*built).phase_peaks.by_phase[index(TrainingPhase::Forward)];
    ASSERT_TRUE(f);
    EXPECT_EQ(f->bytes, 6050 + 4096);
    EXPECT_EQ(f->by_category[index(Category::Unknown)], 4096);

    Trace plain;
    plain.events = {event(1, EventKind::Alloc, 0x10, 64, Category::Unknown)};
    auto none = Timeline::build(plain);
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(only(*none).phase_peaks.empty());
    EXPECT_FALSE(only(*none).phase_peaks.highest());
}

TEST(PhasePeaks, ACorruptParentCycleDoesNotHang) {
    Trace t;
    const PhaseId a =
        t.addPhase({t.internString("a"), PhaseKind::Backward, {}, -1, -1, -1, 0, 100});
    const PhaseId b = t.addPhase({t.internString("b"), PhaseKind::Range, a, -1, -1, -1, 0, 100});
    t.phases[a.value - 1].parent = b;  // a -> b -> a
    t.events = {event(10, EventKind::Alloc, 0x10, 64, Category::Unknown, b)};
    auto built = Timeline::build(t);  // must return: the walk up the parents is bounded
    ASSERT_TRUE(built.ok());
    EXPECT_EQ(only(*built).peak.bytes, 64);
}

}  // namespace
}  // namespace memscope
