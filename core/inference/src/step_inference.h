#pragma once
// Steps and training phases for a trace that recorded none (inference.h has
// the method): found on one device's events, added as inferred phases, and
// set as those events' phases.

#include <cstdint>
#include <vector>

#include "memscope/base/task_context.h"
#include "memscope/model/trace.h"

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
std::vector<Window> findRepeatedSteps(const Trace& trace, const std::vector<uint64_t>& order,
                                      const TaskContext& ctx);

// Adds a step phase per window and, inside each, forward / backward /
// optimizer phases and recompute phases inside backward (from frames where enough events carry them, else from
// lifetimes: `free_of[i]` is the trace index of the free ending alloc i, or
// kNoEvent). Phases are marked inferred and apply to `device` (-1 = all).
// Returns whether frames placed the phases.
bool addStepPhases(Trace& trace, const std::vector<uint64_t>& order,
                   const std::vector<Window>& steps, const std::vector<uint64_t>& free_of,
                   TrainingActivity& activity, int16_t device);

}  // namespace memscope::detail
