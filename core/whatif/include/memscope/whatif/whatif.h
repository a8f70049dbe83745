#pragma once
// What if…: the memory timeline of other checkpointing policies, predicted
// from one measured full-save run (policy_simulator.h does one policy). The
// table `memscope-cli whatif` prints and the GUI's What-if dialog shows:
// each policy's predicted peak, per-phase peaks, recompute time, step-time
// ratio, whether it lies on the predicted memory/time frontier, and the
// assumptions made; a policy the trace cannot support is refused with a
// reason instead of guessed.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memscope/allocator/allocator_model_replay.h"
#include "memscope/analysis/checkpoint_policy.h"
#include "memscope/base/result.h"
#include "memscope/base/task_context.h"
#include "memscope/model/phases.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"
#include "memscope/whatif/layer_chain.h"
#include "memscope/whatif/policy_frontier.h"

namespace memscope {

// How a whatif policy picks the stretches of forward it checkpoints.
// Whatif's own: memscope-train runs only the Policy values (Chain), so these
// are not Policy values (checkpoint_policy.h), which the trainer shares.
enum class RegionPlan {
    Chain,       // policy.recompute's segmentPlan over the chain (block, sqrt, segments:K, …)
    Layers,      // layers:LIST: exactly these layer indices, each its own region
    Sequential,  // sequential:K: torch.utils.checkpoint.checkpoint_sequential(layers, K, x)
    Every,       // every:N: torchtitan's selective_ac_option=N (layers N-1, 2N-1, … 0-based)
    Uniform,     // uniform:N: Megatron's --recompute-method uniform --recompute-num-layers N
    First,       // first:N: Megatron's --recompute-method block --recompute-num-layers N
    Module,      // module:CLASS: every outermost call of a module of that class
};

// A policy as whatif names it: memscope-train's vocabulary, plus the names
// of RegionPlan ("layers:0,2,4", "every:2+opt-in-bwd", "module:Block"), and
// per-layer mixes, which the advisor answers with:
// "layers:0-4+save:matmul@5-23+opt-in-bwd" checkpoints layers 0 to 4 whole
// and layers 5 to 23 with the save list (policy.save_ops, save_op_names).
struct WhatIfPolicy {
    Policy policy;
    RegionPlan plan = RegionPlan::Chain;
    // plan == Layers: the layers checkpointed whole, then those checkpointed
    // with the save list (policy.recompute is Save when there are any), both
    // ascending and disjoint.
    std::vector<int64_t> layers;
    std::vector<int64_t> save_layers = {};
    bool explicit_layers = false;  // plan == Layers
    int64_t count = 0;             // Sequential's K; Every's, Uniform's and First's N
    std::string module_type;       // Module's CLASS
    std::string name;  // as policyName gives it, or "layers:0,2,4[+opt-in-bwd]", "every:2", …
};
// Whether `policy` keeps its save list's op outputs in the layer whose chain
// index is `layer` (a uniform save:OPS in every layer, a mix in its
// save_layers).
bool savesOpsIn(const WhatIfPolicy& policy, int64_t layer);
// The name of a mix: "layers:0-4+save:matmul@5-23+opt-in-bwd" (runs of
// consecutive layers as FIRST-LAST), as parseWhatIfPolicy reads it back.
std::string mixName(const WhatIfPolicy& policy);
Result<WhatIfPolicy> parseWhatIfPolicy(std::string_view text);
// Splits a command line's comma list into policies as memscope-train does,
// and keeps "layers:0,2,4" one policy (its numbers continue the list).
Result<std::vector<WhatIfPolicy>> parseWhatIfPolicies(std::span<const std::string> texts);
// The names, for --policy's line and error messages.
std::string_view whatIfPolicyHelp();
// One line per name with what it checkpoints, for `whatif --help`.
std::string_view whatIfPolicyMeanings();

// The policies predicted when none are named: memscope-train's sweep that
// the chain allows (segments:K only when K <= layers), each alone and with
// +opt-in-bwd, and opt-in-bwd alone.
std::vector<WhatIfPolicy> defaultWhatIfPolicies(const LayerChain& chain);

struct WhatIfRow {
    std::string policy;                  // "block", "full (measured)" for the measured row
    bool measured = false;               // the source run itself, as measured
    std::optional<std::string> refused;  // why it cannot be predicted; the rest is empty
    int64_t peak_bytes = 0;
    int64_t delta_bytes = 0;  // against the measured run's peak
    std::array<std::optional<int64_t>, kTrainingPhaseCount> peaks_by_phase;
    int64_t recompute_ns = 0;    // per step (mean after the first step)
    double step_time_ratio = 1;  // predicted step time / measured step time
    double step_ms = 0;          // predicted step time (mean after the first step)
    bool on_frontier = false;    // among the rows that are not refused
    std::vector<std::string> assumptions;
    // What the caching-allocator model reserves for this run (GPU runs only):
    // the measured row replayed under the settings asked for, a policy row's
    // predicted run from the measured run's cache at its first event.
    std::optional<AllocatorModelRun> allocator;
    // The predicted run (null for the measured and refused rows), marked by
    // Trace::prediction and named "POLICY (predicted)".
    std::shared_ptr<const Trace> trace;
    std::shared_ptr<const Timeline> timeline;
};

struct WhatIfReport {
    std::string source;           // the measured run's file or name
    std::string measured_policy;  // "full", or "" when the trace does not say
    int16_t device = 0;
    // The layers found, or why none (then every prediction is refused).
    std::optional<LayerChain> chain;
    std::string chain_problem;
    std::vector<WhatIfRow> rows;  // the measured run first, then the policies in order
};

// How the checkpoint is made, which decides what the recompute holds
// (torch.utils.checkpoint's use_reentrant):
//  - NonReentrant (use_reentrant=False, saved-tensor hooks): the recompute
//    keeps only what the region's own backward needs; its output, needed by
//    nothing there, is freed when the recompute ends;
//  - Reentrant (use_reentrant=True, checkpoint_sequential, memscope-train's
//    regions): the recompute's outputs are held until the region's backward
//    has finished.
enum class CheckpointStyle : uint8_t {
    Auto = 0,  // Reentrant for memscope-train's runs and sequential:K, else NonReentrant
    NonReentrant = 1,
    Reentrant = 2,
};
std::string_view toString(CheckpointStyle style);  // "auto", "non-reentrant", "reentrant"

struct WhatIfOptions {
    // Keep each predicted trace and build its timeline (the GUI, --out);
    // off, only the figures are kept.
    bool keep_traces = false;
    // The caching allocator's settings to model (on top of the recorded ones),
    // and the bytes it may reserve; none = as recorded, unlimited.
    std::optional<AllocatorSettings> allocator_settings;
    std::optional<uint64_t> device_capacity;
    // The cache every row starts from (allocator_model_replay.h).
    AllocatorStart allocator_start = AllocatorStart::FreshCache;
    CheckpointStyle checkpoint_style = CheckpointStyle::Auto;
};

// Predicts `policies` (empty = defaultWhatIfPolicies, or opt-in-bwd alone
// when the trace has no layers) from the measured run.
// Progress counts policies done; a cancel returns a Cancelled error.
Result<WhatIfReport> whatIf(const Trace& measured, const Timeline& timeline, std::string source,
                            std::span<const WhatIfPolicy> policies,
                            const WhatIfOptions& options = {}, const TaskContext& ctx = {});

// The fastest policy predicted to fit, over the rows that are not refused
// (the measured row included), as memscope-train --budget answers it.
struct WhatIfBudget {
    // Judged by reserved bytes (the allocator model's, on a GPU run: what an
    // OOM is about), else by live bytes.
    bool by_reserved = false;
    BudgetAnswer answer;
    std::vector<PolicyPoint> points;  // parallel to the rows that are not refused
    std::vector<size_t> rows;         // row index of each point
    std::string line;                 // describeBudget's sentence
};
WhatIfBudget whatIfBudget(const WhatIfReport& report, int64_t budget_bytes);

}  // namespace memscope
