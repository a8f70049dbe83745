#include "config.h"

#include <gtest/gtest.h>

using namespace memscope::trainer;

TEST(TrainerConfig, AllIsTheFourPolicies) {
    auto p = parsePolicies("all");
    ASSERT_TRUE(p.ok());
    ASSERT_EQ(p->size(), 4u);
    EXPECT_EQ(policyName((*p)[0]), "full");
    EXPECT_EQ(policyName((*p)[1]), "block");
    EXPECT_EQ(policyName((*p)[2]), "selective");
    EXPECT_EQ(policyName((*p)[3]), "opt-in-bwd");
}

TEST(TrainerConfig, PoliciesCompose) {
    auto p = parsePolicies("block+opt-in-bwd,selective");
    ASSERT_TRUE(p.ok());
    ASSERT_EQ(p->size(), 2u);
    EXPECT_EQ((*p)[0].recompute, Recompute::Block);
    EXPECT_TRUE((*p)[0].optimizer_in_backward);
    EXPECT_EQ(policyName((*p)[0]), "block+opt-in-bwd");
    EXPECT_FALSE(parsePolicies("block+selective").ok());
    EXPECT_FALSE(parsePolicies("nonsense").ok());
}

TEST(TrainerConfig, CommandLine) {
    auto o = parseCommandLine({"--model", "gpt", "--layers", "2", "--preset", "quick", "--dtype",
                               "bf16", "--policy", "block", "--out", "x"});
    ASSERT_TRUE(o.ok()) << o.message();
    EXPECT_EQ(o->train.model.kind, ModelKind::Gpt);
    EXPECT_EQ(o->train.model.layers, 2);  // overrides win over the preset, in any order
    EXPECT_EQ(o->train.model.dtype, DType::BFloat16);
    EXPECT_EQ(*o->out_dir, "x");
    EXPECT_FALSE(parseCommandLine({"--steps", "zero"}).ok());
    EXPECT_FALSE(parseCommandLine({"--bogus"}).ok());
    EXPECT_FALSE(parseCommandLine({"--steps"}).ok());
    EXPECT_FALSE(parseCommandLine({"--device", "tpu"}).ok());
    EXPECT_FALSE(parseCommandLine({"--model", "gpt", "--hidden", "10", "--heads", "4"}).ok());
    EXPECT_TRUE(parseCommandLine({"--help"})->help);
}

TEST(TrainerConfig, PaperPresetsAreTheLiteratureSizes) {
    auto mlp = preset(ModelKind::Mlp, "paper");
    ASSERT_TRUE(mlp.ok());
    EXPECT_EQ(mlp->hidden, 1024);
    EXPECT_EQ(mlp->layers, 24);
    EXPECT_EQ(mlp->batch, 8);
    EXPECT_EQ(mlp->seq, 512);
    EXPECT_FALSE(preset(ModelKind::Gpt, "huge").ok());
}
