#include "memscope/analysis/policy_explainer.h"

#include <algorithm>
#include <cstdio>

#include "memscope/base/units.h"

namespace memscope {
namespace {

// A category as the subject of a sentence ("activations hold 80%").
std::string_view plural(Category c) {
    switch (c) {
        case Category::Parameter:
            return "parameters";
        case Category::OptimizerState:
            return "optimizer state";
        case Category::Input:
            return "inputs";
        case Category::Temporary:
            return "temporaries";
        case Category::Activation:
            return "activations";
        case Category::Gradient:
            return "gradients";
        case Category::AutogradDetail:
            return "autograd details";
        case Category::Unknown:
            return "unknown bytes";
    }
    return "unknown bytes";
}

std::string plurals(const std::vector<Category>& cats) {
    std::string out;
    for (size_t i = 0; i < cats.size(); ++i) {
        if (i) out += i + 1 == cats.size() ? " and " : ", ";
        out += plural(cats[i]);
    }
    return out;
}

int64_t bytesOf(const PeakPlace& p, const std::vector<Category>& cats) {
    int64_t sum = 0;
    for (Category c : cats) sum += std::max<int64_t>(0, p.by_category[size_t(index(c))]);
    return sum;
}

// Of the peak's bytes: "80%", "under 1%", "0%".
std::string percentOf(int64_t part, int64_t whole) {
    if (part <= 0 || whole <= 0) return "0%";
    const double share = double(part) / double(whole) * 100.0;
    if (share < 1.0) return "under 1%";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f%%", std::min(share, 100.0));
    return buf;
}

Category dominant(const PeakPlace& p) {
    return Category(std::max_element(p.by_category.begin(), p.by_category.end()) -
                    p.by_category.begin());
}

// "in backward", "in the optimizer step inside backward".
std::string where(const PeakPlace& p) {
    if (!p.phase) return "outside the training phases";
    switch (*p.phase) {
        case TrainingPhase::Forward:
            return "in forward";
        case TrainingPhase::Backward:
            return "in backward";
        case TrainingPhase::Optimizer:
            return p.inside_backward ? "in the optimizer step inside backward"
                                     : "in the optimizer step";
    }
    return "outside the training phases";
}

// What the policy does to the categories it is for ("recomputes activations").
std::string action(const Policy& policy, std::optional<TrainingPhase> phase) {
    std::string out;
    if (policy.recompute != Recompute::None) out = "recomputes activations";
    if (policy.optimizer_in_backward) {
        if (!out.empty()) out += " and ";
        out += phase == TrainingPhase::Optimizer ? "frees gradients and the optimizer's scratch"
                                                 : "frees gradients";
    }
    return out;
}

}  // namespace

PeakPlace peakPlace(const Trace& trace, PhaseId phase, int64_t bytes,
                    const std::array<int64_t, kCategoryCount>& by_category) {
    PeakPlace out;
    out.bytes = bytes;
    out.by_category = by_category;
    // Up from the innermost phase: the first training phase is where the peak
    // lies; a backward above an optimizer step runs it inside backward.
    const Phase* p = trace.phase(phase);
    for (int depth = 0; p && depth < 64; ++depth, p = trace.phase(p->parent)) {
        const std::optional<TrainingPhase> training = trainingPhaseOf(p->kind);
        if (!training) continue;
        if (!out.phase)
            out.phase = training;
        else if (*out.phase == TrainingPhase::Optimizer && *training == TrainingPhase::Backward)
            out.inside_backward = true;
    }
    return out;
}

std::vector<Category> categoriesLowered(const Policy& policy, std::optional<TrainingPhase> phase) {
    std::vector<Category> out;
    if (policy.recompute != Recompute::None) out.push_back(Category::Activation);
    if (policy.optimizer_in_backward) {
        out.push_back(Category::Gradient);
        if (phase == TrainingPhase::Optimizer) out.push_back(Category::Temporary);
    }
    return out;
}

std::optional<Policy> recordedPolicy(const Trace& trace) {
    if (!trace.metrics || trace.metrics->policy.empty()) return std::nullopt;
    auto policy = parsePolicy(trace.metrics->policy);
    if (!policy) return std::nullopt;
    return *policy;
}

std::optional<std::string> explainPolicyChange(const PolicyPeak& baseline,
                                               const PolicyPeak& candidate) {
    if (!candidate.policy) return std::nullopt;
    const Policy& policy = *candidate.policy;
    const std::string name = policyName(policy);
    if (baseline.policy && *baseline.policy == policy)
        return "the same policy as " + baseline.name + " (" + name + ")";
    const PeakPlace& b = baseline.peak;
    const PeakPlace& c = candidate.peak;
    const std::vector<Category> lowered = categoriesLowered(policy, b.phase);
    if (lowered.empty())
        return "the peak is " + where(b) + ": " + name +
               " recomputes nothing and keeps gradients until the optimizer step";

    const int64_t delta = c.bytes - b.bytes;
    const int64_t tolerance = std::max<int64_t>(1, b.bytes / 100);  // 1% of the baseline's peak
    const int64_t held = bytesOf(b, lowered);
    const std::string does = name + " " + action(policy, b.phase);
    const std::string peak_is = "the peak is " + where(b);
    // The categories the policy lowers hold less than 5% of the peak: it
    // cannot lower it much, whatever it frees elsewhere.
    const bool little = held * 20 < b.bytes;
    std::string out;
    if (delta < -tolerance) {
        out = peak_is + ", where " + plurals(lowered) + " hold " + percentOf(held, b.bytes) + ": " +
              does + ", so fewer are alive then";
    } else if (little) {
        if (held <= 0) {
            out = peak_is + ": " + does + ", which are not alive then";
        } else {
            const Category top = dominant(b);
            const std::string share = percentOf(held, b.bytes);
            out = peak_is + ", where " + std::string(plural(top)) + " hold " +
                  percentOf(b.by_category[size_t(index(top))], b.bytes) + ": " + does +
                  ", which hold " + (share.starts_with("under") ? "" : "only ") + share + " there";
        }
    } else {
        // The policy lowered what it is for, but its own peak lies where
        // something else holds the bytes.
        const Category top = dominant(c);
        out = peak_is + ", where " + plurals(lowered) + " hold " + percentOf(held, b.bytes) + ": " +
              does + ", but its own peak is " + where(c) + ", where " + std::string(plural(top)) +
              " hold " + percentOf(c.by_category[size_t(index(top))], c.bytes);
    }
    if (delta > tolerance) {
        // What rose most at the candidate's peak.
        size_t most = 0;
        for (size_t i = 1; i < size_t(kCategoryCount); ++i)
            if (c.by_category[i] - b.by_category[i] > c.by_category[most] - b.by_category[most])
                most = i;
        out += "; its peak is " + formatBytes(delta) + " higher, most of it " +
               std::string(plural(Category(most)));
    }
    return out;
}

}  // namespace memscope
