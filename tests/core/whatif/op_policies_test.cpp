// Save lists and selective recomputation predicted from a run's ops: a
// transformer layer chain built by hand, its ops recorded as op scopes,
// inferred per allocation, or labelled by op phases as the reference
// trainer does, so that what each policy keeps is known.
#include <gtest/gtest.h>

#include <algorithm>

#include "memscope/open/open_run.h"
#include "memscope/whatif/attention_core.h"
#include "memscope/whatif/op_index.h"
#include "memscope/whatif/policy_modules.h"
#include "memscope/whatif/whatif.h"
#include "transformer_run.h"
#include "whatif_test_util.h"

namespace memscope {
namespace {

using testutil::kLayers;
using testutil::kStepLen;
using testutil::kT0;
using testutil::Ops;
using testutil::Options;
using testutil::transformerRun;

using testutil::liveAt;
using testutil::open;
using testutil::Opened;
using testutil::predict;

// What a row's prediction frees, against the measured run, at time x of the
// first step's forward (the forward's times do not move).
int64_t freedAt(const Opened& o, const WhatIfRow& row, int64_t x) {
    EXPECT_FALSE(row.refused) << row.policy << ": " << *row.refused;
    if (row.refused || !row.timeline) return 0;
    return liveAt(*o.timeline, x) - liveAt(*row.timeline, x);
}

bool hasAssumption(const WhatIfRow& row, std::string_view part) {
    return std::any_of(row.assumptions.begin(), row.assumptions.end(),
                       [&](const std::string& a) { return a.find(part) != std::string::npos; });
}

constexpr int64_t kLayer0 = kT0 + 100;  // the first layer's forward, step 0

TEST(WhatIfOpIndex, ReadsOpsFromEverySource) {
    const Trace recorded = transformerRun({Ops::Recorded});
    const OpIndex r(recorded, 0);
    EXPECT_EQ(r.source(), OpIndexSource::Recorded);
    EXPECT_EQ(opKindOfAtenName("aten::addmm"), uint32_t(kSaveMatmul));
    EXPECT_EQ(opKindOfAtenName("aten::_scaled_dot_product_flash_attention"),
              uint32_t(kSaveAttention));
    EXPECT_EQ(opKindOfAtenName("aten::_softmax"), 0u);
    // The addmm inside a linear is kept as its own call: aten::linear is
    // composite, a selective policy sees only the addmm it calls.
    EXPECT_EQ(opKindOfAtenName("aten::linear"), 0u);
    const auto kept = r.kept({kSaveMatmul, {}});
    const auto call = kept.madeBy(0, kLayer0 + 10);
    ASSERT_TRUE(call);
    EXPECT_EQ(call->name, "aten::addmm");
    EXPECT_EQ(call->end - call->start, 50);
    EXPECT_EQ(kept.timeIn(kLayer0, kLayer0 + 800), 4 * 50 + 2 * 50);
    EXPECT_FALSE(r.kept({0, {"aten::addmm"}}).madeBy(0, kLayer0 + 160));
    EXPECT_EQ(r.neverRan({kSaveAttention, {"aten::addmm", "aten::foo"}}),
              (std::vector<std::string>{"attention", "aten::foo"}));
    const auto top = r.topAllocating(2);
    ASSERT_EQ(top.size(), 2u);
    EXPECT_EQ(top[0].name, "aten::addmm");

    const Trace inferred = transformerRun({Ops::Inferred});
    const OpIndex i(inferred, 0);
    EXPECT_EQ(i.source(), OpIndexSource::Inferred);
    // Two allocations of one dropout are one call.
    const auto dropout = std::count_if(i.runs().begin(), i.runs().end(), [](const OpRun& x) {
        return x.name == "aten::dropout" && x.start >= kLayer0 && x.end <= kLayer0 + 800;
    });
    EXPECT_EQ(dropout, 1);

    EXPECT_EQ(OpIndex(transformerRun({Ops::Phases}), 0).source(), OpIndexSource::Phases);
    EXPECT_TRUE(OpIndex(transformerRun({Ops::None}), 0).empty());
    EXPECT_TRUE(OpIndex().empty());
    EXPECT_TRUE(OpIndex().topAllocating(3).empty());
    EXPECT_FALSE(OpIndex().kept({kSaveMatmul, {"aten::mm"}}).madeBy(0, 0));
}

TEST(WhatIfOpIndex, FindsTheAttentionCoreFromTheOps) {
    const Trace recorded = transformerRun({Ops::Recorded});
    const auto core = attentionCoreIn(OpIndex(recorded, 0), kLayer0, kLayer0 + 800);
    ASSERT_TRUE(core);
    EXPECT_EQ(core->start, kLayer0 + 100);
    EXPECT_EQ(core->end, kLayer0 + 400);
    EXPECT_EQ(core->ops, "aten::bmm … aten::_softmax … aten::bmm");
    const Trace sdpa = transformerRun({Ops::Recorded, kLayers, true});
    const auto fused = attentionCoreIn(OpIndex(sdpa, 0), kLayer0, kLayer0 + 800);
    ASSERT_TRUE(fused);
    EXPECT_EQ(fused->ops, "aten::_scaled_dot_product_flash_attention");
    EXPECT_EQ(fused->end - fused->start, 300);
    const Trace mlp = transformerRun({Ops::Recorded, 0});
    EXPECT_FALSE(attentionCoreIn(OpIndex(mlp, 0), kLayer0, kLayer0 + 800));
}

TEST(WhatIfOps, SelectiveRecomputesOnlyTheAttentionCore) {
    for (Ops ops : {Ops::Recorded, Ops::Inferred, Ops::Phases}) {
        SCOPED_TRACE(int(ops));
        const Opened o = open(transformerRun({ops}));
        const WhatIfReport r = predict(o, {"selective", "block"});
        ASSERT_EQ(r.rows.size(), 3u);
        // Freed in forward: the probabilities, the dropout mask and the
        // dropped probabilities (what the core saved); kept: q, k, v (the
        // qkv output, made before the core) and the core's output.
        EXPECT_EQ(freedAt(o, r.rows[1], kLayer0 + 410), 400 + 100 + 400);
        EXPECT_LT(r.rows[1].peak_bytes, r.rows[0].peak_bytes);
        EXPECT_GT(r.rows[1].peak_bytes, r.rows[2].peak_bytes);
        if (ops == Ops::Recorded) {
            EXPECT_EQ(r.rows[1].recompute_ns, kLayers * 300);
        }
        EXPECT_TRUE(hasAssumption(r.rows[1], "attention core"));
        bool recomputes_core = false;
        for (const Phase& p : r.rows[1].trace->phases)
            recomputes_core |= r.rows[1].trace->string(p.name) == "recompute attention of h.0";
        EXPECT_TRUE(recomputes_core);
    }
}

TEST(WhatIfOps, SelectiveHoldsTheCoresInputUntilItsBackward) {
    // qkv, read by the core and freed in forward after it, is the input the
    // checkpoint of the core holds: the prediction keeps it alive.
    Options opts;
    opts.qkv_freed = 420;
    const Opened o = open(transformerRun(opts));
    const WhatIfReport r = predict(o, {"selective"});
    // Measured, qkv (300) is gone at 450; predicted, it is held, while the
    // core's probabilities, mask and dropped probabilities are freed.
    EXPECT_EQ(freedAt(o, r.rows[1], kLayer0 + 450), 400 + 100 + 400 - 300);
    EXPECT_TRUE(hasAssumption(r.rows[1], "held by the checkpoint"));
    // A whole-layer checkpoint has no such input: qkv is made inside it.
    const WhatIfReport block = predict(o, {"block"});
    EXPECT_FALSE(hasAssumption(block.rows[1], "held by the checkpoint"));
}

TEST(WhatIfOps, SelectiveOnAFusedAttentionOpRecomputesIt) {
    const Opened o = open(transformerRun({Ops::Recorded, kLayers, true}));
    const WhatIfReport r = predict(o, {"selective"});
    EXPECT_EQ(freedAt(o, r.rows[1], kLayer0 + 410), 400 + 100 + 400);
    EXPECT_TRUE(hasAssumption(r.rows[1], "aten::_scaled_dot_product_flash_attention"));
}

TEST(WhatIfOps, SelectiveSaysWhichLayersHaveNoAttentionCore) {
    const Opened o = open(transformerRun({Ops::Recorded, 2}));
    const WhatIfReport r = predict(o, {"selective"});
    ASSERT_FALSE(r.rows[1].refused);
    EXPECT_TRUE(hasAssumption(r.rows[1], "in h.2, h.3: nothing is recomputed there"));
    EXPECT_EQ(r.rows[1].recompute_ns, 2 * 300);
}

TEST(WhatIfOps, SaveListKeepsTheListedOpsOutputsAndRecomputesTheRest) {
    for (Ops ops : {Ops::Recorded, Ops::Inferred}) {
        SCOPED_TRACE(int(ops));
        const Opened o = open(transformerRun({ops}));
        const WhatIfReport r = predict(o, {"save:aten::addmm", "block"});
        ASSERT_EQ(r.rows.size(), 3u);
        EXPECT_EQ(r.rows[1].policy, "save:aten::addmm");
        // After layer 0's forward: block freed all it saved (qkv 300,
        // probabilities 400, mask 100, dropped 400, core output 300, fc1 600,
        // gelu 600); the save list keeps the addmm outputs qkv and fc1, and
        // holds proj and fc2 (used once) until the recompute.
        EXPECT_EQ(freedAt(o, r.rows[2], kLayer0 + 850), 2700);
        EXPECT_EQ(freedAt(o, r.rows[1], kLayer0 + 850), 2700 - 900 - 600);
        // The kept addmms are not run again (recorded: 4 calls of 50).
        if (ops == Ops::Recorded) {
            EXPECT_EQ(r.rows[2].recompute_ns, kLayers * 800);
            EXPECT_EQ(r.rows[1].recompute_ns, kLayers * (800 - 4 * 50));
        }
        EXPECT_LT(r.rows[1].recompute_ns, r.rows[2].recompute_ns);
        EXPECT_TRUE(hasAssumption(r.rows[1], "aten::addmm"));
    }
}

TEST(WhatIfOps, SaveMatmulIsTheAtenListItStandsFor) {
    const Opened o = open(transformerRun({Ops::Recorded}));
    // The matmul kind's ops the run ran (naming one it never ran is refused).
    std::string list = "save:";
    for (std::string_view name : atenNamesOfKind(kSaveMatmul))
        if (std::any_of(o.trace->ops.scopes.begin(), o.trace->ops.scopes.end(),
                        [&](const OpScope& s) { return o.trace->string(s.name) == name; }))
            list += (list.size() > 5 ? "," : "") + std::string(name);
    EXPECT_EQ(list, "save:aten::addmm,aten::bmm");
    const WhatIfReport r = predict(o, {"save:matmul", list});
    ASSERT_EQ(r.rows.size(), 3u);
    EXPECT_EQ(r.rows[2].policy, list);
    ASSERT_FALSE(r.rows[1].refused);
    ASSERT_FALSE(r.rows[2].refused);
    EXPECT_EQ(r.rows[1].peak_bytes, r.rows[2].peak_bytes);
    EXPECT_EQ(r.rows[1].recompute_ns, r.rows[2].recompute_ns);
    for (int64_t x = kT0; x < kT0 + 2 * kStepLen; x += 50)
        EXPECT_EQ(liveAt(*r.rows[1].timeline, x), liveAt(*r.rows[2].timeline, x)) << x;
    // The kept addmms (50 each, inside their linears) and bmms (50 each)
    // are not recompute time.
    EXPECT_EQ(r.rows[1].recompute_ns, kLayers * (800 - 4 * 50 - 2 * 50));
}

TEST(WhatIfOps, TheTrainersOpPhasesAndRecordedOpsAgree) {
    // The trainer's labels turned into the ops they stand for: each "matmul"
    // phase an aten::addmm, the "attention" phase one fused attention op.
    const Opened phases = open(transformerRun({Ops::Phases}));
    const Opened recorded = open(transformerRun({Ops::Recorded, kLayers, true}));
    const std::vector<std::pair<std::string, std::string>> pairs = {
        {"save:matmul", "save:aten::addmm"},
        {"save:attention", "save:aten::_scaled_dot_product_flash_attention"},
        {"save:matmul,attention", "save:attention,aten::addmm"},
        {"selective", "selective"}};
    for (const auto& [a, b] : pairs) {
        SCOPED_TRACE(a);
        const WhatIfReport p = predict(phases, {a});
        const WhatIfReport q = predict(recorded, {b});
        ASSERT_FALSE(p.rows[1].refused) << *p.rows[1].refused;
        ASSERT_FALSE(q.rows[1].refused) << *q.rows[1].refused;
        EXPECT_EQ(p.rows[1].peak_bytes, q.rows[1].peak_bytes);
        for (int64_t x = kT0; x < kT0 + 2 * kStepLen; x += 25)
            ASSERT_EQ(liveAt(*p.rows[1].timeline, x), liveAt(*q.rows[1].timeline, x)) << x;
    }
    // Kept whole, the attention op keeps its inputs (q, k, v).
    const WhatIfReport att = predict(recorded, {"save:aten::_scaled_dot_product_flash_attention"});
    EXPECT_EQ(freedAt(recorded, att.rows[1], kLayer0 + 850), 600 + 600);
}

TEST(WhatIfOps, RefusesWhatTheOpsCannotTell) {
    const Opened none = open(transformerRun({Ops::None}));
    const WhatIfReport r = predict(none, {"selective", "save:aten::addmm", "save:matmul", "block"});
    for (size_t i = 1; i <= 3; ++i) {
        ASSERT_TRUE(r.rows[i].refused) << r.rows[i].policy;
        EXPECT_NE(r.rows[i].refused->find("memscope-cli record"), std::string::npos);
        EXPECT_NE(r.rows[i].refused->find("stacks=\"all\""), std::string::npos);
    }
    EXPECT_FALSE(r.rows[4].refused);

    const Opened ops = open(transformerRun({Ops::Recorded}));
    const WhatIfReport missing = predict(ops, {"save:aten::addmm,aten::baddbmm", "save:attention"});
    ASSERT_TRUE(missing.rows[1].refused);
    EXPECT_NE(missing.rows[1].refused->find("never ran aten::baddbmm"), std::string::npos)
        << *missing.rows[1].refused;
    EXPECT_NE(missing.rows[1].refused->find("allocate most: aten::addmm"), std::string::npos)
        << *missing.rows[1].refused;
    ASSERT_TRUE(missing.rows[2].refused);
    EXPECT_NE(missing.rows[2].refused->find("never ran attention"), std::string::npos);

    const Opened mlp = open(transformerRun({Ops::Inferred, 0}));
    const WhatIfReport s = predict(mlp, {"selective", "save:aten::gelu"});
    ASSERT_TRUE(s.rows[1].refused);
    EXPECT_NE(s.rows[1].refused->find("no softmax or scaled_dot_product_attention op in any layer"),
              std::string::npos);
    EXPECT_FALSE(s.rows[2].refused);
}

TEST(WhatIfOps, SaveListsOfAtenNamesRoundTrip) {
    auto p = parseWhatIfPolicies(std::vector<std::string>{"save:aten::mm,aten::bmm", "block",
                                                          "save:matmul,aten::_softmax+opt-in-bwd"});
    ASSERT_TRUE(p.ok()) << p.message();
    ASSERT_EQ(p->size(), 3u);
    EXPECT_EQ((*p)[0].name, "save:aten::mm,aten::bmm");
    EXPECT_EQ((*p)[0].policy.save_op_names, (std::vector<std::string>{"aten::mm", "aten::bmm"}));
    EXPECT_EQ((*p)[2].name, "save:matmul,aten::_softmax+opt-in-bwd");
    auto again = parseWhatIfPolicy((*p)[0].name);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->policy, (*p)[0].policy);
    auto joined = parseWhatIfPolicies(std::vector<std::string>{"save:aten::mm,aten::bmm,block"});
    ASSERT_TRUE(joined.ok());
    EXPECT_EQ(joined->size(), 2u);
}

TEST(WhatIfMixes, ParseAndNameEachLayersChoice) {
    auto mix = parseWhatIfPolicy("layers:0,1+save:matmul@2-5+opt-in-bwd");
    ASSERT_TRUE(mix.ok()) << mix.message();
    EXPECT_EQ(mix->name, "layers:0,1+save:matmul@2-5+opt-in-bwd");
    EXPECT_EQ(mix->plan, RegionPlan::Layers);
    EXPECT_EQ(mix->layers, (std::vector<int64_t>{0, 1}));
    EXPECT_EQ(mix->save_layers, (std::vector<int64_t>{2, 3, 4, 5}));
    EXPECT_EQ(mix->policy.recompute, Recompute::Save);
    EXPECT_TRUE(mix->policy.optimizer_in_backward);
    EXPECT_TRUE(savesOpsIn(*mix, 3));
    EXPECT_FALSE(savesOpsIn(*mix, 1));
    auto again = parseWhatIfPolicy(mix->name);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->name, mix->name);
    // Runs of three or more are written FIRST-LAST; a save list alone is a mix too.
    EXPECT_EQ(parseWhatIfPolicy("layers:5,0,1,2")->name, "layers:0-2,5");
    auto saves = parseWhatIfPolicy("save:aten::addmm@1,3");
    ASSERT_TRUE(saves.ok()) << saves.message();
    EXPECT_TRUE(saves->layers.empty());
    EXPECT_EQ(saves->name, "save:aten::addmm@1,3");
    // Commas continue the lists of a command line's comma list.
    auto listed = parseWhatIfPolicies(
        std::vector<std::string>{"layers:0,1+save:matmul,aten::_softmax@2,3+opt-in-bwd,block"});
    ASSERT_TRUE(listed.ok()) << listed.message();
    ASSERT_EQ(listed->size(), 2u);
    EXPECT_EQ((*listed)[0].name, "layers:0,1+save:matmul,aten::_softmax@2,3+opt-in-bwd");
    EXPECT_EQ((*listed)[0].policy.save_op_names, (std::vector<std::string>{"aten::_softmax"}));
    EXPECT_EQ((*listed)[1].name, "block");
    for (const char* bad : {"layers:1+save:matmul@1", "layers:1+layers:2", "layers:1+block",
                            "save:matmul@", "save:bogus@1", "layers:0+opt-in-bwd+opt-in-bwd"}) {
        auto r = parseWhatIfPolicy(bad);
        EXPECT_FALSE(r.ok()) << bad;
        if (!r.ok()) {
            EXPECT_NE(r.message().find(bad), std::string::npos) << r.message();
        }
    }
}

