// Why a policy's run changed its peak against full-save's, or why it did not:
// where the baseline's peak lies, what holds it, and what the policy is for.
// Runs of each policy are built here at two shapes: one where activations
// dominate (what recomputation lowers) and one where gradients and the
// optimizer step dominate (what the optimizer in backward lowers).
#include "memscope/analysis/policy_explainer.h"

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../analysis_test_util.h"
#include "memscope/analysis/compare_table.h"
#include "memscope/report/compare_report.h"
#include "memscope/timeline/timeline.h"

namespace memscope {
namespace {

using testutil::event;

struct Shape {
    int layers = 4;
    uint64_t activation = 0;  // bytes a layer saves for backward (full-save)
    uint64_t parameter = 0;   // bytes of a layer's parameters (and of its gradient)
};
// Activations dominate: 4 layers of 4000 B saved, 100 B of parameters each.
constexpr Shape kActivationHeavy{4, 4000, 100};
// Parameters dominate: 4 layers of 100 B saved, 4000 B of parameters each.
constexpr Shape kParameterHeavy{4, 100, 4000};

// Two training steps of `policy` (a name parsePolicy reads) at `shape`, with
// the policy recorded in the run's metrics. Forward keeps each layer's saved
// activations (block: an eighth, the layer's input; selective: half) and a
// temporary of 10 B; backward, last layer first, recomputes what the
// policy dropped, makes the layer's gradient and frees its activations; the
// optimizer (Adam-like: two states per parameter, a scratch the size of what
// it updates) runs after backward on every gradient at once, or, with
// opt-in-bwd, inside backward on each gradient as soon as it is made.
Trace policyRun(const std::string& policy_name, Shape shape) {
    const Policy policy = *parsePolicy(policy_name);
    Trace t;
    t.metadata.name = policy_name;
    t.metadata.source_format = "test";
    RunMetrics m;
    m.policy = policy_name;
    int64_t now = 1'000'000;
    uint64_t next = 0x10000;
    auto alloc = [&](uint64_t size, Category c, PhaseId ph) {
        const uint64_t a = next;
        next += 0x10000;
        t.events.push_back(event(now += 10, EventKind::Alloc, a, size, c, ph));
        return a;
    };
    auto release = [&](uint64_t a, uint64_t size, Category c, PhaseId ph) {
        t.events.push_back(event(now += 10, EventKind::FreeCompleted, a, size, c, ph));
    };
    auto phase = [&](const char* name, PhaseKind kind, PhaseId parent, int step) {
        return t.addPhase({t.internString(name), kind, parent, step, -1, -1, now, now});
    };
    auto close = [&](PhaseId id) { t.phases[id.value - 1].end = now += 10; };

    const uint64_t kept = policy.recompute == Recompute::Block       ? shape.activation / 8
                          : policy.recompute == Recompute::Selective ? shape.activation / 2
                                                                     : shape.activation;
    for (int l = 0; l < shape.layers; ++l) alloc(shape.parameter, Category::Parameter, {});
    bool has_state = false;
    auto states = [&](int count, PhaseId ph) {
        for (int i = 0; i < 2 * count; ++i) alloc(shape.parameter, Category::OptimizerState, ph);
    };
    for (int s = 0; s < 2; ++s) {
        const int64_t step_start = now;
        const PhaseId step = phase("step", PhaseKind::Step, {}, s);
        const PhaseId fwd = phase("forward", PhaseKind::Forward, step, s);
        std::vector<uint64_t> saved;
        for (int l = 0; l < shape.layers; ++l) {
            saved.push_back(alloc(kept, Category::Activation, fwd));
            const uint64_t tmp = alloc(10, Category::Temporary, fwd);
            release(tmp, 10, Category::Temporary, fwd);
        }
        close(fwd);
        const PhaseId bwd = phase("backward", PhaseKind::Backward, step, s);
        std::vector<uint64_t> grads;
        for (int l = shape.layers - 1; l >= 0; --l) {
            uint64_t again = 0;
            if (kept < shape.activation) {
                const PhaseId rc = phase("recompute", PhaseKind::Recompute, bwd, s);
                again = alloc(shape.activation - kept, Category::Activation, rc);
                close(rc);
            }
            const uint64_t g = alloc(shape.parameter, Category::Gradient, bwd);
            release(saved[size_t(l)], kept, Category::Activation, bwd);
            if (again) release(again, shape.activation - kept, Category::Activation, bwd);
            if (policy.optimizer_in_backward) {
                const PhaseId opt = phase("adam", PhaseKind::Optimizer, bwd, s);
                if (s == 0) states(1, opt);
                const uint64_t scratch = alloc(shape.parameter, Category::Temporary, opt);
                release(scratch, shape.parameter, Category::Temporary, opt);
                release(g, shape.parameter, Category::Gradient, opt);
                close(opt);
            } else {
                grads.push_back(g);
            }
        }
        close(bwd);
        if (!policy.optimizer_in_backward) {
            const PhaseId opt = phase("optimizer", PhaseKind::Optimizer, step, s);
            if (!has_state) states(shape.layers, opt);
            has_state = true;
            const uint64_t all = shape.parameter * uint64_t(shape.layers);
            const uint64_t scratch = alloc(all, Category::Temporary, opt);
            release(scratch, all, Category::Temporary, opt);
            for (uint64_t g : grads) release(g, shape.parameter, Category::Gradient, opt);
            close(opt);
        }
        close(step);
        m.step_ns.push_back(now - step_start);
        m.recompute_ns.push_back(0);
    }
    t.metrics = m;
    return t;
}

struct Runs {
    std::vector<Trace> traces;
    std::vector<std::shared_ptr<const Timeline>> timelines;
    std::vector<CompareInput> inputs;
};

// full, block, selective and opt-in-bwd at one shape.
Runs fourPolicies(Shape shape) {
    Runs r;
    for (const char* p : {"full", "block", "selective", "opt-in-bwd"})
        r.traces.push_back(policyRun(p, shape));
    for (const Trace& t : r.traces) r.timelines.push_back(*Timeline::build(t));
    for (size_t i = 0; i < r.traces.size(); ++i)
        r.inputs.push_back({"/runs/" + r.traces[i].metadata.name + ".memscope",
                            r.traces[i].metadata.name,
                            RunRef{&r.traces[i], &r.timelines[i]->devices().at(0)}});
    return r;
}

// The row's "why" line in the text table.
std::string whyLine(const std::string& text, const std::string& run) {
    const std::string head = run + " vs full: ";
    const size_t at = text.find(head);
    if (at == std::string::npos) return "(no line for " + run + ")";
    const size_t line = text.find('\n', at) + 1;
    const std::string prefix = "  why: ";
    if (text.compare(line, prefix.size(), prefix) != 0) return "(no why for " + run + ")";
    return text.substr(line + prefix.size(), text.find('\n', line) - line - prefix.size());
}

double peakRatio(const CompareTable& t, size_t row) {
    return double(t.rows[row].peak->bytes) / double(t.rows[0].peak->bytes);
}

TEST(PolicyExplainer, WhereActivationsDominateRecomputationLowersThePeakAndOptInBwdDoesNot) {
    const Runs r = fourPolicies(kActivationHeavy);
    const CompareTable t = buildCompareTable(r.inputs, 0, AlignMode::Step);
    EXPECT_LT(peakRatio(t, 1), 0.95);
    EXPECT_LT(peakRatio(t, 2), 0.95);
    EXPECT_DOUBLE_EQ(peakRatio(t, 3), 1.0);
    const std::string text = toText(t);
    // Full-save's peak is where backward starts: every activation and the
    // first layer's gradient.
    EXPECT_EQ(whyLine(text, "block"),
              "the peak is in backward, where activations hold 92%: block recomputes "
              "activations, so fewer are alive then")
        << text;
    EXPECT_EQ(whyLine(text, "selective"),
              "the peak is in backward, where activations hold 92%: selective recomputes "
              "activations, so fewer are alive then");
    EXPECT_EQ(whyLine(text, "opt-in-bwd"),
              "the peak is in backward, where activations hold 92%: opt-in-bwd frees gradients, "
              "which hold under 1% there");
    // JSON carries the same sentence; the baseline has none.
    const auto j = nlohmann::json::parse(toJson(t));
    EXPECT_TRUE(j["runs"][0]["why"].is_null());
    EXPECT_EQ(j["runs"][3]["why"], whyLine(text, "opt-in-bwd"));
}

TEST(PolicyExplainer, InForwardOptInBwdHasNoGradientsToFree) {
    const Runs r = fourPolicies(kActivationHeavy);
    const CompareTable t =
        buildCompareTable(r.inputs, 0, AlignMode::Step, PeakScope{TrainingPhase::Forward});
    EXPECT_LT(peakRatio(t, 1), 0.95);
    EXPECT_DOUBLE_EQ(peakRatio(t, 3), 1.0);
    const std::string text = toText(t);
    EXPECT_EQ(whyLine(text, "opt-in-bwd"),
              "the peak is in forward: opt-in-bwd frees gradients, which are not alive then")
        << text;
    EXPECT_EQ(whyLine(text, "block").rfind("the peak is in forward, where activations hold ", 0),
              0u)
        << text;
}

TEST(PolicyExplainer, WhereTheOptimizerStepDominatesOptInBwdLowersThePeakAndRecomputationDoesNot) {
    const Runs r = fourPolicies(kParameterHeavy);
    const CompareTable t = buildCompareTable(r.inputs, 0, AlignMode::Step);
    EXPECT_DOUBLE_EQ(peakRatio(t, 1), 1.0);
    EXPECT_DOUBLE_EQ(peakRatio(t, 2), 1.0);
    EXPECT_LT(peakRatio(t, 3), 0.95);
    const std::string text = toText(t);
    // Full-save's peak is its optimizer step: parameters, every gradient,
    // Adam's two states and the step's scratch (1 + 1 + 2 + 1 parts).
    EXPECT_EQ(whyLine(text, "block"),
              "the peak is in the optimizer step: block recomputes activations, which are not "
              "alive then")
        << text;
    EXPECT_EQ(whyLine(text, "selective"),
              "the peak is in the optimizer step: selective recomputes activations, which are not "
              "alive then");
    EXPECT_EQ(whyLine(text, "opt-in-bwd"),
              "the peak is in the optimizer step, where gradients and temporaries hold 40%: "
              "opt-in-bwd frees gradients and the optimizer's scratch, so fewer are alive then");
}

TEST(PolicyExplainer, PeakPlaceIsTheInnermostTrainingPhase) {
    Trace t;
    const PhaseId step = t.addPhase({t.internString("step"), PhaseKind::Step, {}, 0, -1, -1, 0, 9});
    const PhaseId bwd =
        t.addPhase({t.internString("backward"), PhaseKind::Backward, step, 0, -1, -1, 0, 9});
    const PhaseId adam =
        t.addPhase({t.internString("adam"), PhaseKind::Optimizer, bwd, 0, -1, -1, 1, 2});
    const PhaseId block =
        t.addPhase({t.internString("block 1"), PhaseKind::Block, bwd, 0, 1, -1, 3, 4});
    std::array<int64_t, kCategoryCount> cats{};
    cats[size_t(index(Category::Gradient))] = 7;
    const PeakPlace in_adam = peakPlace(t, adam, 7, cats);
    EXPECT_EQ(in_adam.phase, TrainingPhase::Optimizer);
    EXPECT_TRUE(in_adam.inside_backward);
    EXPECT_EQ(in_adam.bytes, 7);
    EXPECT_EQ(in_adam.by_category, cats);
    const PeakPlace in_block = peakPlace(t, block, 7, cats);
    EXPECT_EQ(in_block.phase, TrainingPhase::Backward);
    EXPECT_FALSE(in_block.inside_backward);
    EXPECT_FALSE(peakPlace(t, step, 7, cats).phase);
    EXPECT_FALSE(peakPlace(t, PhaseId{}, 7, cats).phase);
}

TEST(PolicyExplainer, WhatEachPolicyIsFor) {
    using C = std::vector<Category>;
    EXPECT_EQ(categoriesLowered(*parsePolicy("full"), TrainingPhase::Backward), C{});
    EXPECT_EQ(categoriesLowered(*parsePolicy("block"), TrainingPhase::Optimizer),
              C{Category::Activation});
    EXPECT_EQ(categoriesLowered(*parsePolicy("save:matmul"), TrainingPhase::Forward),
              C{Category::Activation});
    EXPECT_EQ(categoriesLowered(*parsePolicy("opt-in-bwd"), TrainingPhase::Backward),
              C{Category::Gradient});
    EXPECT_EQ(categoriesLowered(*parsePolicy("opt-in-bwd"), TrainingPhase::Optimizer),
              (C{Category::Gradient, Category::Temporary}));
    EXPECT_EQ(categoriesLowered(*parsePolicy("block+opt-in-bwd"), TrainingPhase::Forward),
              (C{Category::Activation, Category::Gradient}));
}

TEST(PolicyExplainer, RecordedPolicyIsParsedOrUnknown) {
    Trace t;
    EXPECT_FALSE(recordedPolicy(t));
    t.metrics = RunMetrics{};
    t.metrics->policy = "segments:2+opt-in-bwd";
    ASSERT_TRUE(recordedPolicy(t));
    EXPECT_EQ(policyName(*recordedPolicy(t)), "segments:2+opt-in-bwd");
    t.metrics->policy = "made-up";
    EXPECT_FALSE(recordedPolicy(t));
}

PeakPlace place(TrainingPhase phase, std::initializer_list<std::pair<Category, int64_t>> cats) {
    PeakPlace p;
    p.phase = phase;
    for (const auto& [c, bytes] : cats) {
        p.by_category[size_t(index(c))] = bytes;
        p.bytes += bytes;
    }
    return p;
}

TEST(PolicyExplainer, UnknownSameRaisedAndMovedPeaks) {
    const PolicyPeak full{
        "full", *parsePolicy("full"),
        place(TrainingPhase::Backward, {{Category::Activation, 600}, {Category::Gradient, 400}})};
    // No policy recorded: nothing to say.
    EXPECT_FALSE(explainPolicyChange(full, PolicyPeak{"x", std::nullopt, full.peak}));
    EXPECT_EQ(*explainPolicyChange(full, PolicyPeak{"again", *parsePolicy("full"), full.peak}),
              "the same policy as full (full)");
    // Activations hold much of the peak, but block's own peak lies where gradients do.
    const PolicyPeak moved{
        "block", *parsePolicy("block"),
        place(TrainingPhase::Backward, {{Category::Activation, 100}, {Category::Gradient, 900}})};
    EXPECT_EQ(*explainPolicyChange(full, moved),
              "the peak is in backward, where activations hold 60%: block recomputes activations, "
              "but its own peak is in backward, where gradients hold 90%");
    // A rise says by how much and what rose most.
    const PolicyPeak raised{"block", *parsePolicy("block"),
                            place(TrainingPhase::Backward, {{Category::Activation, 300},
                                                            {Category::Gradient, 400},
                                                            {Category::Temporary, 500}})};
    EXPECT_EQ(*explainPolicyChange(full, raised),
              "the peak is in backward, where activations hold 60%: block recomputes activations, "
              "but its own peak is in backward, where temporaries hold 42%; its peak is 200 B "
              "higher, most of it temporaries");
    // An optimizer step inside backward says so.
    PolicyPeak opt_in_bwd{"opt-in-bwd", *parsePolicy("opt-in-bwd"),
                          place(TrainingPhase::Optimizer, {{Category::Gradient, 1000}})};
    opt_in_bwd.peak.inside_backward = true;
    EXPECT_NE(explainPolicyChange(full, opt_in_bwd)->find("in the optimizer step inside backward"),
              std::string::npos);
}

}  // namespace
}  // namespace memscope
