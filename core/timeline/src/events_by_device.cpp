#include "memscope/timeline/events_by_device.h"

#include <algorithm>

#include "memscope/base/page_warmer.h"
#include "memscope/base/parallel_for.h"

namespace memscope::detail {
namespace {

constexpr size_t kOrdinals = size_t(1) << 16;  // every int16 device, by its bits

// Below this many events one thread counts them faster than two start.
constexpr size_t kParallelEvents = size_t(1) << 20;

// Events per device ordinal (as uint16), counted over [begin, end).
void countDevices(const Trace& trace, size_t begin, size_t end, std::vector<uint64_t>& counts) {
    counts.assign(kOrdinals, 0);
    for (size_t i = begin; i < end; ++i) ++counts[size_t(uint16_t(trace.events[i].device))];
}

// Whether the trace's events are in time order (equal times in any order),
// read on two cores for a large trace.
bool inTimeOrder(const Trace& trace) {
    const size_t n = trace.events.size();
    const unsigned parts = n >= kParallelEvents ? std::min(hardwareThreads(), 2u) : 1u;
    std::vector<char> ordered(parts, 1);
    parallelFor(parts, parts, [&](size_t p) {
        // Each part checks its events against the one before, the first
        // part's first excepted.
        const size_t begin = std::max<size_t>(1, n * p / parts), end = n * (p + 1) / parts;
        bool in_order = true;
        for (size_t i = begin; i < end; ++i)
            in_order &= trace.events[i].time >= trace.events[i - 1].time;
        ordered[p] = in_order;
    });
    return std::all_of(ordered.begin(), ordered.end(), [](char c) { return c != 0; });
}

}  // namespace

// Counted first, then filled into vectors of their final size: grown by
// push_back, the indexes of a 1 GB snapshot's 4.6 million events touched
// twice their size in fresh pages and were copied a dozen times. Whether a
// device's events are already in time order (nearly always) is noted on the
// way, instead of in a second pass over the events. A device with every
// event, in time order (one device, as nearly every snapshot has), needs no
// list at all: a read of the events' times says so.
std::vector<EventIndexList> eventsByDevice(const Trace& trace, const std::vector<int16_t>& devices,
                                           const std::vector<uint64_t>& counts) {
    std::vector<EventIndexList> lists(devices.size());
    for (size_t d = 0; d < devices.size(); ++d) {
        const uint64_t count =
            counts.size() == kOrdinals ? counts[size_t(uint16_t(devices[d]))] : 0;
        if (count == 0 || count != trace.events.size()) continue;
        // The only device with events; the rest have none (seen by their
        // segments alone).
        if (!inTimeOrder(trace)) break;
        lists[d] = EventIndexList::all(trace.events.size());
        return lists;
    }
    std::vector<int> slot(kOrdinals, -1);
    for (size_t i = 0; i < devices.size(); ++i) slot[size_t(uint16_t(devices[i]))] = int(i);
    std::vector<std::vector<uint64_t>> out(devices.size());
    std::vector<std::span<const std::byte>> room;
    for (size_t d = 0; d < devices.size(); ++d) {
        const uint64_t count =
            counts.size() == kOrdinals ? counts[size_t(uint16_t(devices[d]))] : 0;
        out[d].reserve(count);
        room.push_back(PageWarmer::unfilled(out[d], count));
    }
    PageWarmer warmer;  // faults the indexes' pages in on another core
    warmer.warm(std::move(room));
    std::vector<int64_t> last(devices.size(), INT64_MIN);
    std::vector<char> in_order(devices.size(), 1);
    for (uint64_t i = 0; i < trace.events.size(); ++i) {
        const Event& e = trace.events[i];
        const int s = slot[size_t(uint16_t(e.device))];
        if (s < 0) continue;
        out[size_t(s)].push_back(i);
        in_order[size_t(s)] &= e.time >= last[size_t(s)];
        last[size_t(s)] = e.time;
    }
    warmer.stop();
    for (size_t d = 0; d < devices.size(); ++d) {
        if (in_order[d]) continue;
        std::stable_sort(out[d].begin(), out[d].end(), [&](uint64_t a, uint64_t b) {
            return trace.events[a].time < trace.events[b].time;
        });
    }
    for (size_t d = 0; d < devices.size(); ++d) lists[d] = EventIndexList(std::move(out[d]));
    return lists;
}

// The devices are read off the same count (Trace::devices would be one more
// pass over the events), on two cores for a large trace.
DeviceOrder deviceOrder(const Trace& trace) {
    const size_t n = trace.events.size();
    const unsigned parts = n >= kParallelEvents ? std::min(hardwareThreads(), 2u) : 1u;
    std::vector<std::vector<uint64_t>> part_counts(parts);
    parallelFor(parts, parts, [&](size_t p) {
        countDevices(trace, n * p / parts, n * (p + 1) / parts, part_counts[p]);
    });
    std::vector<uint64_t>& counts = part_counts[0];
    for (size_t p = 1; p < parts; ++p)
        for (size_t d = 0; d < kOrdinals; ++d) counts[d] += part_counts[p][d];
    std::vector<char> seen(kOrdinals, 0);
    for (size_t d = 0; d < kOrdinals; ++d) seen[d] = counts[d] > 0;
    if (trace.allocator_state)
        for (const Segment& s : trace.allocator_state->segments)
            seen[size_t(uint16_t(s.device))] = 1;
    DeviceOrder order;
    // In Trace::devices' order: by value, from INT16_MIN.
    for (int d = INT16_MIN; d <= INT16_MAX; ++d)
        if (seen[size_t(uint16_t(int16_t(d)))]) order.devices.push_back(int16_t(d));
    order.events = eventsByDevice(trace, order.devices, counts);
    return order;
}

}  // namespace memscope::detail
