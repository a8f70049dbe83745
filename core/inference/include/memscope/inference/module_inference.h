#pragma once
// Module scopes for traces that recorded none (module_scopes.h): where in the
// model memory was taken, found from what the trace does have.
//
// - A trainer's `block k` phases (memscope-train, and its traces converted to
//   snapshots) are its layers: module "block k", recorded, since the trainer
//   recorded the blocks. Forward, recompute or backward from the phases
//   around each block.
// - Else the Python frames of the allocations (module_levels.h reads the
//   module calls in a stack): the same forward code location entered again
//   and again from one call site is one layer class, each entry one layer
//   instance, numbered in order within its parent's call ("…forward@model:120.3":
//   the fourth block called at model.py:120). A new instance starts when the
//   callee's progress goes back (its line falls below the previous
//   allocation's at that level: one line can allocate several times) or when
//   an allocation came from outside it in between (the call returned). A
//   scope runs from an instance's first allocation to its last (end
//   exclusive: last + 1). Recompute (stacks through torch.utils.checkpoint's
//   backward) walks the forward's classes, and its instances take the
//   forward's numbers in reverse (backward recomputes the last layer first).
//   Marked inferred (ModuleSource::Inferred).
//
// What the frames do not show stays without a module: backward (the
// autograd engine's allocations carry no module frames), the optimizer.
// Scopes carry no device: a trace of several devices running modules at the
// same time (DataParallel) gets overlapping scopes.

#include <cstddef>

#include "memscope/base/task_context.h"
#include "memscope/model/trace.h"

namespace memscope {

struct ModuleInferenceReport {
    ModuleSource source = ModuleSource::None;  // of the trace's modules afterwards
    size_t modules = 0;                        // modules with at least one scope
    size_t layers = 0;                         // distinct layerOf() of those
    size_t scopes = 0;
    // Levels left out for the caps (a hostile trace's depth or breadth).
    bool capped = false;
};

// Adds module scopes where the trace has none (modules.source == None): from
// the trainer's block phases, else from Python frames. A trace that has
// modules is left as it is (only counted).
ModuleInferenceReport inferModules(Trace& trace, const TaskContext& ctx = {});

// The same counts for a trace as it stands.
ModuleInferenceReport countModules(const Trace& trace);

}  // namespace memscope
