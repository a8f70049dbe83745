#pragma once
// Which allocations one run has that another lacks (`compare --allocations`):
// what is alive in A and in B at matched moments (the peaks, or a step and
// phase's peak), matched by site, then by size, split into only-A, both and
// only-B with counts and bytes.
//
// A site is the stack's user frames (frames.h), each compared by function,
// file name (its basename, not the absolute path, so that two checkouts of
// one script match) and line; a stack without user frames is its site frame
// (a library frame), and without either "(no stack)". Within a site, sizes
// pair off equal sizes first; what is left is only-A or only-B. So the
// only-A bytes minus the only-B bytes are A's live bytes minus B's.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memscope/base/result.h"
#include "memscope/model/trace.h"
#include "memscope/model/training_phase.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

// "peak", "step:N" (the step's peak) or "step:N:forward|backward|optimizer".
struct AllocationMoment {
    bool peak = true;
    int32_t step = -1;  // as the trace numbers its steps (their ordinal when unknown)
    std::optional<TrainingPhase> phase;
};
Result<AllocationMoment> parseAllocationMoment(std::string_view text);
std::string toString(const AllocationMoment& moment);

struct DiffGroup {
    std::string site;                 // "forward  (model.py:30)", "(no stack)"
    std::vector<std::string> frames;  // the site's frames, outermost first
    int64_t only_a_bytes = 0, only_b_bytes = 0, both_bytes = 0;
    uint32_t only_a_count = 0, only_b_count = 0, both_count = 0;
    // The group's allocations alive at the moment on each side (indexes into
    // DeviceTimeline::intervals, in the order the moment lists them), so a
    // view can point at them: A's add up to only_a + both bytes, B's to
    // only_b + both.
    std::vector<uint32_t> a_intervals, b_intervals;
};

struct DiffSide {
    int16_t device = 0;
    int64_t time = 0;        // the moment (Event::time units)
    int64_t live_bytes = 0;  // alive then
};

struct AllocationDiff {
    AllocationMoment moment;
    DiffSide a, b;
    int64_t only_a_bytes = 0, only_b_bytes = 0, both_bytes = 0;
    uint32_t only_a_count = 0, only_b_count = 0, both_count = 0;
    // Largest |only_a - only_b| first, then most bytes in both.
    std::vector<DiffGroup> groups;
};

// The moment of a device: its peak, or the peak within a step (or one of
// its phases); an error names a step or phase the device lacks.
Result<DiffSide> momentOf(const DeviceTimeline& timeline, const AllocationMoment& moment);

// A's device `a_timeline` against B's `b_timeline` at the moment.
Result<AllocationDiff> diffAllocations(const Trace& a, const DeviceTimeline& a_timeline,
                                       const Trace& b, const DeviceTimeline& b_timeline,
                                       const AllocationMoment& moment);

}  // namespace memscope
