// The what-if simulator on a full-save run built by hand
// (testutil::layeredFullSaveRun), so that what each policy must change is known.
#include "memscope/whatif/whatif.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "../analysis_test_util.h"
#include "memscope/format/native_format.h"
#include "memscope/open/open_run.h"
#include "memscope/report/whatif_report.h"
#include "memscope/whatif/op_labels.h"
#include "whatif_test_util.h"

namespace memscope {
namespace {

using testutil::kLayers;
constexpr int64_t kStepLen = testutil::kLayeredStepLen;
constexpr int64_t kT0 = testutil::kLayeredT0;

Trace fullSaveRun(int steps = 2, const std::string& policy = "full") {
    return testutil::layeredFullSaveRun(steps, policy);
}

using testutil::liveAt;
using testutil::open;
using testutil::Opened;
using testutil::predict;

TEST(WhatIfPolicies, ParsesLayerListsAndComposedPolicies) {
    auto p = parseWhatIfPolicies(std::vector<std::string>{"layers:0,2,4", "block,sqrt+opt-in-bwd"});
    ASSERT_TRUE(p.ok()) << p.message();
    ASSERT_EQ(p->size(), 3u);
    EXPECT_EQ((*p)[0].name, "layers:0,2,4");
    EXPECT_EQ((*p)[0].layers, (std::vector<int64_t>{0, 2, 4}));
    EXPECT_EQ((*p)[1].name, "block");
    EXPECT_EQ((*p)[2].name, "sqrt+opt-in-bwd");
    auto range = parseWhatIfPolicy("layers:1-3+opt-in-bwd");
    ASSERT_TRUE(range.ok()) << range.message();
    EXPECT_EQ(range->layers, (std::vector<int64_t>{1, 2, 3}));
    EXPECT_TRUE(range->policy.optimizer_in_backward);
    for (const char* bad : {"layers:", "layers:x", "layers:3-1", "layers:0+block", "nonsense"})
        EXPECT_FALSE(parseWhatIfPolicy(bad).ok()) << bad;
    EXPECT_FALSE(parseWhatIfPolicies(std::vector<std::string>{"sweep"}).ok());
}

TEST(WhatIfLayers, FindsTheChainOfNumberedSiblings) {
    const Opened o = open(fullSaveRun());
    auto chain = findLayerChain(*o.trace, 0);
    ASSERT_TRUE(chain.ok()) << chain.message();
    ASSERT_EQ(chain->layers.size(), size_t(kLayers));
    EXPECT_EQ(chain->layers[2].name, "h.2");
    EXPECT_EQ(chain->source, ModuleSource::Recorded);
    ASSERT_EQ(chain->steps.size(), 2u);
    ASSERT_EQ(chain->layers[0].runs.size(), 2u);
    EXPECT_EQ(chain->layers[0].runs[1].forward_start, kT0 + kStepLen + 100);

    Trace bare = fullSaveRun();
    bare.modules = ModuleTable{};
    EXPECT_FALSE(findLayerChain(bare, 0).ok());
}

TEST(WhatIf, BlockFreesWhatEachLayerSavedAndReplaysItInBackward) {
    const Opened o = open(fullSaveRun());
    const WhatIfReport r = predict(o, {"block"});
    ASSERT_EQ(r.rows.size(), 2u);
    const WhatIfRow& block = r.rows[1];
    ASSERT_FALSE(block.refused) << *block.refused;
    ASSERT_TRUE(block.trace);
    ASSERT_TRUE(block.trace->prediction);
    EXPECT_EQ(block.trace->prediction->policy, "block");
    EXPECT_EQ(block.trace->metadata.name, "block (predicted)");
    EXPECT_FALSE(block.assumptions.empty());

    // At the end of the measured forward: parameters, 4 x (1000 saved + 100
    // output), the head's 50 (and from step 1 on the state). Predicted: the
    // saved bytes are gone; only the outputs are kept.
    const int64_t measured_end = liveAt(*o.timeline, kT0 + 3999);
    const int64_t predicted_end = liveAt(*block.timeline, kT0 + 3999);
    EXPECT_EQ(measured_end - predicted_end, kLayers * 1000);

    // One recompute phase per layer and step, each the layer's forward time.
    int recomputes = 0;
    for (const Phase& p : block.trace->phases)
        if (p.kind == PhaseKind::Recompute) {
            ++recomputes;
            EXPECT_EQ(p.end - p.start, 800);
        }
    EXPECT_EQ(recomputes, 2 * kLayers);
    EXPECT_EQ(block.recompute_ns, kLayers * 800);
    EXPECT_NEAR(block.step_time_ratio, (9000.0 + kLayers * 800) / 9000.0, 1e-9);
    ASSERT_TRUE(block.trace->metrics);
    EXPECT_EQ(block.trace->metrics->step_ns[0], 9000 + kLayers * 800);

    // Events stay in time order, and every predicted allocation is freed.
    int64_t last = INT64_MIN;
    for (const Event& e : block.trace->events) {
        EXPECT_GE(e.time, last);
        last = e.time;
    }
    EXPECT_EQ(block.timeline->device(0)->live.ys().back(), o.timeline->device(0)->live.ys().back());

    // The peak: full-save peaks at the end of forward with everything saved;
    // block at most one layer's saved bytes in backward beyond the outputs.
    EXPECT_LT(block.peak_bytes, r.rows[0].peak_bytes);
    EXPECT_EQ(block.delta_bytes, block.peak_bytes - r.rows[0].peak_bytes);
}

TEST(WhatIf, CheckpointStyleDecidesHowLongTheRecomputedOutputLives) {
    const Opened o = open(fullSaveRun());
    auto policies = parseWhatIfPolicies(std::vector<std::string>{"block"});
    ASSERT_TRUE(policies.ok());
    auto predictWith = [&](CheckpointStyle style) {
        WhatIfOptions options;
        options.keep_traces = true;
        options.checkpoint_style = style;
        auto r = whatIf(*o.trace, *o.timeline, "full.memscope", *policies, options);
        EXPECT_TRUE(r.ok()) << r.message();
        return std::move(r->rows[1]);
    };
    const WhatIfRow reentrant = predictWith(CheckpointStyle::Reentrant);
    const WhatIfRow plain = predictWith(CheckpointStyle::NonReentrant);
    // A hand-built run has no memscope-train model: auto is non-reentrant.
    EXPECT_EQ(predictWith(CheckpointStyle::Auto).peak_bytes, plain.peak_bytes);
    ASSERT_TRUE(reentrant.timeline && plain.timeline);
    // Right after each recompute the reentrant checkpoint still holds the
    // recomputed 100 B output; the non-reentrant one has freed it.
    int compared = 0;
    for (const Phase& p : plain.trace->phases) {
        if (p.kind != PhaseKind::Recompute || p.step != 0) continue;
        const Phase* same = nullptr;
        for (const Phase& q : reentrant.trace->phases)
            if (q.kind == PhaseKind::Recompute && q.name == p.name && q.step == p.step) same = &q;
        ASSERT_TRUE(same);
        EXPECT_EQ(liveAt(*reentrant.timeline, same->end) - liveAt(*plain.timeline, p.end), 100)
            << plain.trace->string(p.name);
        ++compared;
    }
    EXPECT_EQ(compared, kLayers);
    EXPECT_LE(plain.peak_bytes, reentrant.peak_bytes);
    auto says = [](const WhatIfRow& row, std::string_view what) {
        for (const std::string& a : row.assumptions)
            if (a.find(what) != std::string::npos) return true;
        return false;
    };
    EXPECT_TRUE(says(reentrant, "use_reentrant=True"));
    EXPECT_TRUE(says(plain, "use_reentrant=False"));
}

TEST(WhatIf, LayerListsCheckpointOnlyTheLayersNamed) {
    const Opened o = open(fullSaveRun());
    const WhatIfReport r = predict(o, {"layers:0,2", "layers:7"});
    const WhatIfRow& two = r.rows[1];
    ASSERT_FALSE(two.refused);
    EXPECT_EQ(liveAt(*o.timeline, kT0 + 3999) - liveAt(*two.timeline, kT0 + 3999), 2 * 1000);
    EXPECT_EQ(two.recompute_ns, 2 * 800);
    ASSERT_TRUE(r.rows[2].refused);
    EXPECT_NE(r.rows[2].refused->find("no layer 7"), std::string::npos) << *r.rows[2].refused;
}

std::vector<std::string> recomputePhases(const WhatIfRow& row, int step) {
    std::vector<std::string> out;
    for (const Phase& p : row.trace->phases)
        if (p.kind == PhaseKind::Recompute && p.start >= kT0 + step * kStepLen &&
            p.start < kT0 + (step + 1) * kStepLen)
            out.push_back(std::string(row.trace->string(p.name)));
    std::sort(out.begin(), out.end());
    return out;
}

TEST(WhatIf, FrameworkNamesCheckpointTheLayersTheyName) {
    const Opened o = open(fullSaveRun());
    const WhatIfReport r = predict(o, {"every:2", "first:1", "uniform:3", "sequential:2",
                                       "module:Block", "block", "every:5", "module:Nope"});
    ASSERT_EQ(r.rows.size(), 9u);
    const int64_t measured_end = liveAt(*o.timeline, kT0 + 3999);
    auto saved = [&](const WhatIfRow& row) {
        EXPECT_FALSE(row.refused) << row.policy << ": " << *row.refused;
        return row.refused ? 0 : measured_end - liveAt(*row.timeline, kT0 + 3999);
    };
    // every:2 of 4 layers: h.1 and h.3, as torchtitan wraps them.
    EXPECT_EQ(saved(r.rows[1]), 2 * 1000);
    EXPECT_EQ(recomputePhases(r.rows[1], 0),
              (std::vector<std::string>{"recompute h.1", "recompute h.3"}));
    EXPECT_EQ(r.rows[1].recompute_ns, 2 * 800);
    // first:1: h.0 alone.
    EXPECT_EQ(saved(r.rows[2]), 1000);
    EXPECT_EQ(recomputePhases(r.rows[2], 1), (std::vector<std::string>{"recompute h.0"}));
    // uniform:3: h.0–h.2 as one region, then h.3 (the short last chunk).
    EXPECT_EQ(recomputePhases(r.rows[3], 0),
              (std::vector<std::string>{"recompute h.0–h.2", "recompute h.3"}));
    EXPECT_EQ(r.rows[3].recompute_ns, 2800 + 800);
    // sequential:2: segment size 2, h.0–h.1 checkpointed, h.2 and h.3 not.
    EXPECT_EQ(recomputePhases(r.rows[4], 0), (std::vector<std::string>{"recompute h.0–h.1"}));
    EXPECT_EQ(r.rows[4].recompute_ns, 1800);
    EXPECT_GE(saved(r.rows[4]), 2 * 1000);
    // module:Block is block here: each layer's calls.
    ASSERT_FALSE(r.rows[5].refused);
    EXPECT_EQ(r.rows[5].peak_bytes, r.rows[6].peak_bytes);
    EXPECT_EQ(r.rows[5].recompute_ns, r.rows[6].recompute_ns);
    // Arguments the chain cannot take, and classes it has not, are refused.
    ASSERT_TRUE(r.rows[7].refused);
    EXPECT_NE(r.rows[7].refused->find("the chain has 4 layers"), std::string::npos)
        << *r.rows[7].refused;
    ASSERT_TRUE(r.rows[8].refused);
    EXPECT_NE(r.rows[8].refused->find("Block (4)"), std::string::npos) << *r.rows[8].refused;
}

TEST(WhatIf, ModuleClassNeedsNoChainOfLayers) {
    // The same run, its layers named a, b, c, d: no chain, but their class.
    Trace t = fullSaveRun();
    const char* names[] = {"a", "b", "c", "d"};
    for (size_t i = 0; i < t.modules.modules.size(); ++i)
        if (!t.modules.modules[i].type.isNull())
            t.modules.modules[i].path = t.internString(names[i % 4]);
    const Opened o = open(std::move(t));
    const WhatIfReport r = predict(o, {"block", "module:Block+opt-in-bwd"});
    EXPECT_FALSE(r.chain);
    ASSERT_TRUE(r.rows[1].refused);
    ASSERT_FALSE(r.rows[2].refused) << *r.rows[2].refused;
    EXPECT_EQ(r.rows[2].policy, "module:Block+opt-in-bwd");
    EXPECT_EQ(r.rows[2].recompute_ns, kLayers * 800);
}

TEST(WhatIf, OptimizerInBackwardFreesGradientsAndMovesTheState) {
    const Opened o = open(fullSaveRun());
    const WhatIfReport r = predict(o, {"opt-in-bwd"});
    const WhatIfRow& w = r.rows[1];
    ASSERT_FALSE(w.refused) << *w.refused;
    const DeviceTimeline& d = *w.timeline->device(0);
    // No gradient is alive at the end of any backward.
    const auto& grads = d.live_by_category[size_t(index(Category::Gradient))];
    EXPECT_EQ(grads.valueAt(kT0 + 7999), 0);
    EXPECT_EQ(o.timeline->device(0)->live_by_category[size_t(index(Category::Gradient))].valueAt(
                  kT0 + 7999),
              kLayers * 300);
    // The optimizer state is whole by the end of the first backward.
    const auto& state = d.live_by_category[size_t(index(Category::OptimizerState))];
    EXPECT_EQ(state.valueAt(kT0 + 7999), 2 * kLayers * 300);
    // The optimizer's 1200 B scratch is gone from the optimizer phase.
    ASSERT_TRUE(w.peaks_by_phase[size_t(index(TrainingPhase::Optimizer))]);
    EXPECT_LT(*w.peaks_by_phase[size_t(index(TrainingPhase::Optimizer))],
              *r.rows[0].peaks_by_phase[size_t(index(TrainingPhase::Optimizer))]);
}

TEST(WhatIf, RefusesWhatTheTraceCannotSupport) {
    const Opened o = open(fullSaveRun());
    const WhatIfReport r = predict(o, {"save:matmul", "selective", "segments:9"});
    for (size_t i = 1; i < r.rows.size(); ++i) EXPECT_TRUE(r.rows[i].refused) << r.rows[i].policy;
    const Opened blocked = open(fullSaveRun(2, "block"));
    const WhatIfReport b = predict(blocked, {"block"});
    ASSERT_TRUE(b.rows[1].refused);
    EXPECT_NE(b.rows[1].refused->find("full-save"), std::string::npos);
    // A prediction is not predicted from again.
    const WhatIfReport first = predict(o, {"block"});
    auto again = whatIf(*first.rows[1].trace, *first.rows[1].timeline, "x", {});
    EXPECT_FALSE(again.ok());
}

TEST(WhatIf, DefaultsToEverySweepPolicyTheLayersAllowAndMarksTheFrontier) {
    const Opened o = open(fullSaveRun());
    auto r = whatIf(*o.trace, *o.timeline, "full.memscope", {});
    ASSERT_TRUE(r.ok()) << r.message();
    std::vector<std::string> names;
    for (const WhatIfRow& row : r->rows) names.push_back(row.policy);
    EXPECT_EQ(names.front(), "full (measured)");
    EXPECT_NE(std::find(names.begin(), names.end(), "segments:4"), names.end());
    EXPECT_NE(std::find(names.begin(), names.end(), "block+opt-in-bwd"), names.end());
    bool any_frontier = false;
    for (const WhatIfRow& row : r->rows) any_frontier |= row.on_frontier;
    EXPECT_TRUE(any_frontier);
    const std::string json = whatIfJson(*r, whatIfBudget(*r, 1 << 20), {});
    EXPECT_NE(json.find("\"measured_policy\": \"full\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"source\": \"recorded\""), std::string::npos);
    EXPECT_NE(json.find("\"budget\""), std::string::npos);
    const std::string text = whatIfText(*r, std::nullopt);
    EXPECT_NE(text.find("block (predicted)"), std::string::npos) << text;
}

TEST(WhatIf, PredictedRunsKeepTheirProvenanceInTheNativeFormat) {
    const Opened o = open(fullSaveRun());
    const WhatIfReport r = predict(o, {"block+opt-in-bwd"});
    const auto path = std::filesystem::temp_directory_path() /
                      ("memscope-whatif-" + std::to_string(::getpid()) + ".memscope");
    ASSERT_TRUE(writeNativeTrace(*r.rows[1].trace, path.string()).ok());
    auto back = importNativeTrace(path.string());
    std::filesystem::remove(path);
    ASSERT_TRUE(back.ok()) << back.message();
    ASSERT_TRUE(back->prediction);
    EXPECT_EQ(*back->prediction, *r.rows[1].trace->prediction);
    EXPECT_EQ(back->prediction->policy, "block+opt-in-bwd");
    EXPECT_EQ(back->prediction->layers_source, "recorded");
    EXPECT_EQ(back->metadata.name, "block+opt-in-bwd (predicted)");
}

TEST(WhatIfOpLabels, OpPhasesNameTheOpsOfAllocations) {
    EXPECT_EQ(opKindOfPhaseName("matmul"), uint32_t(kSaveMatmul));
    EXPECT_EQ(opKindOfPhaseName("step 2 / forward / block 3 / attention"),
              uint32_t(kSaveAttention));
    EXPECT_EQ(opKindOfPhaseName("block 3"), 0u);
    EXPECT_EQ(opKindOfPhaseName("step 1 / matmul x"), 0u);
    Trace t = fullSaveRun(1);
    EXPECT_FALSE(hasOpLabels(t));
    Phase block;
    block.kind = PhaseKind::Block;
    block.name = t.internString("step 0 / forward / block 0");
    const PhaseId b = t.addPhase(block);
    Phase op;
    op.kind = PhaseKind::Range;
    op.name = t.internString("step 0 / forward / block 0 / matmul");
    op.parent = b;
    const PhaseId m = t.addPhase(op);
    EXPECT_TRUE(hasOpLabels(t));
    EXPECT_EQ(opKindsAt(t, m), uint32_t(kSaveMatmul));
    EXPECT_EQ(opKindsAt(t, b), 0u);
    // An inferred phase is no producer's label.
    t.phases[m.value - 1].inferred = true;
    EXPECT_FALSE(hasOpLabels(t));
}

TEST(WhatIfBudget, JudgesReservedMemoryAndSkipsRunsTheCappedAllocatorFails) {
    const Opened o = open(testutil::layeredFullSaveRun());
    const auto policies = parseWhatIfPolicies(std::vector<std::string>{"block"});
    ASSERT_TRUE(policies.ok());
    auto free = whatIf(*o.trace, *o.timeline, "full", *policies);
    ASSERT_TRUE(free.ok()) << free.message();
    ASSERT_TRUE(free->rows[0].allocator && free->rows[1].allocator);
    const WhatIfBudget roomy = whatIfBudget(*free, int64_t(1) << 30);
    EXPECT_TRUE(roomy.by_reserved);
    EXPECT_EQ(roomy.points.size(), 2u);
    EXPECT_EQ(roomy.points[0].peak_bytes, int64_t(free->rows[0].allocator->reserved_peak_bytes));
    EXPECT_NE(roomy.line.find("of reserved memory"), std::string::npos) << roomy.line;

    WhatIfOptions capped;
    capped.device_capacity = 1;  // no segment fits: every run fails
    auto tight = whatIf(*o.trace, *o.timeline, "full", *policies, capped);
    ASSERT_TRUE(tight.ok()) << tight.message();
    ASSERT_TRUE(tight->rows[1].allocator && tight->rows[1].allocator->failure);
    const WhatIfBudget none = whatIfBudget(*tight, int64_t(1) << 30);
    EXPECT_TRUE(none.points.empty());
    EXPECT_FALSE(none.answer.choice);
}

}  // namespace
}  // namespace memscope
