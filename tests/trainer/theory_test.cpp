// The recorded traces against the theory (REFERENCES.md §4): Korthikanti et
// al.'s activation bytes per gpt layer, the optimizer-in-backward gradient and
// peak claims, and block checkpointing's O(blocks) -> one block + inputs.

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>

#include "memscope/analysis/activation_theory.h"
#include "test_util.h"

using namespace memscope;
using namespace memscope::trainer;
using namespace memscope::trainer::test;

namespace {

// Mean activation bytes per layer alive at the end of the forward pass,
// attributed to the layer that allocated them (each layer's output is the next
// layer's saved input, so this counts exactly one input per layer).
double perLayer(const LoadedTrace& t, int64_t layers, int step) {
    const auto by_block = activationByBlockAtForwardEnd(t, step);
    double sum = 0;
    for (int64_t i = 0; i < layers; ++i) {
        auto it = by_block.find(static_cast<int>(i));
        sum += it == by_block.end() ? 0.0 : static_cast<double>(it->second);
    }
    return sum / static_cast<double>(layers);
}

// The measured bytes are the formula plus exactly LayerNorm's statistics (mean
// and rstd, one value per token each, per norm, in the activation dtype on
// CPU), which the formula ignores; the whole-block policy keeps no norm state.
void checkGptLayers(DType dtype) {
    const ModelConfig m = smallGpt(dtype);
    const double ln_stats = 2.0 * 2.0 * static_cast<double>(m.seq * m.batch * dtypeBytes(dtype));
    for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Block}) {
        const Policy p{r, false};
        auto rec = record(trainConfig(m, 1), p, std::string(dtypeName(dtype)));
        ASSERT_TRUE(rec);
        const double measured = perLayer(rec->trace, m.layers, 0);
        const double formula = gptLayerFormula(m, r);
        const double ratio = measured / formula;
        std::cout << "[theory] gpt " << dtypeName(dtype) << " " << policyName(p) << ": measured "
                  << measured << " B/layer, formula " << formula << " B/layer, ratio " << ratio
                  << "\n";
        ::testing::Test::RecordProperty(
            std::string(dtypeName(dtype)) + "_" + policyName(p) + "_ratio", std::to_string(ratio));
        EXPECT_EQ(measured, formula + (r == Recompute::Block ? 0.0 : ln_stats)) << policyName(p);
        // What `memscope-cli summary` and the GUI's theory charts show: core's
        // comparison of the same trace, with the same numbers.
        auto theory = activationTheory(*rec->trace.trace, *rec->trace.device);
        ASSERT_TRUE(theory.ok()) << theory.message();
        ASSERT_TRUE(theory->predicted_total) << policyName(p);
        EXPECT_EQ(theory->step, 0);
        EXPECT_DOUBLE_EQ(*theory->predicted_total, formula * static_cast<double>(m.layers));
        EXPECT_DOUBLE_EQ(static_cast<double>(theory->measured_total),
                         measured * static_cast<double>(m.layers));
    }
}

int64_t parameterBytes(const LoadedTrace& t) {
    return liveAt(t, Category::Parameter, t.device->end);
}

}  // namespace

TEST(TrainerTheory, GptFp32ActivationsPerLayer) {
    checkGptLayers(DType::Float32);
}

TEST(TrainerTheory, GptBf16ActivationsPerLayer) {
    checkGptLayers(DType::BFloat16);
}

