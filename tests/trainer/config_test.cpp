#include "config.h"

#include <gtest/gtest.h>

#include <tuple>

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
    EXPECT_EQ(o->train.model.hidden, 6144);  // the paper preset: Korthikanti et al.'s layer
    EXPECT_EQ(o->train.model.seq, 2048);
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
    // gpt: Korthikanti et al.'s smallest configuration per layer (h, a, s).
    auto gpt = preset(ModelKind::Gpt, "paper");
    ASSERT_TRUE(gpt.ok());
    EXPECT_EQ(gpt->hidden, 6144);
    EXPECT_EQ(gpt->heads, 64);
    EXPECT_EQ(gpt->seq, 2048);
    EXPECT_FALSE(preset(ModelKind::Gpt, "huge").ok());
}

TEST(TrainerConfig, WidePresetIsParameterHeavyAtBatchOne) {
    for (ModelKind kind : {ModelKind::Mlp, ModelKind::Gpt}) {
        auto quick = preset(kind, "quick");
        auto wide = preset(kind, "wide");
        ASSERT_TRUE(wide.ok());
        EXPECT_GT(wide->hidden, quick->hidden);
        EXPECT_EQ(wide->batch, 1);
        EXPECT_LT(wide->seq, quick->seq);
    }
    auto o = parseCommandLine({"--preset", "wide"});
    ASSERT_TRUE(o.ok()) << o.message();
    EXPECT_EQ(o->preset, "wide");
    EXPECT_EQ(o->train.model.hidden, preset(ModelKind::Mlp, "wide")->hidden);
}

TEST(TrainerConfig, LiteraturePoliciesParseAndName) {
    auto p = parsePolicies(
        "sqrt,segments:3+opt-in-bwd,save:matmul,attention,save:none,"
        "opt-in-bwd+save:attention,matmul,block");
    ASSERT_TRUE(p.ok()) << p.message();
    ASSERT_EQ(p->size(), 6u);
    EXPECT_EQ((*p)[0].recompute, Recompute::Sqrt);
    EXPECT_EQ((*p)[1].recompute, Recompute::Segments);
    EXPECT_EQ((*p)[1].segments, 3);
    EXPECT_TRUE((*p)[1].optimizer_in_backward);
    EXPECT_EQ((*p)[2].recompute, Recompute::Save);
    EXPECT_EQ((*p)[2].save_ops, kSaveMatmul | kSaveAttention);
    EXPECT_EQ((*p)[3].save_ops, 0u);
    EXPECT_TRUE((*p)[4].optimizer_in_backward);
    EXPECT_EQ((*p)[4].save_ops, kSaveMatmul | kSaveAttention);
    EXPECT_EQ((*p)[5].recompute, Recompute::Block);
    // Names read back to the same policies.
    for (const Policy& policy : *p) {
        auto again = parsePolicies(policyName(policy));
        ASSERT_TRUE(again.ok()) << policyName(policy);
        ASSERT_EQ(again->size(), 1u) << policyName(policy);
        EXPECT_EQ(again->front(), policy) << policyName(policy);
    }
    EXPECT_EQ(policyName((*p)[2]), "save:matmul,attention");
    EXPECT_EQ(policyName((*p)[4]), "save:matmul,attention+opt-in-bwd");
    EXPECT_EQ(policyFileStem((*p)[2]), "save-matmul-attention");
    EXPECT_EQ(policyName((*p)[1]), "segments:3+opt-in-bwd");
    for (const char* bad : {"segments:0", "segments:", "segments:x", "save:", "save:conv",
                            "save:matmul,conv", "sqrt+block", "save:none+segments:2"})
        EXPECT_FALSE(parsePolicies(bad).ok()) << bad;
}

TEST(TrainerConfig, SegmentPlans) {
    auto plan = [](const char* policy, int64_t layers) {
        std::vector<std::tuple<int64_t, int64_t, bool>> out;
        const auto segments = segmentPlan(parsePolicies(policy)->front(), layers);
        for (const CheckpointSegment& s : segments.value())
            out.emplace_back(s.begin, s.end, s.checkpointed);
        return out;
    };
    using V = std::vector<std::tuple<int64_t, int64_t, bool>>;
    EXPECT_EQ(plan("full", 3), (V{{0, 3, false}}));
    EXPECT_EQ(plan("selective", 3), (V{{0, 3, false}}));
    EXPECT_EQ(plan("block", 2), (V{{0, 1, true}, {1, 2, true}}));
    EXPECT_EQ(plan("save:matmul", 2), (V{{0, 1, true}, {1, 2, true}}));
    // Chen et al.: segments of ceil(sqrt(L)) blocks, all checkpointed.
    EXPECT_EQ(plan("sqrt", 5), (V{{0, 3, true}, {3, 5, true}}));
    EXPECT_EQ(plan("sqrt", 9), (V{{0, 3, true}, {3, 6, true}, {6, 9, true}}));
    EXPECT_EQ(plan("sqrt", 24),
              (V{{0, 5, true}, {5, 10, true}, {10, 15, true}, {15, 20, true}, {20, 24, true}}));
    // checkpoint_sequential: L/K blocks per segment, the last one plain.
    EXPECT_EQ(plan("segments:2", 5), (V{{0, 2, true}, {2, 5, false}}));
    EXPECT_EQ(plan("segments:3", 6), (V{{0, 2, true}, {2, 4, true}, {4, 6, false}}));
    EXPECT_EQ(plan("segments:1", 4), (V{{0, 4, false}}));
    EXPECT_FALSE(segmentPlan(parsePolicies("segments:7")->front(), 6).ok());
}

TEST(TrainerConfig, SweepAndBudget) {
    auto o = parseCommandLine({"--model", "gpt", "--policy", "sweep", "--budget", "2.5GiB"});
    ASSERT_TRUE(o.ok()) << o.message();
    EXPECT_EQ(o->policies, sweepPolicies(ModelKind::Gpt, o->train.model.layers));
    EXPECT_EQ(*o->budget_bytes, int64_t{5} * 512 * 1024 * 1024);
    auto mlp = parseCommandLine({"--policy", "sweep"});
    ASSERT_TRUE(mlp.ok());
    for (const Policy& p : mlp->policies) EXPECT_FALSE(p.save_ops & kSaveAttention);
    // Every policy of the sweep, each alone and with +opt-in-bwd, once.
    const auto sweep = sweepPolicies(ModelKind::Gpt, 4);
    EXPECT_EQ(sweep.size(), 20u);
    for (size_t i = 0; i < sweep.size(); ++i)
        for (size_t j = i + 1; j < sweep.size(); ++j) EXPECT_FALSE(sweep[i] == sweep[j]);
    EXPECT_FALSE(parseCommandLine({"--budget", "lots"}).ok());
    EXPECT_FALSE(parseCommandLine({"--budget", "1GiB", "--no-capture"}).ok());
    EXPECT_FALSE(parseCommandLine({"--policy", "segments:7", "--layers", "6"}).ok());
    EXPECT_TRUE(parseCommandLine({"--policy", "segments:6", "--layers", "6"}).ok());
}
