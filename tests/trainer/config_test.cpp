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

TEST(TrainerConfig, CommandLineDefaults) {
    auto o = parseCommandLine({});
    ASSERT_TRUE(o.ok()) << o.message();
    EXPECT_EQ(o->train.model.kind, ModelKind::Mlp);
    EXPECT_EQ(o->preset, "quick");
    EXPECT_EQ(o->policies, parsePolicies("all").value());
    EXPECT_EQ(o->train.steps, 3);
    EXPECT_EQ(o->train.seed, 1234u);
    EXPECT_EQ(o->train.lr, 1e-3);
    EXPECT_EQ(o->train.device, "cpu");
    EXPECT_EQ(o->train.threads, 0);
    EXPECT_EQ(o->train.model.dtype, DType::Float32);
    EXPECT_EQ(o->train.model.layers, preset(ModelKind::Mlp, "quick")->layers);
    EXPECT_TRUE(o->capture);
    EXPECT_FALSE(o->out_dir);
    EXPECT_FALSE(o->json_path);
    EXPECT_FALSE(o->help);
}

TEST(TrainerConfig, CommandLineTypesAndChecks) {
    auto o = parseCommandLine({"--no-capture", "--seed=7", "--lr", "0.5", "--threads", "2",
                               "--device", "cuda:1", "--dropout", "0", "--model=gpt", "--dtype",
                               "bfloat16", "--json", "s.json", "--preset", "paper"});
    ASSERT_TRUE(o.ok()) << o.message();
    EXPECT_FALSE(o->capture);
    EXPECT_EQ(o->train.seed, 7u);
    EXPECT_EQ(o->train.lr, 0.5);
    EXPECT_EQ(o->train.threads, 2);
    EXPECT_EQ(o->train.device, "cuda:1");
    EXPECT_EQ(o->train.model.dropout, 0.0);
    EXPECT_EQ(o->train.model.dtype, DType::BFloat16);
    EXPECT_EQ(o->train.model.vocab, 50257);  // the paper preset
    EXPECT_EQ(*o->json_path, "s.json");
    // A repeated option: the last value wins, as before CLI11.
    auto repeated = parseCommandLine({"--steps", "2", "--steps", "5"});
    ASSERT_TRUE(repeated.ok()) << repeated.message();
    EXPECT_EQ(repeated->train.steps, 5);
    for (const std::vector<std::string>& bad :
         std::vector<std::vector<std::string>>{{"--seed", "-1"},
                                               {"--threads", "-1"},
                                               {"--steps", "0"},
                                               {"--layers", "0"},
                                               {"--layers", "3000000000"},
                                               {"--dropout", "1"},
                                               {"--dropout", "-0.1"},
                                               {"--lr", "fast"},
                                               {"--model", "resnet"},
                                               {"--preset", "huge"},
                                               {"--dtype", "fp8"},
                                               {"--device", "cuda:x"},
                                               {"--policy", "block+selective"},
                                               {"positional"}}) {
        auto r = parseCommandLine(bad);
        EXPECT_FALSE(r.ok()) << bad.front();
        if (!r.ok()) {
            EXPECT_FALSE(r.message().empty());
        }
    }
}

TEST(TrainerConfig, UsageIsGenerated) {
    const std::string text = usage();
    for (const char* option : {"--model", "--policy", "--preset", "--out", "--no-capture",
                               "--layers", "--dropout", "Exit status"})
        EXPECT_NE(text.find(option), std::string::npos) << option;
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