TEST(TrainerTheory, OptimizerInBackwardNeverHoldsAllGradients) {
    // Parameters dominate this configuration, so without the in-backward step
    // the peak is the optimizer step (gradients + foreach scratch).
    ModelConfig m = smallMlp(4);
    m.hidden = 128, m.seq = 8, m.batch = 2;
    const TrainConfig c = trainConfig(m, 2);
    auto full_run = record(c, full(), "optbwd");
    auto bwd_run = record(c, optInBwd(), "optbwd");
    ASSERT_TRUE(full_run && bwd_run);

    const int64_t params = parameterBytes(full_run->trace);
    // fc1's weight and bias: one backward node (addmm) produces both gradients
    // together, so both exist while the first one is being applied.
    const int64_t one_layer = 4 * (4 * m.hidden * m.hidden + 4 * m.hidden);
    EXPECT_EQ(maxLive(full_run->trace, Category::Gradient), params)
        << "full: all gradients exist at once before the step";
    const int64_t bwd_grads = maxLive(bwd_run->trace, Category::Gradient);
    std::cout << "[theory] mlp opt-in-bwd: max gradient bytes " << bwd_grads << " of " << params
              << " parameter bytes\n";
    EXPECT_LE(bwd_grads, one_layer) << "at most one layer's gradients are alive at a time";
    EXPECT_LT(bwd_grads, params / 4);

    const PeakInfo full_peak = peakOf(full_run->trace);
    const PeakInfo bwd_peak = peakOf(bwd_run->trace);
    std::cout << "[theory] peak full: " << full_peak.bytes << " in '" << full_peak.phase
              << "'; opt-in-bwd: " << bwd_peak.bytes << " in '" << bwd_peak.phase << "'\n";
    EXPECT_EQ(full_peak.kind, PhaseKind::Optimizer);
    EXPECT_LT(bwd_peak.bytes, full_peak.bytes);
    // The in-backward peak lies in backward, at its start: no more than one
    // block's activations have been released yet.
    const Trace& trace = *bwd_run->trace.trace;
    const PhaseId peak_phase = bwd_run->trace.device->peak.phase;
    const Phase* ph = trace.phase(peak_phase);
    ASSERT_NE(ph, nullptr);
    auto backward = findPhase(trace, PhaseKind::Backward, ph->step);
    ASSERT_TRUE(backward);
    EXPECT_TRUE(phaseWithin(trace, peak_phase, *backward)) << bwd_peak.phase;
    const auto by_block = activationByBlockAtForwardEnd(bwd_run->trace, ph->step);
    int64_t at_forward_end = 0, one_block = 0;
    for (const auto& [b, bytes] : by_block) {
        at_forward_end += bytes;
        if (b >= 0) one_block = std::max(one_block, bytes);
    }
    EXPECT_GE(bwd_peak.by_category[index(Category::Activation)], at_forward_end - one_block);
}

TEST(TrainerTheory, BlockCheckpointingOnMlpKeepsOneBlockPlusInputs) {
    int64_t full_prev = 0, full_per_block = 0;
    for (int64_t layers : {2, 4, 8}) {
        const ModelConfig m = smallMlp(layers);
        const TrainConfig c = trainConfig(m, 1);
        auto f = record(c, full(), "mlpblock");
        auto b = record(c, block(), "mlpblock");
        ASSERT_TRUE(f && b);
        const auto f_blocks = activationByBlockAtForwardEnd(f->trace, 0);
        const auto b_blocks = activationByBlockAtForwardEnd(b->trace, 0);
        int64_t f_total = 0, b_total = 0;
        for (const auto& [k, v] : f_blocks) f_total += v;
        for (const auto& [k, v] : b_blocks) b_total += v;
        full_per_block = f_blocks.at(0);
        const int64_t input = m.seq * m.batch * m.hidden * 4;  // one block input, fp32
        const int64_t outside = b_blocks.count(-1) ? b_blocks.at(-1) : 0;
        // Full grows by a whole block's activations per block; block keeps the
        // inputs at the end of forward...
        if (full_prev) {
            const double growth = static_cast<double>(f_total - full_prev) / (layers / 2.0);
            EXPECT_NEAR(growth, static_cast<double>(full_per_block), 0.01 * full_per_block);
        }
        full_prev = f_total;
        EXPECT_EQ(b_total - outside, layers * input);
        // ...and at most one block's activations on top of them in backward.
        const int64_t peak_act = maxLive(b->trace, Category::Activation);
        std::cout << "[theory] mlp L=" << layers << ": full activations " << f_total
                  << " B, block activations at forward end " << b_total
                  << " B, block max activations " << peak_act << " B (one block " << full_per_block
                  << " B, inputs " << layers * input << " B)\n";
        EXPECT_LE(peak_act, layers * input + outside + full_per_block);
        EXPECT_LT(peak_act, f_total);
    }
}

