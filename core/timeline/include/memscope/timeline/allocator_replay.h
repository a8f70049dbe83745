#pragma once
// The allocator's segments and blocks at a chosen moment (memory_viz's
// Allocator State History). Where the trace has an end-of-recording
// AllocatorState, that state is replayed backwards through the device's events
// to the moment, which is exact even when the trace's ring buffer dropped its
// beginning; without one, the events are replayed forwards from empty.

#include <cstdint>
#include <string>
#include <vector>

#include "memscope/base/result.h"
#include "memscope/base/task_context.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

struct ReplayBlock {
    uint64_t address = 0;
    uint64_t size = 0;
    BlockState state = BlockState::ActiveAllocated;  // inactive space is the gaps between blocks
    StackId stack;
    Category category = Category::Unknown;
};

struct ReplaySegment {
    uint64_t address = 0;
    uint64_t size = 0;
    uint64_t stream = 0;
    bool expandable = false;
    std::vector<ReplayBlock> blocks;  // by address, inside [address, address + size)
    uint64_t activeBytes() const;
};

struct AllocatorSnapshotAt {
    int64_t time = 0;          // the moment asked for (Event::time units)
    int64_t event_index = -1;  // device-local index of the last event applied; -1 = before all
    bool backwards = false;    // replayed from the end state
    std::vector<ReplaySegment> segments;    // by address
    std::vector<ReplayBlock> loose_blocks;  // live blocks outside every known segment
    uint64_t reserved_bytes = 0;            // sum of segment sizes
    uint64_t active_bytes = 0;              // sum of blocks (inside segments and loose)
    uint64_t largest_free_gap = 0;          // largest inactive span inside one segment
    std::string note;                       // what the replay could not know, for the view to show
};

// State of `timeline`'s device after every event with Event::time <= time.
// O(device events); reports progress by events and honours cancel.
Result<AllocatorSnapshotAt> allocatorStateAt(const Trace& trace, const DeviceTimeline& timeline,
                                             int64_t time, const TaskContext& ctx = {});

// The state of `device` after the device-local event `last` (-1 = before
// all) of `order`, its events in time order, without a timeline: what runs
// beside inference while a file opens. With `categories` false no category
// is read (inference may be writing them on another thread): the blocks are
// Category::Unknown. `time` is the last event's (before the first: its time
// less one); the note on blocks live before recording is allocatorStateAt's.
Result<AllocatorSnapshotAt> allocatorStateAfter(const Trace& trace, int16_t device,
                                                const EventIndexList& order, int64_t last,
                                                bool categories, const TaskContext& ctx = {});

}  // namespace memscope