TEST(WhatIfMixes, AMixOfEveryLayerIsTheUniformPolicy) {
    const Opened o = open(transformerRun({Ops::Recorded}));
    const WhatIfReport r =
        predict(o, {"layers:0-3", "block", "save:aten::addmm@0-3", "save:aten::addmm"});
    ASSERT_EQ(r.rows.size(), 5u);
    for (size_t mix : {1u, 3u}) {
        ASSERT_FALSE(r.rows[mix].refused) << *r.rows[mix].refused;
        ASSERT_FALSE(r.rows[mix + 1].refused) << *r.rows[mix + 1].refused;
        EXPECT_EQ(r.rows[mix].peak_bytes, r.rows[mix + 1].peak_bytes);
        EXPECT_EQ(r.rows[mix].recompute_ns, r.rows[mix + 1].recompute_ns);
        for (int64_t x = kT0; x < kT0 + 2 * kStepLen; x += 25)
            EXPECT_EQ(liveAt(*r.rows[mix].timeline, x), liveAt(*r.rows[mix + 1].timeline, x))
                << r.rows[mix].policy << " at " << x;
    }
}

TEST(WhatIfMixes, EachLayerIsCheckpointedAsItsChoiceSays) {
    const Opened o = open(transformerRun({Ops::Recorded}));
    const WhatIfReport r =
        predict(o, {"layers:0,1+save:aten::addmm@2,3", "block", "save:aten::addmm"});
    ASSERT_EQ(r.rows.size(), 4u);
    ASSERT_FALSE(r.rows[1].refused) << *r.rows[1].refused;
    // Layer 0 frees what block frees; layer 2 only what the save list frees.
    const int64_t layer2 = kLayer0 + 2000;
    EXPECT_EQ(freedAt(o, r.rows[1], kLayer0 + 850), freedAt(o, r.rows[2], kLayer0 + 850));
    EXPECT_EQ(freedAt(o, r.rows[1], layer2 + 850) - freedAt(o, r.rows[1], layer2 - 50),
              freedAt(o, r.rows[3], layer2 + 850) - freedAt(o, r.rows[3], layer2 - 50));
    // Two layers recomputed whole (800), two without their addmms (4 of 50).
    EXPECT_EQ(r.rows[1].recompute_ns, 2 * 800 + 2 * (800 - 4 * 50));
    EXPECT_LT(r.rows[1].peak_bytes, r.rows[3].peak_bytes);
    EXPECT_GT(r.rows[1].peak_bytes, r.rows[2].peak_bytes);
}

