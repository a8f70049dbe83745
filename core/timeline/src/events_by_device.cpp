#include "memscope/timeline/events_by_device.h"

#include <algorithm>

namespace memscope::detail {

std::vector<std::vector<uint64_t>> eventsByDevice(const Trace& trace,
                                                  const std::vector<int16_t>& devices) {
    std::vector<int> slot(size_t(1) << 16, -1);
    for (size_t i = 0; i < devices.size(); ++i) slot[size_t(uint16_t(devices[i]))] = int(i);
    std::vector<std::vector<uint64_t>> out(devices.size());
    for (uint64_t i = 0; i < trace.events.size(); ++i) {
        const int s = slot[size_t(uint16_t(trace.events[i].device))];
        if (s >= 0) out[size_t(s)].push_back(i);
    }
    for (auto& indexes : out) {
        auto byTime = [&](uint64_t a, uint64_t b) {
            return trace.events[a].time < trace.events[b].time;
        };
        if (!std::is_sorted(indexes.begin(), indexes.end(), byTime))
            std::stable_sort(indexes.begin(), indexes.end(), byTime);
    }
    return out;
}

}  // namespace memscope::detail
