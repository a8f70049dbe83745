#pragma once
// Labels for traces that carry none: training steps and phases, and each
// allocation's category, inferred from what any trace holds (allocations,
// frees, sizes, times, stack frames, recorded phases). Everything found here
// is marked inferred (Phase::inferred, Trace::inferred_categories), so views
// and reports can tell it from what a producer recorded; recorded facts are
// never replaced.
//
// Steps, when the trace has none (and no forward or backward either), come
// from the optimizer's recorded steps where the trace has them: PyTorch's
// optimizers wrap step() in record_function("Optimizer.step#…"), so every
// training snapshot of PyTorch >= 2.5 carries them, and each closes a
// training step (ranges with no forward between them, an optimizer run per
// parameter inside backward, close one). Else from the trace's repetition:
// windows of consecutive allocator events (kind, size, stack) that recur once
// in every training step, evenly spaced and spanning most of the trace; of
// the step counts such windows suggest, the one under which most windows
// recur at the same place one step later wins (a layer count it is a
// multiple of yields to it). Else, where frames show a backward, the trace
// is one step. Inside each step, forward, backward and the optimizer come
// from stack frames where the trace has them (module forward, autograd,
// optimizer step) and otherwise from lifetimes: bytes born and freed in the
// step (less what its last tenth frees: gradients, inputs) peak where forward
// turns into backward, or backward has begun by the first free of an old
// allocation; it ends with the last free of what was alive at the turn (or
// where the recorded optimizer begins). Runs of backward that replay
// forward's allocations are recompute phases. Recorded phases stay as they
// are; their events keep them unless they span a whole inferred phase.
//
// Blocks alive before the trace (history switched on after warm-up) are told
// apart by the training's structure: each gradient the trace shows stands for
// a parameter of its size, and Adam-like optimizers keep two more tensors of
// that size, momentum one; sizes that fit no such sets stay unknown.
//
// Categories combine the frames' evidence with each allocation's lifetime
// relative to those phases (CategoryRule names each rule).

#include <cstdint>
#include <string>

#include "memscope/base/task_context.h"
#include "memscope/inference/module_inference.h"
#include "memscope/inference/op_inference.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

// Where a trace's steps came from.
enum class StepSource : uint8_t {
    None = 0,      // no steps: none recorded and no repetition found
    Recorded = 1,  // the producer's phases (or the trace's own markers)
    Inferred = 2,  // memscope found them (repetition, frames, profiler ops)
};
std::string_view toString(StepSource source);  // "none", "recorded", "inferred"

struct InferenceReport {
    StepSource steps_source = StepSource::None;
    size_t steps = 0;                  // step phases of the trace after inference
    bool phases_from_frames = false;   // inferred phases placed by stack frames
    uint64_t categories_inferred = 0;  // allocations given an inferred category
    uint64_t categories_unknown = 0;   // allocations left unknown (weak evidence)
    ModuleInferenceReport modules;     // the trace's modules: recorded, or found here
    OpInferenceReport ops;             // the trace's ops: recorded, or found in C++ frames
};

// Fills in what the trace lacks: phases when it has none, module scopes when
// it has none (module_inference.h, after the phases: a trainer's blocks are
// phases), ops when it has none (op_inference.h, from C++ frames), then the
// category of every allocation recorded as Unknown. Cancellable (returns early
// with whatever was complete; the trace stays consistent).
InferenceReport inferMissingLabels(Trace& trace, const TaskContext& ctx = {});
// The same with the trace's device order computed by the caller (who passes
// it on to Timeline::build after): inference adds phases and categories, not
// events, so the order stays the trace's.
InferenceReport inferMissingLabels(Trace& trace, const detail::DeviceOrder& order,
                                   const TaskContext& ctx);

// The source of a trace's steps as it stands (after inference, if any ran).
StepSource stepSource(const Trace& trace);

// The rule that gave an interval its category (Recorded for a recorded one):
// its alloc's, else its free's, else its end-state block's. Blocks are looked
// up by address once, at construction.
class CategoryRuleLookup {
public:
    explicit CategoryRuleLookup(const Trace& trace);
    CategoryRule of(const AllocationInterval& interval) const;

private:
    const Trace& trace_;
    std::vector<std::pair<uint64_t, CategoryRule>> blocks_;  // active blocks by address
};

// Why an interval of `timeline` has its category: "gradient (inferred): born
// in backward, …; born at 1.234 s (step 2 / backward), freed at 1.500 s
// (step 2 / optimizer)", times since the timeline's start; for a recorded
// category, "activation (recorded)". Costs no pass over the trace (hover).
std::string explainCategory(const Trace& trace, const DeviceTimeline& timeline,
                            const AllocationInterval& interval);

}  // namespace memscope
