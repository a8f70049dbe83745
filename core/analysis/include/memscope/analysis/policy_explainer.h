#pragma once
// Why a checkpoint policy's run changed its peak against the baseline's, or
// why it did not: where the baseline's peak lies (its training phase), which
// categories hold it then, and which of them the policy exists to lower
// (recomputation lowers activations; the optimizer in backward lowers
// gradients and the optimizer step's scratch). The compare table prints the
// sentence under each row's change ("the peak is in forward: opt-in-bwd frees
// gradients, which are not alive then").

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memscope/analysis/checkpoint_policy.h"
#include "memscope/model/phases.h"
#include "memscope/model/trace.h"

namespace memscope {

// Where a peak lies and what holds it.
struct PeakPlace {
    int64_t bytes = 0;
    std::array<int64_t, kCategoryCount> by_category{};
    // The innermost training phase at the peak (an optimizer step run inside
    // backward is the optimizer's); nullopt: outside every training phase.
    std::optional<TrainingPhase> phase;
    bool inside_backward = false;  // phase is the optimizer, run inside backward
};

// The place of a peak whose innermost recorded phase is `phase` (null: none).
PeakPlace peakPlace(const Trace& trace, PhaseId phase, int64_t bytes,
                    const std::array<int64_t, kCategoryCount>& by_category);

// The categories `policy` exists to lower at a peak in `phase`: activations
// for a recomputation, gradients for the optimizer in backward (and, in the
// optimizer step, the step's temporaries: it updates one parameter at a time
// instead of all at once). Empty for full-save.
std::vector<Category> categoriesLowered(const Policy& policy, std::optional<TrainingPhase> phase);

// The policy a run recorded (RunMetrics::policy), when memscope knows it.
std::optional<Policy> recordedPolicy(const Trace& trace);

// One side of a comparison.
struct PolicyPeak {
    std::string name;              // the run's name ("mlp-full")
    std::optional<Policy> policy;  // nullopt: not recorded, or unknown
    PeakPlace peak;
};

// Why the candidate's peak is lower, about the same (within 1%) or higher
// than the baseline's, from where the baseline's peak lies and what holds it
// then. nullopt when the candidate's policy is not known.
std::optional<std::string> explainPolicyChange(const PolicyPeak& baseline,
                                               const PolicyPeak& candidate);

}  // namespace memscope
