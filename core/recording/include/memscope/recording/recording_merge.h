#pragma once
// One trace per recorded process from what `memscope-cli record` collected:
//   - the PyTorch caching allocator's history (tensor-level alloc /
//     free_requested / free_completed / segment_* / oom entries with Python
//     stacks), dumped by the Python hook one or more times;
//   - CPU allocations from c10's memory-reporting hook (the capture log);
//   - the CUPTI tracer's trace: segment records (which also see allocations
//     made outside PyTorch) and NVTX phases;
//   - the ops that made the allocations (the capture library's
//     at::RecordFunction callback, or the hook's dispatch mode);
//   - the training phases the hook recorded (step k / forward, backward,
//     recompute, optimizer), and what the tensors it saw were (their
//     allocations' categories, as recorded ones).
// All carry CLOCK_REALTIME times (the history in µs), so they merge by time.

#include <optional>
#include <string>
#include <vector>

#include "memscope/base/task_context.h"
#include "memscope/model/trace.h"
#include "memscope/recording/capture_log.h"
#include "memscope/recording/hook_sidecar.h"
#include "memscope/recording/tensor_roles.h"

namespace memscope {

struct HistoryPart {
    Trace trace;                  // an imported snapshot dump
    bool cleared_before = false;  // the history was cleared after the previous dump
};

struct RecordingParts {
    std::optional<HookSidecar> hook;
    std::optional<Trace> cupti;
    std::vector<HistoryPart> histories;  // oldest first
    std::vector<CapturedAllocation> cpu;
    CapturedOps capture_ops;  // the capture library's (MEMSCOPE_OPS=auto)
};

struct MergeStats {
    size_t history_events = 0;
    size_t cupti_events_kept = 0;
    size_t cupti_segments_matched = 0;  // dropped: the history has the same segment
    size_t cupti_tensor_events_dropped = 0;
    size_t cpu_events = 0;
    size_t gaps = 0;
    size_t untimed_histories = 0;  // left out: no timestamps to merge by
    TensorRoleStats tensor_roles;  // the hook's labels (tensor_roles.h)
    size_t op_scopes = 0;          // recorded ops (recorded_ops.h)
};

// A CUPTI segment record and an allocator segment entry are one cudaMalloc
// when kind, device, address and size agree and their times are this close.
inline constexpr int64_t kSegmentMatchWindowNs = 1'000'000'000;

// A history without timestamps is left out with a warning (the caller keeps
// it as a file). Warnings (lost history entries, a profiler that took CUPTI over, a hook
// that could not record) go to ctx.warnings and into the trace as markers.
Result<Trace> mergeRecording(RecordingParts parts, const TaskContext& ctx = {},
                             MergeStats* stats = nullptr);

}  // namespace memscope
