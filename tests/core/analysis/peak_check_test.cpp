// The CI gate's rules: which peaks are checked, the verdict against a limit,
// and the growth limit over a baseline.
#include "memscope/analysis/peak_check.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

#include "../analysis_test_util.h"
#include "memscope/timeline/timeline.h"

namespace memscope {
namespace {

using testutil::event;
using testutil::trainingRun;

TEST(PeakCheck, LimitsDevicesAndPhases) {
    const Trace t = trainingRun("full", "full", 5000);
    auto tl = *Timeline::build(t);
    auto whole = peaksToCheck(*tl, std::nullopt, std::nullopt);
    ASSERT_TRUE(whole.ok());
    ASSERT_EQ(whole->size(), 1u);
    EXPECT_EQ((*whole)[0].bytes, 9000);
    EXPECT_FALSE(judge((*whole)[0], 9000).over);
    const CheckVerdict over = judge((*whole)[0], 8999);
    EXPECT_TRUE(over.over);
    EXPECT_NE(over.message.find("device 0"), std::string::npos) << over.message;
    EXPECT_NE(over.message.find("1 B"), std::string::npos) << over.message;
    auto fwd = peaksToCheck(*tl, int16_t(0), TrainingPhase::Forward);
    ASSERT_TRUE(fwd.ok());
    EXPECT_EQ((*fwd)[0].bytes, 8050);
    EXPECT_NE(judge((*fwd)[0], 1).message.find("forward"), std::string::npos);
    EXPECT_FALSE(peaksToCheck(*tl, int16_t(3), std::nullopt).ok());

    Trace plain;
    plain.events = {event(1, EventKind::Alloc, 0x10, 64, Category::Unknown)};
    auto ptl = *Timeline::build(plain);
    auto missing = peaksToCheck(*ptl, std::nullopt, TrainingPhase::Optimizer);
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.message().find("no optimizer phase"), std::string::npos) << missing.message();

    EXPECT_EQ(growthLimit(1000, 10), 1100);
    EXPECT_EQ(growthLimit(1000, 0), 1000);
    EXPECT_EQ(growthLimit(1000, -50), 500);
    EXPECT_EQ(growthLimit(INT64_MAX, 50), INT64_MAX);
}

}  // namespace
}  // namespace memscope
