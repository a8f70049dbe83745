// Run summaries, their deltas against a baseline, and difference curves, on
// traces built by hand so that every expected number is known.
#include "memscope/analysis/compare.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "../analysis_test_util.h"
#include "memscope/model/run_metrics.h"
#include "memscope/timeline/step_series.h"
#include "memscope/timeline/timeline.h"

namespace memscope {
namespace {

using testutil::ev;
using testutil::makeRun;

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

}  // namespace
}  // namespace memscope
