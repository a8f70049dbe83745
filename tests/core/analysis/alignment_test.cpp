// Compare alignment: the axis maps and lining up runs of different speed by
// step or phase, on traces built by hand so that every expected number is known.
#include "memscope/analysis/alignment.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <span>
#include <string>

#include "../analysis_test_util.h"
#include "memscope/base/units.h"
#include "memscope/timeline/step_series.h"
#include "memscope/timeline/timeline.h"

namespace memscope {
namespace {

using testutil::ev;
using testutil::makeRun;

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

}  // namespace
}  // namespace memscope
