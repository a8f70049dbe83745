#pragma once
// A trace's allocations and frees on one device, replayed through the
// caching-allocator model (caching_allocator.h): what the allocator would
// reserve under the recorded settings or others, held beside what the trace
// recorded. The replay starts from the cache the trace began with: where the
// trace has an end-of-recording state, its segments and live blocks at the
// first event are rebuilt backwards (allocator_replay.h), so a recording made
// after warm-up starts warm; without one, it starts empty.
//
// The trace's own segment events are not fed to the model, except that a
// segment freed or unmapped in the recording (torch.cuda.empty_cache, or the
// allocator's retry after a failed cudaMalloc) empties the model's cache at
// the same moment: the model cannot know when the user called empty_cache.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "memscope/allocator/allocator_settings.h"
#include "memscope/allocator/caching_allocator.h"
#include "memscope/base/result.h"
#include "memscope/base/task_context.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/allocator_replay.h"
#include "memscope/timeline/step_series.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

// The cache the replay begins with.
enum class AllocatorStart : uint8_t {
    // The one the trace began with (rebuilt from its end state), or
    // `start_state`: what replaying the recorded run is held against.
    RecordedCache = 0,
    // A fresh process's: the blocks live at the first event placed from an
    // empty cache, in address order, and nothing else cached. What a run under
    // another policy or settings starts from, since its cache would have grown
    // under that policy, not the measured one.
    FreshCache = 1,
};

struct AllocatorModelOptions {
    AllocatorStart start = AllocatorStart::RecordedCache;
    // Applied on top of the trace's recorded settings (or the defaults).
    std::optional<AllocatorSettings> settings;
    // Bytes the allocator may reserve on the device; none = unlimited.
    std::optional<uint64_t> device_capacity;
    // RecordedCache: the cache at the first event; none = rebuilt from the trace's own end
    // state (or empty without one). A predicted run passes its measured run's.
    std::optional<std::vector<ReplaySegment>> start_state;
    // Replay device-local events [0, stop_before); -1 = all.
    int64_t stop_before = -1;
    // Empty the model's cache where the recording freed segments.
    bool mirror_cache_releases = true;
    // Keep reserved bytes over time (x = Event::time), for views.
    bool keep_series = false;
    // Keep the model's state at the end (the allocator panel of a predicted run).
    bool keep_end_state = false;
    // After the events replayed, one more request (the one an OOM event says
    // failed): whether the model serves it is the run's final_request_served.
    struct FinalRequest {
        uint64_t size = 0;
        uint64_t stream = 0;  // raw stream value
    };
    std::optional<FinalRequest> final_request;
    // Called with the device-local index of the event that made the model
    // act: each segment event it makes, and the address it gives each
    // allocation (modelled_trace.h rewrites a trace with them).
    std::function<void(size_t event_index, const ModelSegmentEvent&)> on_segment_event;
    std::function<void(size_t event_index, uint64_t address)> on_placement;
    // FreshCache: where each block live at the start (by its recorded address) was placed.
    std::function<void(uint64_t recorded, uint64_t address)> on_start_placement;
};

// What the trace itself recorded, for comparison.
struct RecordedAllocatorFigures {
    bool has_segment_events = false;  // segment_alloc/free/map/unmap in the trace
    uint64_t reserved_peak_bytes = 0;
    uint64_t segment_allocs = 0;
    uint64_t segment_maps = 0;
};

// The first request the model could not serve at the device capacity.
struct AllocatorModelFailure {
    int64_t event_index = -1;  // device-local
    uint64_t trace_event = kNoEvent;
    int64_t time = 0;
    uint64_t requested_bytes = 0;
    uint64_t reserved_bytes = 0;  // the model's, when it failed
    uint64_t allocated_bytes = 0;
    uint64_t largest_free_block = 0;
};

struct AllocatorModelRun {
    int16_t device = 0;
    AllocatorSettings settings;
    AllocatorSettingsSource settings_source = AllocatorSettingsSource::Defaults;
    bool settings_overridden = false;  // the user's settings, not the trace's
    std::optional<uint64_t> device_capacity;
    AllocatorStart start = AllocatorStart::RecordedCache;
    bool warm_start = false;  // began from a rebuilt (recorded) cache
    uint64_t start_reserved_bytes = 0;
    uint64_t reserved_peak_bytes = 0;
    int64_t reserved_peak_time = 0;
    uint64_t allocated_at_peak_bytes = 0;  // blocks handed out then (rounded sizes)
    uint64_t largest_free_block_at_peak_bytes = 0;
    uint64_t end_reserved_bytes = 0;
    uint64_t segment_allocs = 0;
    uint64_t segment_frees = 0;
    uint64_t segment_maps = 0;
    uint64_t segment_unmaps = 0;
    uint64_t cache_releases = 0;  // mirrored empty_cache moments
    uint64_t requests = 0;
    std::optional<AllocatorModelFailure> failure;
    // With a final request: whether it was served, and the reserved bytes after.
    std::optional<bool> final_request_served;
    uint64_t reserved_after_final_request = 0;
    RecordedAllocatorFigures recorded;
    StepSeries reserved;                           // when keep_series
    std::optional<AllocatorSnapshotAt> end_state;  // when keep_end_state
    std::vector<std::string> notes;                // what the model could not know

    // reserved − allocated at the reserved peak: the cache's share then.
    uint64_t fragmentationAtPeak() const {
        return reserved_peak_bytes > allocated_at_peak_bytes
                   ? reserved_peak_bytes - allocated_at_peak_bytes
                   : 0;
    }
};

// Whether the device's memory went through PyTorch's CUDA caching allocator: a
// CUDA device (not the host, -1), and not a run the trainer made on the CPU
// (metadata device "cpu"). The model is about such devices only.
bool hasCachingAllocator(const Trace& trace, int16_t device);

// O(device events × log blocks). Progress by events, cancel honoured.
Result<AllocatorModelRun> replayAllocatorModel(const Trace& trace, const DeviceTimeline& timeline,
                                               const AllocatorModelOptions& options = {},
                                               const TaskContext& ctx = {});

// The replay from the device's events in time order alone, without a
// timeline: what the summary runs beside inference while a file opens
// (OpenOptions::beside_inference). It reads the trace's events, streams and
// end state, and no category or metadata (inference may be writing them on
// another thread): the settings come resolved, the start is the recorded
// cache, and no end state is kept. completeAllocatorModel then adds what
// needs the timeline; together they equal replayAllocatorModel.
Result<AllocatorModelRun> replayAllocatorModelInOrder(const Trace& trace, int16_t device,
                                                      const EventIndexList& order,
                                                      const ResolvedAllocatorSettings& settings,
                                                      const AllocatorModelOptions& options = {},
                                                      const TaskContext& ctx = {});
// The recorded figures and the notes that need the device's timeline.
void completeAllocatorModel(AllocatorModelRun& run, const Trace& trace,
                            const DeviceTimeline& timeline);

// The cache at the trace's first event on that device (empty without an end
// state): what a predicted run of the same job starts from.
Result<std::vector<ReplaySegment>> allocatorStartState(const Trace& trace,
                                                       const DeviceTimeline& timeline,
                                                       const TaskContext& ctx = {});

// "model 19.3 GiB reserved at peak, 287 segment allocations; recorded 19.7 GiB,
// 289 (−2.0%, −0.7%)": one line for the summary.
std::string describeAllocatorModel(const AllocatorModelRun& run);

// Signed relative difference of model against recorded, in percent; 0 when
// both are 0, nullopt when only the recorded one is.
std::optional<double> relativeDifference(uint64_t model, uint64_t recorded);

}  // namespace memscope
