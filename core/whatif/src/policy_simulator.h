#pragma once
// One policy's predicted trace, from a measured full-save run (whatif.h is
// the front). The simulation rewrites the measured allocations, it invents
// none that the measured run did not make:
//  - a checkpointed region (a window checkpoint_regions.h plans: one or more
//    consecutive layers, or one module call) frees in its
//    forward what it saved for backward, and replays its forward at the start
//    of its backward: every allocation of the forward again, the saved ones
//    then freed as the measured backward frees them, the time shifted by the
//    region's measured forward time;
//  - optimizer in backward frees each gradient as it is made, turns the
//    optimizer step's temporaries into per-parameter ones there, and moves
//    the optimizer state's birth into the first backward.

#include <cstdint>
#include <string>
#include <vector>

#include "memscope/base/result.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"
#include "memscope/whatif/layer_chain.h"
#include "memscope/whatif/whatif.h"

namespace memscope::detail {

struct SimulatedRun {
    Trace trace;                              // marked predicted, named "POLICY (predicted)"
    std::vector<int64_t> recompute_per_step;  // in the trace's time unit, per chain step
    std::vector<std::string> assumptions;
};

// Why a policy cannot be predicted from this run, or "" when it can.
std::string refusal(const Trace& measured, const WhatIfPolicy& policy, const LayerChain& chain);

// `style` is NonReentrant or Reentrant (whatIf resolves Auto).
Result<SimulatedRun> simulatePolicy(const Trace& measured, const DeviceTimeline& device,
                                    const LayerChain& chain, const WhatIfPolicy& policy,
                                    const std::string& source, CheckpointStyle style);

// The style Auto stands for with this run and policy.
CheckpointStyle resolveCheckpointStyle(const Trace& measured, const WhatIfPolicy& policy,
                                       CheckpointStyle asked);

}  // namespace memscope::detail
