#pragma once
// The per-device figures `memscope-cli summary` prints; computed from a Trace and
// its Timeline so the CLI, the GUI and the tests agree on one definition.

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "memscope/allocator/allocator_model_replay.h"
#include "memscope/analysis/oom_report.h"
#include "memscope/base/task_context.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/events_by_device.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

struct DeviceSummary {
    std::optional<uint64_t> segments;             // end-state segment count
    std::optional<uint64_t> reserved_bytes;       // end-state, or last reserved value
    std::optional<uint64_t> final_active_bytes;   // end-state active blocks, or live at end
    std::optional<uint64_t> peak_reserved_bytes;  // the reserved curve's maximum
    uint64_t trace_entries = 0;
    uint64_t alloc_count = 0;
    uint64_t free_completed_count = 0;
    uint64_t segment_alloc_count = 0;
    uint64_t oom_count = 0;
    int64_t peak_active_bytes = 0;
    int64_t peak_event_index = -1;
    std::optional<int64_t> peak_time_us;   // null without a clock or when peak is initial
    std::optional<int64_t> first_time_us;  // null without a clock or without events
    std::optional<int64_t> last_time_us;
    std::array<int64_t, kCategoryCount> categories_at_peak{};
    PhasePeaks phase_peaks;  // per training phase and step
    // One per out-of-memory event, or one of the end state of a snapshot
    // holding nothing else (oom_report.h).
    std::vector<OomReport> ooms;
    // The caching-allocator model's replay of the device's requests from the
    // cache the trace began with, beside what the trace recorded (a CUDA
    // device with allocations, once addAllocatorModels filled it).
    std::optional<AllocatorModelRun> allocator_model;
};

struct TraceSummary {
    std::map<int16_t, DeviceSummary> devices;
};

TraceSummary summarize(const Trace& trace, const Timeline& timeline);

// Fills each CUDA device's allocator_model: a replay of its requests through
// the caching-allocator model, about 0.6x the time of opening the file
// (memscope-bench-allocator), so only what asks for it pays (summary; not
// rank digests or record's own report).
void addAllocatorModels(TraceSummary& summary, const Trace& trace, const Timeline& timeline,
                        const TaskContext& ctx = {});

// Allocator-model replays made while the file opened, by device, to be
// completed by addAllocatorModels (a device's failure falls back to a
// replay then).
struct EarlyAllocatorModels {
    std::map<int16_t, Result<AllocatorModelRun>> runs;
};

// What a summary runs beside inference (OpenOptions::beside_inference): the
// replay of each device whose memory went through a caching allocator, into
// `out`, which must outlive the work. Reads the trace's settings and
// metadata now, on the calling thread; the work reads only what
// replayAllocatorModelInOrder does.
std::function<void()> allocatorModelsBesideInference(const Trace& trace,
                                                     const detail::DeviceOrder& order,
                                                     EarlyAllocatorModels& out);

// As addAllocatorModels, taking each device's replay from `early` where it
// has one.
void addAllocatorModels(TraceSummary& summary, const Trace& trace, const Timeline& timeline,
                        EarlyAllocatorModels& early, const TaskContext& ctx = {});

}  // namespace memscope
