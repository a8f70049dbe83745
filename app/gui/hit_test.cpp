#include "hit_test.h"

#include <algorithm>
#include <unordered_set>

namespace memscope::gui {

std::optional<uint32_t> allocationAt(const DeviceTimeline& tl, StackMode mode, const std::vector<uint32_t>& shown,
                                     int64_t x, double y) {
    if (y < 0) return std::nullopt;
    std::vector<uint32_t> live = tl.liveAt(x);
    auto byStart = [&](uint32_t a, uint32_t b) {
        const AllocationInterval& ia = tl.intervals[a];
        const AllocationInterval& ib = tl.intervals[b];
        if (ia.start != ib.start) return ia.start < ib.start;
        return a < b;
    };
    std::vector<uint32_t> order;
    order.reserve(live.size());
    if (mode == StackMode::ByCategory) {
        std::stable_sort(live.begin(), live.end(), [&](uint32_t a, uint32_t b) {
            const int ca = index(tl.intervals[a].category), cb = index(tl.intervals[b].category);
            return ca != cb ? ca < cb : byStart(a, b);
        });
        order = std::move(live);
    } else {
        const std::unordered_set<uint32_t> own(shown.begin(), shown.end());
        for (uint32_t i : live)
            if (!own.count(i)) order.push_back(i);
        std::sort(order.begin(), order.end(), byStart);
        for (uint32_t i : shown)  // already bottom first
            if (liveAtX(tl.intervals[i], x)) order.push_back(i);
    }
    double acc = 0;
    for (uint32_t i : order) {
        acc += double(tl.intervals[i].size);
        if (y < acc) return i;
    }
    return std::nullopt;
}

}  // namespace memscope::gui
