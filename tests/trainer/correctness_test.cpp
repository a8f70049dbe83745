// With fixed seeds every policy computes the same training run: the same loss
// at every step and the same parameters after N steps.
//
// Tolerance: the forward pass is the same sequence of kernels under every
// policy, recomputation replays the dropout generator, and the in-backward
// Adam runs the very kernels of the foreach step on one parameter at a time,
// so on CPU the runs agree bit for bit in practice. The tests still allow a
// relative 1e-6 on losses and an absolute 1e-6 on parameters (of order 0.02):
// the last-bit freedom a different kernel order (e.g. another intra-op thread
// split in a recomputed region) may legitimately take in fp32.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "test_util.h"

using namespace memscope::trainer;
using namespace memscope::trainer::test;

namespace {

constexpr double kLossRelTol = 1e-6;
constexpr float kParamAbsTol = 1e-6f;

RunResult runPlain(const TrainConfig& c, const Policy& p) {
    RunOptions o;
    o.keep_parameters = true;
    auto r = runPolicy(c, p, o);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.message());
    return r.ok() ? std::move(r.value()) : RunResult{};
}

void expectSameRun(const RunResult& ref, const RunResult& other, const std::string& what) {
    ASSERT_EQ(ref.losses.size(), other.losses.size()) << what;
    for (size_t i = 0; i < ref.losses.size(); ++i)
        EXPECT_NEAR(other.losses[i], ref.losses[i], kLossRelTol * std::abs(ref.losses[i]))
            << what << ": loss at step " << i;
    ASSERT_EQ(ref.parameters.size(), other.parameters.size()) << what;
    float worst = 0;
    for (size_t i = 0; i < ref.parameters.size(); ++i)
        worst = std::max(worst, std::abs(ref.parameters[i] - other.parameters[i]));
    EXPECT_LE(worst, kParamAbsTol) << what << ": largest parameter difference";
    double worst_loss = 0;
    for (size_t i = 0; i < ref.losses.size(); ++i)
        worst_loss = std::max(worst_loss, std::abs(ref.losses[i] - other.losses[i]));
    std::cout << "[equality] " << what << ": largest loss difference " << worst_loss
              << ", largest parameter difference " << worst << "\n";
}

void checkAllPolicies(const TrainConfig& c) {
    const RunResult ref = runPlain(c, full());
    ASSERT_EQ(ref.losses.size(), static_cast<size_t>(c.steps));
    // The parameters moved: the comparison is not trivially true.
    const RunResult start = runPlain(trainConfig(c.model, 0), full());
    ASSERT_EQ(start.parameters.size(), ref.parameters.size());
    float moved = 0;
    for (size_t i = 0; i < ref.parameters.size(); ++i)
        moved = std::max(moved, std::abs(ref.parameters[i] - start.parameters[i]));
    EXPECT_GT(moved, 1e-4f);
    for (const Policy& p : {block(), selective(), optInBwd(), Policy{Recompute::Block, true},
                            Policy{Recompute::Selective, true}})
        expectSameRun(ref, runPlain(c, p), policyName(p));
}

}  // namespace

TEST(TrainerCorrectness, MlpPoliciesAgree) {
    checkAllPolicies(trainConfig(smallMlp(), 4));
}

TEST(TrainerCorrectness, GptPoliciesAgreeWithDropout) {
    ModelConfig m = smallGpt();
    m.seq = 16;
    checkAllPolicies(trainConfig(m, 4));
}

TEST(TrainerCorrectness, RecordingDoesNotChangeTheRun) {
    ModelConfig m = smallGpt();
    m.seq = 16;
    const TrainConfig c = trainConfig(m, 2);
    const RunResult plain = runPlain(c, block());
    auto recorded = record(c, block(), "equality");
    ASSERT_TRUE(recorded);
    ASSERT_EQ(plain.losses, recorded->run.losses);
}

// The literature's policies (sqrt, segments:K, save:OPS), alone and with the
// optimizer in backward, against full: same losses, same parameters. Small
// models and 3 steps, so that CI runs them in seconds: 5 blocks make sqrt two
// segments of 3 and 2 blocks and segments:2 one checkpointed segment of 2
// blocks followed by 3 plain ones.
namespace {

void checkPolicies(const TrainConfig& c, const std::string& list) {
    const RunResult ref = runPlain(c, full());
    ASSERT_EQ(ref.losses.size(), static_cast<size_t>(c.steps));
    auto policies = parsePolicies(list);
    ASSERT_TRUE(policies.ok()) << policies.message();
    for (Policy p : *policies) {
        expectSameRun(ref, runPlain(c, p), policyName(p));
        p.optimizer_in_backward = true;
        expectSameRun(ref, runPlain(c, p), policyName(p));
    }
}

}  // namespace

TEST(TrainerCorrectness, MlpLiteraturePoliciesAgree) {
    checkPolicies(trainConfig(smallMlp(5), 3), "sqrt,segments:2,segments:5,save:none,save:matmul");
}

TEST(TrainerCorrectness, GptLiteraturePoliciesAgreeWithDropout) {
    ModelConfig m = smallGpt();
    m.layers = 5;
    m.seq = 16;
    checkPolicies(trainConfig(m, 3),
                  "sqrt,segments:2,save:none,save:matmul,save:attention,save:matmul,attention");
}