TEST(WhatIfMixes, PolicyModulesNameTheModulesToWrap) {
    const Trace run = transformerRun({Ops::Recorded});
    auto mix = policyModules(*parseWhatIfPolicy("layers:0+save:matmul@1-3+opt-in-bwd"), run);
    ASSERT_TRUE(mix.ok()) << mix.message();
    ASSERT_EQ(mix->modules.size(), 4u);
    for (size_t k = 0; k < 4; ++k) {
        EXPECT_EQ(mix->modules[k].root, "GPT");
        EXPECT_EQ(mix->modules[k].path, "h." + std::to_string(k));
        EXPECT_EQ(mix->modules[k].type, "Block");
        EXPECT_EQ(mix->modules[k].save_ops.empty(), k == 0) << k;
    }
    const auto& save = mix->modules[1].save_ops;
    EXPECT_NE(std::find(save.begin(), save.end(), "aten::addmm"), save.end());
    EXPECT_EQ(std::find(save.begin(), save.end(), "aten::matmul"), save.end());
    EXPECT_TRUE(mix->optimizer_in_backward);
    EXPECT_FALSE(mix->reentrant);

    auto by_class = policyModules(*parseWhatIfPolicy("module:Block"), run);
    ASSERT_TRUE(by_class.ok()) << by_class.message();
    EXPECT_EQ(by_class->modules.size(), 4u);
    auto optimizer = policyModules(*parseWhatIfPolicy("opt-in-bwd"), run);
    ASSERT_TRUE(optimizer.ok());
    EXPECT_TRUE(optimizer->modules.empty());
    EXPECT_TRUE(optimizer->optimizer_in_backward);
    // Several layers as one region, and the attention core, are no module.
    for (const char* refused : {"sqrt", "uniform:2", "selective", "module:Nope"}) {
        auto r = policyModules(*parseWhatIfPolicy(refused), run);
        EXPECT_FALSE(r.ok()) << refused;
    }
    // The chain's container is no nn.Sequential (no module holds the layers).
    EXPECT_FALSE(policyModules(*parseWhatIfPolicy("sequential:2"), run).ok());
}

}  // namespace
}  // namespace memscope
