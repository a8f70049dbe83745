#pragma once
// `record --steps A:B` and `--capture-range nvtx:NAME` record part of a run:
// the allocator history is on only then, while the cheap sources (CPU
// capture, CUPTI's segment records) run throughout. The merged trace is cut to
// the range here, and starts with the state that existed then: blocks and
// segments alive at the start appear as allocations at its first moment,
// with their stacks and, as the attribute "allocated_at_ns", when they were
// really allocated (or "before the recording").

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "memscope/base/result.h"
#include "memscope/base/task_context.h"
#include "memscope/model/trace.h"

namespace memscope {

struct RecordedRangeSpec {
    std::optional<std::pair<int32_t, int32_t>> steps;  // first, last (inclusive)
    std::optional<std::string> nvtx;                   // the first range of this name
    // The NVTX range as the hook saw it (torch.cuda.nvtx), where the trace's
    // own phases (CUPTI's NVTX) do not have it.
    std::optional<std::pair<int64_t, int64_t>> nvtx_hint;
    bool empty() const { return !steps && !nvtx; }
};

struct RecordedRange {
    int64_t start = 0;
    int64_t end = 0;
    size_t alive_at_start = 0;  // blocks and segments carried in
    uint64_t alive_bytes = 0;   // their bytes (blocks only)
};

// Finds the range in `trace` (its step phases "step N", or the NVTX phase),
// cuts the trace to it and records it in the metadata ("recorded_range").
// An error when the range never began (the job ended before step A, or no
// NVTX range of that name): the message says what the trace holds instead.
Result<RecordedRange> applyRecordedRange(Trace& trace, const RecordedRangeSpec& spec,
                                         const TaskContext& ctx = {});

}  // namespace memscope
