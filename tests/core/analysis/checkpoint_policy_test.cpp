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

TEST(CheckpointPolicy, SaveListsNameOpsAsPyTorchDoesOnlyWhereAsked) {
    // memscope-train's lists take op kinds alone.
    EXPECT_FALSE(parsePolicy("save:aten::mm").ok());
    EXPECT_FALSE(continuesSaveList("aten::bmm"));
    for (const char* name : {"save:aten::mm,aten::bmm", "save:matmul,aten::_softmax+opt-in-bwd",
                             "save:aten::_scaled_dot_product_flash_attention", "save:mylib::op"}) {
        auto p = parsePolicy(name, SaveNames::KindsAndOps);
        ASSERT_TRUE(p.ok()) << name << ": " << p.message();
        EXPECT_EQ(policyName(*p), name);
        EXPECT_EQ(p->recompute, Recompute::Save);
    }
    auto p = parsePolicy("save:aten::mm,matmul,aten::mm", SaveNames::KindsAndOps);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->save_ops, uint32_t(kSaveMatmul));
    EXPECT_EQ(p->save_op_names, std::vector<std::string>{"aten::mm"});
    EXPECT_EQ(policyName(*p), "save:matmul,aten::mm");
    EXPECT_EQ(policyFileStem(*p), "save-matmul-aten--mm");
    EXPECT_TRUE(continuesSaveList("aten::bmm+opt-in-bwd", SaveNames::KindsAndOps));
    EXPECT_FALSE(continuesSaveList("block", SaveNames::KindsAndOps));
    auto bad = parsePolicy("save:aten::", SaveNames::KindsAndOps);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.message().find("aten::addmm"), std::string::npos) << bad.message();
    EXPECT_FALSE(parsePolicy("save:softmax", SaveNames::KindsAndOps).ok());
    EXPECT_FALSE(isQualifiedOpName("aten::"));
    EXPECT_TRUE(isQualifiedOpName("aten::add.Tensor"));
}
