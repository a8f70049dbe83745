// Theory next to measurement (activation_theory.h): per-layer activation
// bytes of a hand-built labelled run against the formulas that the
// checkpointing policies' predictions follow.

#include "memscope/analysis/activation_theory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "../analysis_test_util.h"
#include "memscope/timeline/timeline.h"

using namespace memscope;
using namespace memscope::testutil;

namespace {

ModelShape gptShape(int layers, const char* dtype = "float32") {
    ModelShape m;
    m.name = "gpt";
    m.dtype = dtype;
    m.layers = layers;
    m.hidden = 64, m.heads = 4, m.seq = 32, m.batch = 2, m.vocab = 128, m.dropout = 0.1;
    return m;
}

// One step: a forward phase holding one Block phase per layer; layer i
// allocates `kept[i]` activation bytes (alive past forward) and a 64-byte
// activation freed inside forward; one more activation outside any layer.
Trace labelledRun(const ModelShape& shape, const std::string& policy,
                  const std::vector<uint64_t>& kept) {
    Trace t;
    t.metadata.name = "run";
    RunMetrics metrics;
    metrics.policy = policy;
    metrics.model = shape;
    metrics.step_ns = {1000};
    t.metrics = metrics;
    const int64_t t0 = 1'000'000;
    Phase step;
    step.name = t.internString("step 0");
    step.kind = PhaseKind::Step;
    step.step = 0;
    step.start = t0;
    step.end = t0 + 10'000;
    t.phases.push_back(step);
    const PhaseId step_id(1);
    Phase forward = step;
    forward.name = t.internString("step 0 / forward");
    forward.kind = PhaseKind::Forward;
    forward.parent = step_id;
    forward.end = t0 + 5'000;
    t.phases.push_back(forward);
    const PhaseId forward_id(2);
    int64_t time = t0 + 1;
    uint64_t address = 0x1000;
    t.events.push_back(event(time++, EventKind::Alloc, address, 512, Category::Activation,
                             forward_id));  // the embedding's output: no layer
    address += 0x1000;
    for (size_t i = 0; i < kept.size(); ++i) {
        Phase block = forward;
        block.name = t.internString("block " + std::to_string(i));
        block.kind = PhaseKind::Block;
        block.parent = forward_id;
        block.block = static_cast<int32_t>(i);
        t.phases.push_back(block);
        const PhaseId id(static_cast<uint32_t>(t.phases.size()));
        if (kept[i] > 0) {
            t.events.push_back(
                event(time++, EventKind::Alloc, address, kept[i], Category::Activation, id));
            address += 0x100000;
        }
        t.events.push_back(event(time++, EventKind::Alloc, address, 64, Category::Activation, id));
        t.events.push_back(
            event(time++, EventKind::FreeCompleted, address, 64, Category::Activation, id));
        address += 0x1000;
    }
    // Backward frees what forward kept, after forward's end.
    time = t0 + 6'000;
    for (const Event& e : std::vector<Event>(t.events))
        if (e.kind == EventKind::Alloc && e.size != 64)
            t.events.push_back(event(time++, EventKind::FreeCompleted, e.address, e.size,
                                     Category::Activation, step_id));
    return t;
}

ActivationTheory theoryOf(const Trace& t) {
    auto timeline = Timeline::build(t);
    EXPECT_TRUE(timeline.ok());
    auto theory = activationTheory(t, *timeline.value()->device(0));
    EXPECT_TRUE(theory.ok()) << theory.message();
    return theory.ok() ? theory.value() : ActivationTheory{};
}

}  // namespace

TEST(ActivationTheory, KorthikantiFormulasAsPublishedIn16Bit) {
    const ModelShape m = gptShape(2, "bfloat16");
    const double sbh = 32.0 * 2 * 64, as_over_h = 4.0 * 32 / 64;
    EXPECT_DOUBLE_EQ(gptLayerBytes(m, ActivationFormula::KorthikantiFull, 2),
                     sbh * (34 + 5 * as_over_h));
    EXPECT_DOUBLE_EQ(gptLayerBytes(m, ActivationFormula::KorthikantiSelective, 2), 34 * sbh);
    EXPECT_DOUBLE_EQ(gptLayerBytes(m, ActivationFormula::KorthikantiInput, 2), 2 * sbh);
    // fp32 doubles every term but the 1-byte masks (2sbh + as²b).
    const double masks = 2 * sbh + 4.0 * 32 * 32 * 2;
    EXPECT_DOUBLE_EQ(gptLayerBytes(m, ActivationFormula::KorthikantiFull, 4),
                     2 * (sbh * (34 + 5 * as_over_h) - masks) + masks);
    ModelShape no_dropout = m;
    no_dropout.dropout = 0;
    EXPECT_DOUBLE_EQ(gptLayerBytes(no_dropout, ActivationFormula::KorthikantiSelective, 2),
                     32 * sbh);
}

