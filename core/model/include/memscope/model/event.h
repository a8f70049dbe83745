#pragma once
// One allocator event. Small and trivially copyable: a trace holds millions.

#include <cstdint>
#include <type_traits>

#include "memscope/model/types.h"

namespace memscope {

struct Event {
    // Nanoseconds since the Unix epoch, or the event's index when the trace's
    // TimeBase is EventIndex (sources without clocks, e.g. 2.1-era snapshots).
    int64_t time = 0;
    uint64_t address = 0;  // for Oom: unused (device_free is an EventAttribute)
    uint64_t size = 0;     // bytes; for Snapshot: total active bytes then
    StackId stack;         // 0 = no stack captured
    PhaseId phase;         // innermost phase active at the event; 0 = none
    uint32_t stream = 0;   // index into Trace::streams
    int16_t device = 0;    // CUDA ordinal; -1 = host
    EventKind kind = EventKind::Alloc;
    Category category = Category::Unknown;
};
static_assert(std::is_trivially_copyable_v<Event>);
static_assert(sizeof(Event) == 40, "Event layout changed: check memory budgets");

}  // namespace memscope
