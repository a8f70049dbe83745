// Category and step inference on the trainer's runs, exported as unlabelled
// snapshots: at least 90% of the peak's bytes in their true category and
// every step found (memscope-bench-inference prints the same table).
#include <gtest/gtest.h>

#include <filesystem>

#include "config.h"
#include "ground_truth.h"
#include "memscope/format/native_format.h"
#include "trainer.h"

namespace memscope {
namespace {

namespace fs = std::filesystem;

struct Case {
    trainer::ModelKind model;
    const char* policy;
    double peak_at_least;
    size_t steps;
};

class GroundTruth : public ::testing::TestWithParam<Case> {};

TEST_P(GroundTruth, InfersCategoriesAndSteps) {
    const Case c = GetParam();
    const fs::path dir =
        fs::temp_directory_path() / ("memscope-gt-" + std::to_string(::getpid()) + "-" + c.policy);
    fs::create_directories(dir);
    trainer::TrainConfig config;
    config.steps = 3;
    config.threads = 1;
    config.model = *trainer::preset(c.model, "quick");
    auto policies = trainer::parsePolicies(c.policy);
    ASSERT_TRUE(policies.ok());
    trainer::RunOptions options;
    options.trace_path = (dir / "run.memscope").string();
    auto run = trainer::runPolicy(config, policies->front(), options);
    ASSERT_TRUE(run.ok()) << run.message();
    auto labelled = importNativeTrace(options.trace_path);
    ASSERT_TRUE(labelled.ok()) << labelled.message();
    auto score = ground_truth::scoreInference(*labelled, (dir / "run.pickle").string());
    fs::remove_all(dir);
    ASSERT_TRUE(score.ok()) << score.message();
    EXPECT_GE(score->peak_correct, c.peak_at_least) << "misses: " << score->wrong;
    EXPECT_EQ(score->steps_found, c.steps);
}

INSTANTIATE_TEST_SUITE_P(Trainer, GroundTruth,
                         ::testing::Values(Case{trainer::ModelKind::Mlp, "full", 0.9, 3},
                                           Case{trainer::ModelKind::Mlp, "selective", 0.9, 3},
                                           Case{trainer::ModelKind::Mlp, "block", 0.9, 3},
                                           Case{trainer::ModelKind::Mlp, "opt-in-bwd", 0.9, 3},
                                           Case{trainer::ModelKind::Gpt, "full", 0.9, 3},
                                           Case{trainer::ModelKind::Gpt, "selective", 0.9, 3},
                                           Case{trainer::ModelKind::Gpt, "block", 0.9, 3},
                                           Case{trainer::ModelKind::Gpt, "opt-in-bwd", 0.9, 3}),
                         [](const auto& info) {
                             std::string name = std::string(trainer::modelName(info.param.model)) +
                                                "_" + info.param.policy;
                             for (char& ch : name)
                                 if (ch == '-') ch = '_';
                             return name;
                         });

}  // namespace
}  // namespace memscope
