// The what-if simulator against the trainer's measured runs (whatif_truth.h):
// each policy predicted from the full-save run alone, scored against the
// run of that policy. memscope-bench-whatif prints the same table.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "config.h"
#include "memscope/format/native_format.h"
#include "memscope/open/open_run.h"
#include "memscope/whatif/op_labels.h"
#include "memscope/whatif/whatif.h"
#include "trainer.h"
#include "whatif_truth.h"

namespace memscope {
namespace {

namespace fs = std::filesystem;

struct Case {
    trainer::ModelKind model;
};

class WhatIfTruth : public ::testing::TestWithParam<Case> {};

TEST_P(WhatIfTruth, PredictsEveryLayerPolicyFromFullSave) {
    const Case c = GetParam();
    const fs::path dir =
        fs::temp_directory_path() / ("memscope-whatif-" + std::to_string(::getpid()) +
                                     (c.model == trainer::ModelKind::Gpt ? "-gpt" : "-mlp"));
    trainer::TrainConfig config;
    config.steps = 3;
    config.threads = 1;
    config.model = *trainer::preset(c.model, "quick");
    auto table =
        whatif_truth::run(config, "quick", whatif_truth::sweepPolicies(c.model), dir.string());
    ASSERT_TRUE(table.ok()) << table.message();
    std::printf("%s", whatif_truth::format(*table).c_str());
    for (const whatif_truth::Row& r : table->rows) {
        SCOPED_TRACE(r.policy);
        ASSERT_FALSE(r.refused.has_value()) << *r.refused;
        // ±2% for layer sets and opt-in-bwd, ±5% for save lists (the
        // trainer's op phases say which op made what). A layer set composed
        // with opt-in-bwd measured up to +3.3% on the mlp in one run of three
        // (the recorded order of a gradient and its op's temporaries varies
        // between runs): held at 3.5%, the note says so.
        const bool ops = r.policy.rfind("save:", 0) == 0 || r.policy.rfind("selective", 0) == 0;
        const bool composed = !ops && r.policy.find("+opt-in-bwd") != std::string::npos;
        EXPECT_LE(std::abs(r.peakError()), ops ? 0.05 : composed ? 0.035 : 0.02);
        for (TrainingPhase p : {TrainingPhase::Backward, TrainingPhase::Optimizer}) {
            const auto e = r.phaseError(p);
            ASSERT_TRUE(e.has_value()) << toString(p);
            EXPECT_LE(std::abs(*e), 0.05) << toString(p);
        }
        // The forward of a checkpointed layer, run without saving, keeps
        // tensors as long as its temporaries live (policy_simulator.h): within
        // 5% but for the mlp's sqrt, which measured -6.0% (the note says so).
        const auto f = r.phaseError(TrainingPhase::Forward);
        ASSERT_TRUE(f.has_value());
        EXPECT_LE(std::abs(*f), 0.07);
    }
    fs::remove_all(dir);
}

// The trainer's op phases and the ops they stand for agree: its gpt's
// full-save run, its "matmul" phases turned into aten::addmm op scopes and
// its "attention" phases into aten::scaled_dot_product_attention (the phases
// renamed, so that only the op scopes say which op made what), predicts every
// save list and selective as the phases do.
TEST(WhatIfTruthOps, TheTrainersOpPhasesAndTheOpsTheyStandForPredictAlike) {
    const fs::path dir = fs::temp_directory_path() /
                         ("memscope-whatif-ops-" + std::to_string(::getpid()) + ".memscope");
    trainer::TrainConfig config;
    config.steps = 2;
    config.threads = 1;
    config.model = *trainer::preset(trainer::ModelKind::Gpt, "quick");
    trainer::RunOptions options;
    options.preset = "quick";
    options.trace_path = dir.string();
    ASSERT_TRUE(trainer::runPolicy(config, Policy{}, options).ok());
    auto measured = importNativeTrace(dir.string());
    fs::remove(dir);
    ASSERT_TRUE(measured.ok()) << measured.message();
    Trace converted = *measured;
    size_t labels = 0;
    for (Phase& p : converted.phases) {
        const uint32_t kind = p.kind == PhaseKind::Range && !p.inferred
                                  ? opKindOfPhaseName(converted.string(p.name))
                                  : 0;
        if (!kind) continue;
        ++labels;
        const char* op = kind == kSaveMatmul ? "aten::addmm" : "aten::scaled_dot_product_attention";
        converted.ops.scopes.push_back({p.start, p.end, converted.internString(op), 0});
        p.name = converted.internString("op");
    }
    converted.ops.source = OpSource::Recorded;
    ASSERT_GT(labels, 0u);
    ASSERT_FALSE(hasOpLabels(converted));
    auto phases = openTrace(std::move(*measured), "phases");
    auto ops = openTrace(std::move(converted), "ops");
    ASSERT_TRUE(phases.ok() && ops.ok());
    const std::vector<std::string> names = {"save:matmul", "save:attention",
                                            "save:matmul,attention", "selective"};
    auto wanted = parseWhatIfPolicies(names);
    ASSERT_TRUE(wanted.ok());
    auto a = whatIf(*phases->trace, *phases->timeline, "phases", *wanted);
    auto b = whatIf(*ops->trace, *ops->timeline, "ops", *wanted);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->rows.size(), b->rows.size());
    for (size_t i = 1; i < a->rows.size(); ++i) {
        SCOPED_TRACE(a->rows[i].policy);
        ASSERT_FALSE(a->rows[i].refused) << *a->rows[i].refused;
        ASSERT_FALSE(b->rows[i].refused) << *b->rows[i].refused;
        EXPECT_EQ(a->rows[i].peak_bytes, b->rows[i].peak_bytes);
        EXPECT_EQ(a->rows[i].peaks_by_phase, b->rows[i].peaks_by_phase);
        EXPECT_EQ(a->rows[i].recompute_ns, b->rows[i].recompute_ns);
        EXPECT_GT(b->rows[i].recompute_ns, 0);  // something was recomputed
    }
}

INSTANTIATE_TEST_SUITE_P(Trainer, WhatIfTruth,
                         ::testing::Values(Case{trainer::ModelKind::Mlp},
                                           Case{trainer::ModelKind::Gpt}));

}  // namespace
}  // namespace memscope
