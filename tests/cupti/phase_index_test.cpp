#include "phase_index.h"

#include <gtest/gtest.h>

#include "phase_names.h"

namespace memscope::cupti {
namespace {

TEST(PhaseIndex, InnermostContainingPhaseWins) {
    PhaseIndex index;
    index.open(PhaseId{1}, 100);  // step
    index.open(PhaseId{2}, 110);  // forward
    index.close(PhaseId{2}, 150);
    index.open(PhaseId{3}, 160);  // backward, still open
    EXPECT_TRUE(index.innermostAt(50).isNull());
    EXPECT_EQ(index.innermostAt(105), PhaseId{1});
    EXPECT_EQ(index.innermostAt(120), PhaseId{2});
    EXPECT_EQ(index.innermostAt(155), PhaseId{1});  // between forward and backward
    EXPECT_EQ(index.innermostAt(10'000), PhaseId{3});
    index.close(PhaseId{3}, 200);
    index.close(PhaseId{1}, 210);
    EXPECT_EQ(index.innermostAt(205), PhaseId{1});
    EXPECT_TRUE(index.innermostAt(210).isNull());  // end is exclusive
}

TEST(PhaseIndex, OutOfOrderOpensKeepTheOrder) {
    PhaseIndex index;
    index.open(PhaseId{1}, 200);
    index.open(PhaseId{2}, 100);  // another thread, a little late
    index.close(PhaseId{2}, 150);
    EXPECT_EQ(index.innermostAt(120), PhaseId{2});
    EXPECT_EQ(index.innermostAt(250), PhaseId{1});
}

TEST(PhaseIndex, ForgettingKeepsOldOpenPhases) {
    PhaseIndex index;
    index.open(PhaseId{1}, 0);  // "train", open all run
    for (uint32_t i = 0; i < 1000; ++i) {
        index.open(PhaseId{i + 2}, 10 + i * 10);
        index.close(PhaseId{i + 2}, 15 + i * 10);
    }
    index.forgetBefore(9000);
    EXPECT_LT(index.size(), 120u);
    EXPECT_EQ(index.innermostAt(9007), PhaseId{1});     // between two ranges
    EXPECT_EQ(index.innermostAt(9992), PhaseId{1000});  // inside range 998
}

TEST(PhaseNames, TrainingPhasesAreRecognized) {
    EXPECT_EQ(classifyPhaseName("step 12").kind, PhaseKind::Step);
    EXPECT_EQ(classifyPhaseName("step 12").step, 12);
    EXPECT_EQ(classifyPhaseName("Step_3").step, 3);
    EXPECT_EQ(classifyPhaseName("step").step, -1);
    EXPECT_EQ(classifyPhaseName("forward").kind, PhaseKind::Forward);
    EXPECT_EQ(classifyPhaseName("Backward pass").kind, PhaseKind::Backward);
    EXPECT_EQ(classifyPhaseName("optimizer.step").kind, PhaseKind::Optimizer);
    EXPECT_EQ(classifyPhaseName("aten::mm").kind, PhaseKind::Range);
    EXPECT_EQ(classifyPhaseName("").kind, PhaseKind::Range);
}

}  // namespace
}  // namespace memscope::cupti
