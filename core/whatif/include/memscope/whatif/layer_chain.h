#pragma once
// The chain of repeated layers a what-if prediction checkpoints (the
// trainer's "block k", a ModuleList's "h.0" … "h.11"), and when each ran in
// each training step. Found from the trace's modules, recorded or inferred
// (module_scopes.h), and its steps and phases, recorded or inferred.

#include <cstdint>
#include <string>
#include <vector>

#include "memscope/base/result.h"
#include "memscope/model/trace.h"

namespace memscope {

// One layer's forward in one step.
struct LayerRun {
    int32_t step = 0;           // ordinal among the device's steps (stepBounds order)
    int64_t forward_start = 0;  // Event::time
    int64_t forward_end = 0;    // exclusive
};

struct ChainLayer {
    ModuleId module;
    std::string name;            // "h.3", "block 3"
    int64_t index = 0;           // the number in its name, or its position (below)
    std::vector<LayerRun> runs;  // one per step it ran in, by step
};

// One training step's bounds, as the simulator uses them.
struct ChainStep {
    int64_t start = 0, end = 0;
    int64_t forward_start = 0;
    int64_t backward_start = 0, backward_end = 0;
};

struct LayerChain {
    int16_t device = 0;
    ModuleSource source = ModuleSource::None;  // recorded or inferred
    std::vector<ChainLayer> layers;            // in forward order (their number)
    // Layers of several groups (a ResNet's stages, an encoder's and a
    // decoder's stacks) share numbers: then each index is the layer's
    // position in forward order, which layers:LIST takes.
    bool indices_are_positions = false;
    std::vector<ChainStep> steps;
    // What finding them took for granted ("layer h.3 ran twice in step 2: taken
    // as one span"), for the prediction's list of assumptions.
    std::vector<std::string> assumptions;
};

// The layers of `device`, each with its forward span in every training
// step: the largest group of sibling modules whose last path component ends
// in a number (the elements of a ModuleList or Sequential, the trainer's
// blocks), or one of these joined groups when it is larger:
//  - stages of blocks: a group whose members are all Sequentials of
//    numbered blocks and nothing else (a ResNet's layer1 … layer4): every
//    stage's blocks, in forward order;
//  - stacks side by side: groups of one root whose parents share their last
//    name and lie in no numbered module (encoder.layers, decoder.layers): all
//    of them, in forward order.
// A group at least half of whose members (2 or more) hold groups at the
// same place (a Sequential(stem, stage1, …) body, layers holding experts)
// is the chain rather than what its members hold. An error, with a reason
// a user can act on, when the trace has no modules, no group of at least 2
// such layers, or no step with both a forward and a backward.
Result<LayerChain> findLayerChain(const Trace& trace, int16_t device);

}  // namespace memscope
