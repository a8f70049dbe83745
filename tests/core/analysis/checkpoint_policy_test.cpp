// The checkpointing policies (checkpoint_policy.h): names that round trip and
// segment plans that cover every layer.
#include "memscope/analysis/checkpoint_policy.h"

#include <gtest/gtest.h>

#include <cstdint>

using namespace memscope;

TEST(CheckpointPolicy, NamesRoundTripAndPlansCoverEveryLayer) {
    for (const char* name :
         {"full", "block", "selective", "sqrt", "segments:3", "save:none", "save:matmul,attention",
          "opt-in-bwd", "block+opt-in-bwd", "save:matmul+opt-in-bwd"}) {
        auto p = parsePolicy(name);
        ASSERT_TRUE(p.ok()) << name << ": " << p.message();
        EXPECT_EQ(policyName(*p), name);
        for (int64_t layers : {3, 7, 16}) {
            auto plan = segmentPlan(*p, layers);
            ASSERT_TRUE(plan.ok()) << name;
            int64_t next = 0;
            for (const CheckpointSegment& s : *plan) {
                EXPECT_EQ(s.begin, next) << name;
                EXPECT_GT(s.end, s.begin) << name;
                next = s.end;
            }
            EXPECT_EQ(next, layers) << name;
        }
    }
    EXPECT_FALSE(parsePolicy("block+selective").ok());
    EXPECT_FALSE(parsePolicy("segments:0").ok());
    EXPECT_FALSE(parsePolicy("save:softmax").ok());
}
