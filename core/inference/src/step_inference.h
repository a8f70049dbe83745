#pragma once
// Steps and training phases for a trace that recorded none (inference.h has
// the method): found on one device's events, added as inferred phases, and
// set as those events' phases.

#include <cstdint>
#include <vector>

#include "memscope/base/task_context.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/event_index_list.h"

namespace memscope::detail {

class TrainingActivity;

// Positions [begin, end) in a device's time-ordered event list.
struct Window {
    size_t begin = 0;
    size_t end = 0;
};

// Steps from repetition: windows of consecutive events whose (kind, size,
// stack) recur once per step, evenly spaced, covering at least half the
// events; the step count under which most windows recur one step later.
// Empty when no such repetition exists.
std::vector<Window> findRepeatedSteps(const Trace& trace, const EventIndexList& order,
                                      const TaskContext& ctx);

// A training step to label: its positions, and where its forward and
// backward end ([step.begin, train_end)). Where the trace recorded the
// step's optimizer (an Optimizer.step range), train_end is where it began
// and no optimizer phase is inferred; otherwise train_end == step.end.
struct StepWindow {
    Window step;
    size_t train_end = 0;
    bool optimizer_recorded = false;
};
std::vector<StepWindow> unanchored(const std::vector<Window>& steps);

// Steps closed by the optimizer's recorded steps (Optimizer.step# ranges of
// `device`, PyTorch >= 2.5 writes them): each step ends with the range that
// closes it. Ranges close a step unless they follow the previous one without
// a forward between them (an optimizer run per parameter inside backward):
// a forward is a rise of live bytes at least half the largest such rise.
// What follows the last range becomes a step of its own only when it holds
// at least a quarter of a step's allocations (a forward cut short); less
// (zero_grad) stays in the last step. Empty without such ranges.
std::vector<StepWindow> stepsFromOptimizerRanges(const Trace& trace, const EventIndexList& order,
                                                 int16_t device);

// Adds a step phase per window and, inside each, forward / backward /
// optimizer phases and recompute phases inside backward (from frames where
// enough events carry them, else from lifetimes: `free_of[i]` is the trace
// index of the free ending alloc i, or kNoEvent). Phases are marked inferred
// and apply to `device` (-1 = all). An event keeps its recorded phase
// unless that phase spans the whole inferred one (an outer range). Returns
// whether frames placed the phases.
bool addStepPhases(Trace& trace, const EventIndexList& order, const std::vector<StepWindow>& steps,
                   const std::vector<uint64_t>& free_of, TrainingActivity& activity,
                   int16_t device);

}  // namespace memscope::detail
