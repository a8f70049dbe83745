#pragma once
// Trace::events indexes of each device, in time order (stable for equal
// times): the order in which the timeline and the inference walk a device.

#include <cstdint>
#include <vector>

#include "memscope/model/trace.h"
#include "memscope/timeline/event_index_list.h"

namespace memscope::detail {

// One list per entry of `devices`, in that order, given the trace's events
// per device ordinal (counts[uint16_t(d)], 65,536 of them). A device that
// holds every event, already in time order, gets EventIndexList::all.
std::vector<EventIndexList> eventsByDevice(const Trace& trace, const std::vector<int16_t>& devices,
                                           const std::vector<uint64_t>& counts);

// The trace's devices (Trace::devices) and each one's events in time order:
// what inference and the timeline both walk. Computed once where both run
// (opening a file), it stays valid while only phases and categories change.
struct DeviceOrder {
    std::vector<int16_t> devices;
    std::vector<EventIndexList> events;  // one list per device
};
DeviceOrder deviceOrder(const Trace& trace);

}  // namespace memscope::detail
