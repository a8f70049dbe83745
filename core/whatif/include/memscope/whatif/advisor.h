#pragma once
// The advisor: from one measured full-save run, the fastest per-layer mix
// of checkpointing choices predicted to fit a memory budget, or, without a
// budget, the memory/time frontier of mixes. Each layer of the chain is left
// alone, checkpointed whole, or checkpointed with a save list (where the
// run's ops are known); the optimizer steps in backward where the run
// allows it. The peak is not additive (a checkpoint's recompute lands on
// top of what backward holds), so per-layer figures only order the search:
// every answer is the whole run simulated with that mix (whatif.h), and the
// uniform policies are simulated beside it, so a mix is named only when it
// is at least as fast as every uniform policy that fits.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memscope/allocator/allocator_settings.h"
#include "memscope/base/result.h"
#include "memscope/base/task_context.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"
#include "memscope/whatif/whatif.h"

namespace memscope {

struct AdvisorOptions {
    // The allocator settings and checkpoint style to predict with
    // (keep_traces is the advisor's own: only the answer's trace is kept).
    WhatIfOptions whatif;
    // Whether the optimizer may step in backward (it changes the training
    // loop; off when the user cannot, e.g. gradient clipping).
    bool optimizer_in_backward = true;
    // The save list layers may take; none: matmul where the run's ops allow
    // it, else layers are only checkpointed whole.
    std::optional<Policy> save_list;
    // Keep the answer's predicted trace and timeline (the GUI shows it).
    bool keep_answer_trace = false;
    // On a GPU run, search again with expandable segments (when the run's
    // settings do not have them): fragmentation is reserved memory too.
    bool allocator_settings = true;
};

struct AdvisedPolicy {
    WhatIfPolicy policy;
    WhatIfRow row;             // its whole-run prediction
    bool uniform = false;      // one of the standard policies (block, every:2, …), not a mix
    int64_t judged_bytes = 0;  // the peak a budget is held to: reserved on a GPU run, else active
    // PYTORCH_CUDA_ALLOC_CONF to run it with ("expandable_segments:True");
    // "" = the settings the whatif options hold (as recorded, by default).
    std::string allocator_conf = {};
    // The run as written ("full"): no code to change, at most the allocator's settings.
    bool changesNoCode() const {
        return policy.plan == RegionPlan::Chain && policy.policy.recompute == Recompute::None &&
               !policy.policy.optimizer_in_backward;
    }
    // "block", or "block with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True".
    std::string label() const {
        return allocator_conf.empty()
                   ? policy.name
                   : policy.name + " with PYTORCH_CUDA_ALLOC_CONF=" + allocator_conf;
    }
};

struct Advice {
    std::string source;
    std::optional<int64_t> budget_bytes;  // none: the frontier alone
    bool by_reserved = false;             // judged by the allocator model's reserved peak
    AdvisedPolicy measured;               // the measured run (full save)
    // The fastest fitting answer that record --apply can apply (a mix, or a
    // uniform policy where no mix is faster); none when nothing fits or
    // there is no budget.
    std::optional<AdvisedPolicy> choice;
    // A fitting policy faster than `choice` that checkpoints several layers
    // as one region (sqrt, segments:K over a ModuleList): no module's forward
    // covers it, so only the user's own code applies it; why, in words.
    std::optional<AdvisedPolicy> by_hand;
    std::string by_hand_reason;
    std::optional<AdvisedPolicy> best_uniform;  // the fastest uniform policy that fits
    // When nothing fits: the smallest peak found, and by how much it misses.
    std::optional<AdvisedPolicy> closest;
    int64_t short_by_bytes = 0;
    // Mixes and uniform policies no other one beats in both memory and time,
    // largest peak (fastest) first.
    std::vector<AdvisedPolicy> frontier;
    size_t simulations = 0;          // whole runs simulated
    std::vector<std::string> notes;  // what the search took for granted or left out
    std::string line;                // one sentence for a person
};

// Searches mixes from `measured` (a full-save run with a layer chain), and
// on a GPU run each also with expandable segments. An
// error when there is nothing to search (no layer chain, a predicted run).
// Progress counts simulations against an estimate; cancel returns Cancelled.
Result<Advice> advise(const Trace& measured, const Timeline& timeline, std::string source,
                      std::optional<int64_t> budget_bytes, const AdvisorOptions& options = {},
                      const TaskContext& ctx = {});

}  // namespace memscope
