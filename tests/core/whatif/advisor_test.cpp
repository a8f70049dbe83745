// The advisor (advisor.h) on hand-built transformer runs: its answer fits,
// can be applied, is never slower than a uniform policy that fits and can
// be (a faster one that cannot is named beside it), is what its name
// predicts when simulated again, and says when nothing fits; the frontier
// holds no dominated policy; the code it emits names the modules.
#include "memscope/whatif/advisor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>

#include "memscope/whatif/policy_modules.h"
#include "memscope/whatif/pytorch_code.h"
#include "transformer_run.h"
#include "whatif_test_util.h"

namespace memscope {
namespace {

using testutil::kLayers;
using testutil::open;
using testutil::Opened;
using testutil::Ops;
using testutil::predict;
using testutil::transformerRun;

// The run on the host: no caching allocator, so budgets hold active bytes
// (a GPU run's are judged by the allocator model's 2 MiB segments).
Opened hostRun(testutil::Options options) {
    Trace t = transformerRun(options);
    for (Event& e : t.events) e.device = -1;
    return open(std::move(t));
}

Advice adviseOk(const Opened& o, std::optional<int64_t> budget, AdvisorOptions options = {}) {
    auto a = advise(*o.trace, *o.timeline, "full.memscope", budget, options);
    EXPECT_TRUE(a.ok()) << a.message();
    return a.ok() ? std::move(*a) : Advice{};
}

// The uniform policies the advisor must not be slower than, predicted apart.
const std::vector<std::string> kUniform = {
    "block",       "sqrt",      "segments:2", "segments:4",       "every:2",           "every:3",
    "save:matmul", "selective", "opt-in-bwd", "block+opt-in-bwd", "every:2+opt-in-bwd"};

TEST(Advisor, TheAnswerFitsAndNoUniformPolicyThatFitsIsFaster) {
    // The first two layers have attention (larger), the last two only an mlp.
    for (int attention : {kLayers, 2}) {
        SCOPED_TRACE(attention);
        const Opened o = hostRun({Ops::Recorded, attention});
        const WhatIfReport uniform = predict(o, kUniform, false);
        const int64_t full = uniform.rows.front().peak_bytes;
        int64_t smallest = full;
        for (const WhatIfRow& r : uniform.rows)
            if (!r.refused) smallest = std::min(smallest, r.peak_bytes);
        for (int64_t budget : {full - 1, (full + smallest) / 2, smallest}) {
            SCOPED_TRACE(budget);
            const Advice a = adviseOk(o, budget);
            ASSERT_TRUE(a.choice) << a.line;
            EXPECT_LE(a.choice->judged_bytes, budget);
            // Every uniform policy that fits and record --apply can apply is
            // no faster; one that only code of the user's own applies (a
            // chunk of layers as one region) is named beside the answer.
            for (size_t i = 1; i < uniform.rows.size(); ++i) {
                const WhatIfRow& r = uniform.rows[i];
                if (r.refused || r.peak_bytes > budget) continue;
                if (policyModules(*parseWhatIfPolicy(r.policy), *o.trace).ok()) {
                    EXPECT_LE(a.choice->row.step_ms, r.step_ms + 1e-9) << r.policy;
                } else if (r.step_ms < a.choice->row.step_ms) {
                    ASSERT_TRUE(a.by_hand) << r.policy << " is faster and not named";
                    EXPECT_LE(a.by_hand->row.step_ms, r.step_ms + 1e-9);
                    EXPECT_FALSE(policyModules(a.by_hand->policy, *o.trace).ok());
                    EXPECT_NE(a.line.find("needs code of your own"), std::string::npos);
                }
            }
            EXPECT_TRUE(policyModules(a.choice->policy, *o.trace).ok()) << a.choice->policy.name;
            // The name is the policy: simulated again whole, the same peak.
            const WhatIfReport again = predict(o, {a.choice->policy.name}, false);
            ASSERT_EQ(again.rows.size(), 2u);
            ASSERT_FALSE(again.rows[1].refused) << *again.rows[1].refused;
            EXPECT_EQ(again.rows[1].peak_bytes, a.choice->row.peak_bytes);
            EXPECT_DOUBLE_EQ(again.rows[1].step_ms, a.choice->row.step_ms);
            EXPECT_NE(a.line.find(a.choice->policy.name), std::string::npos);
            EXPECT_GT(a.simulations, 0u);
        }
    }
}

TEST(Advisor, AMixBeatsEveryUniformPolicyBetweenThem) {
    // One of the two large (attention) layers checkpointed is enough for
    // this budget; every uniform policy that fits checkpoints more layers.
    const Opened o = hostRun({Ops::Recorded, 2});
    const WhatIfReport one = predict(o, {"layers:0"}, false);
    const Advice a = adviseOk(o, one.rows[1].peak_bytes);
    ASSERT_TRUE(a.choice) << a.line;
    ASSERT_TRUE(a.best_uniform) << a.line;
    EXPECT_FALSE(a.choice->uniform) << a.choice->policy.name;
    EXPECT_LT(a.choice->row.step_ms, a.best_uniform->row.step_ms);
    EXPECT_NE(a.line.find("the fastest uniform policy that fits, " + a.best_uniform->policy.name),
              std::string::npos)
        << a.line;
}

TEST(Advisor, ARunThatFitsAsItIsNeedsNoCode) {
    const Opened o = hostRun({Ops::Recorded});
    const Advice a = adviseOk(o, int64_t(1) << 40);
    ASSERT_TRUE(a.choice);
    EXPECT_TRUE(a.choice->changesNoCode());
    EXPECT_EQ(a.choice->policy.name, "full");
    EXPECT_NE(a.line.find("the run fits as it is"), std::string::npos) << a.line;
    // Nothing to apply: record --apply and --emit say so.
    auto modules = policyModules(a.choice->policy, *o.trace);
    ASSERT_FALSE(modules.ok());
    EXPECT_NE(modules.message().find("changes nothing"), std::string::npos);
}

TEST(Advisor, SaysHowFarTheSmallestPeakIsWhenNothingFits) {
    const Opened o = hostRun({Ops::Recorded});
    const Advice a = adviseOk(o, 1);
    EXPECT_FALSE(a.choice);
    ASSERT_TRUE(a.closest);
    EXPECT_EQ(a.short_by_bytes, a.closest->judged_bytes - 1);
    EXPECT_NE(a.line.find("nothing fits"), std::string::npos) << a.line;
}

TEST(Advisor, TheFrontierHoldsNoDominatedPolicy) {
    const Opened o = hostRun({Ops::Recorded});
    const Advice a = adviseOk(o, std::nullopt);
    ASSERT_GE(a.frontier.size(), 3u);
    EXPECT_EQ(a.frontier.front().policy.name, "full");
    for (size_t i = 1; i < a.frontier.size(); ++i) {
        // Smaller peaks cost more time, or the larger one would be dominated.
        EXPECT_LT(a.frontier[i].judged_bytes, a.frontier[i - 1].judged_bytes);
        EXPECT_GT(a.frontier[i].row.step_ms, a.frontier[i - 1].row.step_ms);
    }
    EXPECT_TRUE(std::any_of(a.frontier.begin(), a.frontier.end(),
                            [](const AdvisedPolicy& p) { return !p.uniform; }));
}

TEST(Advisor, WithoutOpsLayersAreOnlyCheckpointedWhole) {
    const Opened o = hostRun({Ops::None});
    const Advice a = adviseOk(o, std::nullopt);
    for (const AdvisedPolicy& p : a.frontier) EXPECT_TRUE(p.policy.save_layers.empty());
    EXPECT_TRUE(std::any_of(a.notes.begin(), a.notes.end(), [](const std::string& n) {
        return n.find("only checkpointed whole") != std::string::npos;
    }));
    AdvisorOptions no_optimizer;
    no_optimizer.optimizer_in_backward = false;
    const Advice b = adviseOk(o, std::nullopt, no_optimizer);
    for (const AdvisedPolicy& p : b.frontier)
        EXPECT_FALSE(p.policy.policy.optimizer_in_backward) << p.policy.name;
}

TEST(Advisor, RefusesARunWithoutLayersAndStopsWhenCancelled) {
    Trace flat = transformerRun({Ops::Recorded});
    flat.modules = ModuleTable{};
    const Opened f = open(std::move(flat));
    auto none = advise(*f.trace, *f.timeline, "flat", int64_t{1000});
    ASSERT_FALSE(none.ok());
    EXPECT_NE(none.message().find("no per-layer mix"), std::string::npos) << none.message();

    const Opened o = hostRun({Ops::Recorded});
    std::atomic<bool> cancel{true};
    TaskContext ctx;
    ctx.cancel = &cancel;
    auto cancelled = advise(*o.trace, *o.timeline, "full", int64_t{1000}, {}, ctx);
    ASSERT_FALSE(cancelled.ok());
    EXPECT_EQ(cancelled.message(), cancelledError().message);
}

TEST(Advisor, OnAGpuRunTheAllocatorSettingsAreAChoiceToo) {
    // Device 0: the caching allocator's model judges reserved bytes.
    const Opened o = open(transformerRun({Ops::Recorded}));
    AdvisorOptions recorded_only;
    recorded_only.allocator_settings = false;
    const Advice plain = adviseOk(o, std::nullopt, recorded_only);
    const Advice both = adviseOk(o, std::nullopt);
    EXPECT_TRUE(both.by_reserved);
    EXPECT_GT(both.simulations, plain.simulations);
    for (const AdvisedPolicy& p : plain.frontier) EXPECT_TRUE(p.allocator_conf.empty());
    // Whatever the search kept with expandable segments predicts the same
    // reserved peak when simulated again under them.
    for (const AdvisedPolicy& p : both.frontier) {
        if (p.allocator_conf.empty()) continue;
        EXPECT_EQ(p.allocator_conf, "expandable_segments:True");
        EXPECT_NE(p.label().find("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"),
                  std::string::npos);
        WhatIfOptions w;
        w.allocator_settings =
            *applyAllocatorConf(allocatorSettingsOf(*o.trace).settings, p.allocator_conf);
        auto again = whatIf(*o.trace, *o.timeline, "full", std::span(&p.policy, 1), w);
        ASSERT_TRUE(again.ok()) << again.message();
        const WhatIfRow& row = again->rows.back();
        ASSERT_TRUE(row.allocator) << p.label();
        EXPECT_EQ(int64_t(row.allocator->reserved_peak_bytes), p.judged_bytes) << p.label();
    }
}

TEST(PytorchCode, NamesTheModulesTheSaveListAndTheVersionNeeded) {
    const Trace run = transformerRun({Ops::Recorded});
    auto mix = policyModules(*parseWhatIfPolicy("layers:0+save:matmul@1-3+opt-in-bwd"), run);
    ASSERT_TRUE(mix.ok()) << mix.message();
    const std::string code = pytorchCode(*mix, {"full.memscope"});
    EXPECT_EQ(pytorchCodeNeeds(*mix), "2.4");
    EXPECT_NE(code.find("PyTorch >= 2.4"), std::string::npos);
    EXPECT_NE(code.find("for path in [\"h.0\"]:"), std::string::npos) << code;
    EXPECT_NE(code.find("for path in [\"h.1\", \"h.2\", \"h.3\"]:"), std::string::npos) << code;
    EXPECT_NE(code.find("\"aten::addmm\""), std::string::npos);
    EXPECT_NE(code.find("create_selective_checkpoint_contexts"), std::string::npos);
    EXPECT_NE(code.find("register_post_accumulate_grad_hook"), std::string::npos);
    EXPECT_NE(code.find("use_reentrant=False"), std::string::npos);

    auto whole = policyModules(*parseWhatIfPolicy("layers:1,2"), run);
    ASSERT_TRUE(whole.ok());
    EXPECT_EQ(pytorchCodeNeeds(*whole), "1.11");
    const std::string plain = pytorchCode(*whole);
    EXPECT_EQ(plain.find("create_selective_checkpoint_contexts"), std::string::npos);
    EXPECT_EQ(plain.find("register_post_accumulate_grad_hook"), std::string::npos);
}

TEST(PytorchCode, CheckpointSequentialRunsOverTheContainer) {
    PolicyModules p;
    p.policy = "sequential:4";
    p.sequential = SequentialCheckpoint{"ResNet", "body", "Sequential", 4};
    p.reentrant = true;
    const std::string code = pytorchCode(p);
    EXPECT_NE(code.find("body = model.get_submodule(\"body\")"), std::string::npos) << code;
    EXPECT_NE(code.find("return checkpoint_sequential(body, 4, x)"), std::string::npos) << code;
    EXPECT_EQ(code.find("checkpoint_forward"), std::string::npos);
    EXPECT_EQ(pytorchCodeNeeds(p), "1.11");
}

TEST(PytorchCode, AHostileModulePathStaysAString) {
    PolicyModules p;
    p.policy = "layers:0\nimport os";
    p.modules.push_back({"GPT", "h.0\"]:\n    os.system(\"x\")  #\\", "Block"});
    const std::string code = pytorchCode(p);
    // No line of the code starts with what the trace said.
    EXPECT_EQ(code.find("\nimport os"), std::string::npos) << code;
    EXPECT_EQ(code.find("\n    os.system"), std::string::npos) << code;
    EXPECT_NE(code.find("\\\"]:\\x0a    os.system(\\\"x\\\")  #\\\\"), std::string::npos) << code;
}

}  // namespace
}  // namespace memscope
