#pragma once
// The timeline derived from a Trace, per device: live and reserved bytes over
// time, live bytes per category, allocation intervals and the peak.
//
// "Live" is what PyTorch memory_viz's Active Memory Timeline shows: an `alloc`
// pairs with the next `free_completed` at the same address; a `free_completed`
// with no earlier `alloc`, and a block still active at the end of recording that
// the trace never allocated, were live from the start ("ghost" allocations).

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "memscope/base/result.h"
#include "memscope/base/task_context.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/events_by_device.h"
#include "memscope/timeline/phase_peaks.h"
#include "memscope/timeline/step_series.h"

namespace memscope {

inline constexpr uint64_t kNoEvent = std::numeric_limits<uint64_t>::max();

struct AllocationInterval {
    int64_t start = 0;  // time of the alloc; the timeline's start for ghosts
    int64_t end = 0;    // time of free_completed; the timeline's end if never freed
    uint64_t address = 0;
    uint64_t size = 0;
    uint64_t alloc_event = kNoEvent;  // index into Trace::events; kNoEvent = ghost
    uint64_t free_event = kNoEvent;   // kNoEvent = still live at the end
    StackId stack;
    PhaseId phase;
    Category category = Category::Unknown;
    bool category_inferred = false;  // memscope inferred the category (inference.h)
};

// Whether a category's bytes were recorded by the producer, inferred by
// memscope, or both (a trace whose recorded labels left gaps).
struct CategorySources {
    bool recorded = false;
    bool inferred = false;
};

struct StackBytes {
    StackId stack;
    uint64_t bytes = 0;
    uint32_t count = 0;
};

struct Peak {
    int64_t bytes = 0;
    int64_t time = 0;                 // Event::time of the peak event (timeline start if initial)
    int64_t event_index = -1;         // index within this device's events; -1 = before the first
    uint64_t trace_event = kNoEvent;  // index into Trace::events
    PhaseId phase;
    std::array<int64_t, kCategoryCount> by_category{};
    std::vector<StackBytes> by_stack;      // largest first
    std::vector<uint32_t> live_intervals;  // indexes into intervals, largest first
};

struct DeviceTimeline {
    int16_t device = 0;
    int64_t start = 0;  // x of the first event (0 when there are none)
    int64_t end = 0;    // x of the last event
    // x = Event::time. One point per event that changed the value.
    StepSeries live;
    std::array<StepSeries, kCategoryCount> live_by_category;
    std::array<CategorySources, kCategoryCount> category_sources;  // of the bytes above
    StepSeries reserved;
    std::vector<AllocationInterval> intervals;  // sorted by start
    // device-local event index i -> Trace::events index; lets views map back.
    EventIndexList trace_events;
    Peak peak;
    // Ghost bytes live from the start of the timeline.
    int64_t initial_live = 0;
    // Peaks within each training phase and step (empty without phases).
    PhasePeaks phase_peaks;

    // Intervals live at x (start <= x < end, or never freed), largest first.
    // Skips whole blocks of intervals that all ended by x, so a hover costs
    // about the number of live intervals, not the number of intervals.
    std::vector<uint32_t> liveAt(int64_t x) const;

    // For liveAt: the latest end (INT64_MAX while live at the end) of each
    // block of kIntervalBlock consecutive intervals.
    static constexpr size_t kIntervalBlock = 64;
    std::vector<int64_t> interval_block_end;
};

struct TimelineOptions {
    size_t peak_top_stacks = 20;
};

class Timeline {
public:
    static Result<std::shared_ptr<const Timeline>> build(const Trace& trace,
                                                         const TaskContext& ctx = {},
                                                         const TimelineOptions& options = {});
    // The same from the trace's device order, computed before (by the caller,
    // which also gave it to inference): it must be the trace's current one.
    static Result<std::shared_ptr<const Timeline>> build(const Trace& trace,
                                                         detail::DeviceOrder order,
                                                         const TaskContext& ctx,
                                                         const TimelineOptions& options);

    const std::vector<DeviceTimeline>& devices() const { return devices_; }
    const DeviceTimeline* device(int16_t id) const;
    // The device with the highest peak of live bytes (the first of equal
    // ones): what a run's summary, prediction or comparison is about when
    // no device is named. nullptr without devices.
    const DeviceTimeline* highestPeakDevice() const;

private:
    std::vector<DeviceTimeline> devices_;
};

}  // namespace memscope
