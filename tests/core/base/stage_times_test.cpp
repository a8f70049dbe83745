// StageTimes: each stage's time summed under its name in first-run order,
// and the wall time counting stages that ran side by side once.
#include "memscope/base/stage_times.h"

#include <gtest/gtest.h>

#include <chrono>

namespace memscope {
namespace {

using std::chrono::milliseconds;

TEST(StageTimes, StagesAddUpByNameAndSideBySideStagesCountOnceInTheWall) {
    StageTimes t;
    EXPECT_EQ(t.text(), "wall 0.000 s");
    const auto t0 = StageTimes::Clock::time_point{} + std::chrono::hours(1);
    t.add("import", t0, t0 + milliseconds(1000));
    t.add("beside", t0 + milliseconds(1000), t0 + milliseconds(1500));  // beside inference
    t.add("inference", t0 + milliseconds(1000), t0 + milliseconds(1400));
    t.add("import", t0 + milliseconds(1400), t0 + milliseconds(1600));  // a second file
    const auto stages = t.stages();
    ASSERT_EQ(stages.size(), 3u);
    EXPECT_EQ(stages[0].first, "import");
    EXPECT_NEAR(stages[0].second, 1.2, 1e-9);
    EXPECT_EQ(stages[1].first, "beside");
    EXPECT_EQ(stages[2].first, "inference");
    EXPECT_NEAR(t.wallSeconds(), 1.6, 1e-9);  // not the 2.1 s the stages sum to
    EXPECT_EQ(t.text(), "import 1.200 s, beside 0.500 s, inference 0.400 s; wall 1.600 s");

    // A clock adds itself when it ends, and a null one adds nothing.
    { StageClock clock(&t, "report"); }
    EXPECT_EQ(t.stages().size(), 4u);
    { StageClock none(nullptr, "nothing"); }
    EXPECT_EQ(t.stages().size(), 4u);
}

}  // namespace
}  // namespace memscope