TEST(ActivationTheory, MeasuresEachLayerAgainstItsPrediction) {
    const ModelShape m = gptShape(3);
    const auto full =
        static_cast<uint64_t>(gptLayerBytes(m, ActivationFormula::KorthikantiFull, 4));
    const ActivationTheory t = theoryOf(labelledRun(m, "full", {full, full + 100, full}));
    ASSERT_EQ(t.layers.size(), 3u);
    EXPECT_EQ(t.step, 0);
    EXPECT_EQ(t.element_bytes, 4);
    EXPECT_EQ(t.main_formula, ActivationFormula::KorthikantiFull);
    EXPECT_EQ(t.layers[1].measured, int64_t(full + 100));  // the freed 64 B do not count
    EXPECT_EQ(t.outside_layers, 512);
    ASSERT_TRUE(t.predicted_total);
    EXPECT_DOUBLE_EQ(*t.predicted_total, 3.0 * double(full));
    EXPECT_DOUBLE_EQ(*t.ratio(), double(3 * full + 100) / double(3 * full));
}

TEST(ActivationTheory, ChenSegmentsPredictsInputsAtSegmentEnds) {
    // L = 5: segments of ceil(sqrt(5)) = 3 layers, [0, 3) and [3, 5); each
    // keeps its input, which the layer before produced.
    const ModelShape m = gptShape(5);
    const auto input = static_cast<uint64_t>(m.seq * m.batch * m.hidden * 4);
    const ActivationTheory t = theoryOf(labelledRun(m, "sqrt+opt-in-bwd", {0, 0, input, 0, input}));
    EXPECT_EQ(t.main_formula, ActivationFormula::ChenSegments);
    ASSERT_EQ(t.layers.size(), 5u);
    for (int i : {0, 1, 3}) EXPECT_EQ(t.layers[size_t(i)].predicted, 0.0) << i;
    for (int i : {2, 4}) EXPECT_EQ(t.layers[size_t(i)].predicted, double(input)) << i;
    EXPECT_DOUBLE_EQ(*t.ratio(), 1.0);
}

TEST(ActivationTheory, PoliciesWithoutAFormulaMeasureOnly) {
    // A save list keeps op outputs; mlp has no published per-layer formula
    // for its plain layers; checkpoint_sequential's last segment runs plain.
    ModelShape mlp = gptShape(4);
    mlp.name = "mlp";
    const ActivationTheory save = theoryOf(labelledRun(gptShape(2), "save:matmul", {100, 100}));
    EXPECT_EQ(save.main_formula, ActivationFormula::None);
    EXPECT_FALSE(save.predicted_total);
    EXPECT_EQ(save.measured_total, 200);
    const ActivationTheory segments = theoryOf(labelledRun(mlp, "segments:2", {0, 10, 50, 50}));
    EXPECT_EQ(segments.main_formula, ActivationFormula::ChenSegments);
    EXPECT_TRUE(segments.layers[1].predicted);
    EXPECT_FALSE(segments.layers[2].predicted);
    EXPECT_FALSE(segments.predicted_total);
}

TEST(ActivationTheory, SaysWhyATraceHasNoTheory) {
    Trace plain = labelledRun(gptShape(2), "full", {1, 1});
    plain.metrics.reset();
    auto timeline = Timeline::build(plain);
    ASSERT_TRUE(timeline.ok());
    const DeviceTimeline& tl = *timeline.value()->device(0);
    auto none = activationTheory(plain, tl);
    ASSERT_FALSE(none.ok());
    EXPECT_NE(none.message().find("memscope-train"), std::string::npos);
    Trace bad_policy = labelledRun(gptShape(2), "everything", {1, 1});
    EXPECT_NE(activationTheory(bad_policy, tl).message().find("everything"), std::string::npos);
    Trace bad_dtype = labelledRun(gptShape(2, "int8"), "full", {1, 1});
    EXPECT_NE(activationTheory(bad_dtype, tl).message().find("int8"), std::string::npos);
    Trace too_many = labelledRun(gptShape(2), "segments:3", {1, 1});
    EXPECT_FALSE(activationTheory(too_many, tl).ok());
    // A hostile file's model shape: an error, not billions of table rows.
    Trace huge = labelledRun(gptShape(2), "block", {1, 1});
    huge.metrics->model->layers = std::numeric_limits<int32_t>::max();
    auto refused = activationTheory(huge, tl);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.message().find("layers"), std::string::npos) << refused.message();
}
