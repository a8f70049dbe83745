#include "memscope/view/allocation_order.h"

#include <algorithm>
#include <numeric>
#include <unordered_set>

namespace memscope {

std::string_view toString(StackMode mode) {
    return mode == StackMode::ByAllocation ? "allocation" : "category";
}

std::optional<StackMode> stackModeFromString(std::string_view name) {
    if (name == "category") return StackMode::ByCategory;
    if (name == "allocation") return StackMode::ByAllocation;
    return std::nullopt;
}

StackMode defaultStackMode(const DeviceTimeline& timeline) {
    for (const AllocationInterval& a : timeline.intervals)
        if (a.category != Category::Unknown) return StackMode::ByCategory;
    return timeline.intervals.empty() ? StackMode::ByCategory : StackMode::ByAllocation;
}

std::vector<uint32_t> largestIntervals(const DeviceTimeline& timeline, size_t count) {
    const auto& iv = timeline.intervals;
    std::vector<uint32_t> idx(iv.size());
    std::iota(idx.begin(), idx.end(), 0u);
    auto larger = [&](uint32_t x, uint32_t y) {
        if (iv[x].size != iv[y].size) return iv[x].size > iv[y].size;
        return iv[x].start < iv[y].start;
    };
    count = std::min(count, idx.size());
    std::partial_sort(idx.begin(), idx.begin() + ptrdiff_t(count), idx.end(), larger);
    idx.resize(count);
    return idx;
}

std::vector<uint32_t> shownIntervals(const DeviceTimeline& tl, std::span<const uint32_t> largest,
                                     int64_t lo, int64_t hi, size_t max) {
    std::vector<uint32_t> shown;
    for (uint32_t i : largest) {
        if (shown.size() >= max) break;
        if (i >= tl.intervals.size()) continue;
        const AllocationInterval& a = tl.intervals[i];
        if (a.start < hi && (a.free_event == kNoEvent || a.end > lo)) shown.push_back(i);
    }
    std::sort(shown.begin(), shown.end(), [&](uint32_t a, uint32_t b) {
        return tl.intervals[a].start != tl.intervals[b].start
                   ? tl.intervals[a].start < tl.intervals[b].start
                   : a < b;
    });
    return shown;
}

std::vector<uint32_t> stackedAt(const DeviceTimeline& tl, StackMode mode,
                                std::span<const uint32_t> shown, int64_t x) {
    std::vector<uint32_t> live = tl.liveAt(x);
    auto byStart = [&](uint32_t a, uint32_t b) {
        const AllocationInterval& ia = tl.intervals[a];
        const AllocationInterval& ib = tl.intervals[b];
        return ia.start != ib.start ? ia.start < ib.start : a < b;
    };
    if (mode == StackMode::ByCategory) {
        std::sort(live.begin(), live.end(), [&](uint32_t a, uint32_t b) {
            const int ca = index(tl.intervals[a].category), cb = index(tl.intervals[b].category);
            return ca != cb ? ca < cb : byStart(a, b);
        });
        return live;
    }
    const std::unordered_set<uint32_t> own(shown.begin(), shown.end());
    std::vector<uint32_t> order;
    order.reserve(live.size());
    for (uint32_t i : live)
        if (!own.count(i)) order.push_back(i);
    std::sort(order.begin(), order.end(), byStart);
    for (uint32_t i : shown)  // already in order of start
        if (i < tl.intervals.size() && liveAtX(tl.intervals[i], x)) order.push_back(i);
    return order;
}

std::optional<uint32_t> allocationAt(const DeviceTimeline& tl, StackMode mode,
                                     std::span<const uint32_t> shown, int64_t x, double y) {
    if (y < 0) return std::nullopt;
    double acc = 0;
    for (uint32_t i : stackedAt(tl, mode, shown, x)) {
        acc += double(tl.intervals[i].size);
        if (y < acc) return i;
    }
    return std::nullopt;
}

}  // namespace memscope