TEST(TrainerTheory, TraceIsLabelled) {
    const TrainConfig c = trainConfig(smallGpt(), 2);
    auto rec = record(c, block(), "labels");
    ASSERT_TRUE(rec);
    const Trace& t = *rec->trace.trace;
    EXPECT_EQ(rec->run.counts.unmatched_frees, 0u);
    ASSERT_NE(t.metadata.property("device"), nullptr);
    EXPECT_EQ(*t.metadata.property("device"), "cpu");
    ASSERT_TRUE(t.metrics.has_value());
    EXPECT_EQ(t.metrics->policy, "block");
    EXPECT_EQ(t.metrics->step_ns.size(), 2u);
    EXPECT_EQ(t.metrics->recompute_ns.size(), 2u);
    for (const Event& e : t.events) {
        ASSERT_EQ(e.device, 0);
        ASSERT_FALSE(e.phase.isNull());
        ASSERT_NE(e.category, Category::Unknown);
        ASSERT_NE(e.address, 0u);
        ASSERT_GT(e.size, 0u);
    }
    for (PhaseKind k : {PhaseKind::Step, PhaseKind::Forward, PhaseKind::Backward,
                        PhaseKind::Optimizer, PhaseKind::Block, PhaseKind::Recompute})
        EXPECT_TRUE(findPhase(t, k, 1)) << static_cast<int>(k);
    // Every category the trainer knows appears.
    std::array<bool, kCategoryCount> seen{};
    for (const Event& e : t.events) seen[index(e.category)] = true;
    for (Category cat : {Category::Parameter, Category::Gradient, Category::OptimizerState,
                         Category::Input, Category::Activation, Category::Temporary})
        EXPECT_TRUE(seen[index(cat)]) << toString(cat);
    // Nothing leaks across steps: at the end only parameters and Adam's state.
    const int64_t end = rec->trace.device->end;
    EXPECT_EQ(liveAt(rec->trace, Category::Activation, end), 0);
    EXPECT_EQ(liveAt(rec->trace, Category::Gradient, end), 0);
    EXPECT_EQ(liveAt(rec->trace, Category::Temporary, end), 0);
}

// What the literature's policies keep at the end of forward, block by block
// (mlp, fp32, N = s·b tokens of width d): a checkpointed block or segment
// keeps only its output (the next one's input, N·d·4 bytes); save:matmul also
// keeps fc1's and fc2's outputs (N·4d·4 + N·d·4); sqrt (5 blocks: segments
// 0-2 and 3-4) keeps the outputs of blocks 2 and 4 only.
TEST(TrainerTheory, LiteraturePoliciesKeepWhatTheySay) {
    const ModelConfig m = smallMlp(5);
    const int64_t nd4 = m.seq * m.batch * m.hidden * 4;
    auto kept = [&](const char* name) {
        const Policy p = parsePolicies(name)->front();
        auto rec = record(trainConfig(m, 1), p, "kept");
        std::map<int, int64_t> by_block;
        if (!rec) return by_block;
        for (const auto& [block, bytes] : activationByBlockAtForwardEnd(rec->trace, 0))
            if (block >= 0 && bytes != 0) by_block[block] = bytes;
        return by_block;
    };
    const std::map<int, int64_t> one_each{{0, nd4}, {1, nd4}, {2, nd4}, {3, nd4}, {4, nd4}};
    EXPECT_EQ(kept("block"), one_each);
    EXPECT_EQ(kept("save:none"), one_each);
    std::map<int, int64_t> matmul;
    for (int i = 0; i < 5; ++i) matmul[i] = nd4 + 4 * nd4 + nd4;
    EXPECT_EQ(kept("save:matmul"), matmul);
    EXPECT_EQ(kept("sqrt"), (std::map<int, int64_t>{{2, nd4}, {4, nd4}}));
    // Core's prediction for them (Chen et al.'s checkpoints, a block's input)
    // is what they keep, layer by layer.
    for (const char* name : {"block", "save:none", "sqrt"}) {
        auto rec = record(trainConfig(m, 1), parsePolicies(name)->front(), "kept");
        ASSERT_TRUE(rec) << name;
        auto theory = activationTheory(*rec->trace.trace, *rec->trace.device);
        ASSERT_TRUE(theory.ok()) << name << ": " << theory.message();
        ASSERT_TRUE(theory->ratio()) << name;
        EXPECT_DOUBLE_EQ(*theory->ratio(), 1.0) << name;
        for (const LayerActivation& l : theory->layers)
            EXPECT_EQ(static_cast<double>(l.measured), l.predicted.value_or(-1))
                << name << " layer " << l.layer;
    }
}
