#pragma once
// Which stretches of each training step's forward a whatif policy
// checkpoints: the region planning, apart from the simulator
// (policy_simulator.h), which only rewrites the measured run around them.
//  - chain policies (block, sqrt, segments:K, sequential:K, layers:LIST,
//    every:N, uniform:N, first:N) checkpoint runs of consecutive chain layers,
//    each run one region from its first layer's forward start to its last
//    one's forward end;
//  - module:CLASS checkpoints each call of a module of that class, from its
//    own forward module scope, whether or not it is a chain layer.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "memscope/base/result.h"
#include "memscope/model/trace.h"
#include "memscope/whatif/layer_chain.h"
#include "memscope/whatif/whatif.h"

namespace memscope {

// Consecutive chain layers [first, last) (positions in LayerChain::layers)
// checkpointed as one region.
struct LayerRegion {
    size_t first = 0;
    size_t last = 0;
    friend bool operator==(const LayerRegion&, const LayerRegion&) = default;
};

// The regions a chain policy checkpoints, in forward order; an error a user
// can act on when the policy does not fit the chain (segments:K or
// sequential:K with K above its layers, every:N, uniform:N or first:N with N
// above them, a layer index it has not). Empty for module:CLASS, opt-in-bwd
// and full.
Result<std::vector<LayerRegion>> layerRegions(const WhatIfPolicy& policy, const LayerChain& chain);

// One stretch of one step's forward, replayed as one checkpointed region.
struct CheckpointWindow {
    size_t step = 0;            // index into LayerChain::steps
    int64_t forward_start = 0;  // Event::time
    int64_t forward_end = 0;    // exclusive
    std::string name;           // "h.3", "h.0–h.3", "h.2.attn"
    int32_t block = -1;         // the index of the chain layer it starts in; -1 if none
    LayerRegion layers;         // the chain layers it covers (chain policies)
};

// Every window `policy` checkpoints, by step then time. module:CLASS takes
// the trace's forward module scopes of that class in each step's forward
// (nested ones: only the outermost), and is refused, listing the classes
// the trace has, when none is of that class.
Result<std::vector<CheckpointWindow>> checkpointWindows(const WhatIfPolicy& policy,
                                                        const LayerChain& chain,
                                                        const Trace& trace);

}  // namespace memscope
