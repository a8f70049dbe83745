#include "memscope/view/allocation_order.h"

#include <algorithm>

namespace memscope {

std::vector<uint32_t> stackedAt(const DeviceTimeline& tl, ViewMode mode, int64_t x) {
    std::vector<uint32_t> live = tl.liveAt(x);
    auto byStart = [&](uint32_t a, uint32_t b) {
        const AllocationInterval& ia = tl.intervals[a];
        const AllocationInterval& ib = tl.intervals[b];
        return ia.start != ib.start ? ia.start < ib.start : a < b;
    };
    if (mode == ViewMode::Category) {
        std::sort(live.begin(), live.end(), [&](uint32_t a, uint32_t b) {
            const int ca = index(tl.intervals[a].category), cb = index(tl.intervals[b].category);
            return ca != cb ? ca < cb : byStart(a, b);
        });
        return live;
    }
    std::sort(live.begin(), live.end(), byStart);
    return live;
}

std::optional<uint32_t> allocationAt(const DeviceTimeline& tl, ViewMode mode, int64_t x, double y) {
    if (y < 0) return std::nullopt;
    double acc = 0;
    for (uint32_t i : stackedAt(tl, mode, x)) {
        acc += double(tl.intervals[i].size);
        if (y < acc) return i;
    }
    return std::nullopt;
}

}  // namespace memscope
