#pragma once
// How live allocations are stacked in the timeline, one definition for the
// bands a view draws and for the hit test that finds the allocation under the
// mouse, so the two cannot drift apart.
//
// By category: categories bottom first in torch.profiler's order, inside a
// category the live allocations in order of start. By allocation: the
// allocations without a band of their own at the bottom (in order of start),
// then the shown ones in order of start.

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "memscope/timeline/timeline.h"

namespace memscope {

enum class StackMode : uint8_t { ByCategory = 0, ByAllocation = 1 };

std::string_view toString(StackMode mode);  // "category", "allocation"
std::optional<StackMode> stackModeFromString(std::string_view name);

// How a device opens when the user has not chosen: by category where the trace
// recorded categories for some of its allocations, else by allocation (a trace
// without categories would be one "unknown" block).
StackMode defaultStackMode(const DeviceTimeline& timeline);

// Whether an interval is live at x (start <= x < end, or never freed).
inline bool liveAtX(const AllocationInterval& a, int64_t x) {
    return a.start <= x && (x < a.end || a.free_event == kNoEvent);
}

// The largest intervals of a device, largest first (ties: earlier start first).
std::vector<uint32_t> largestIntervals(const DeviceTimeline& timeline, size_t count);

// Of `largest` (largest first), at most `max` that touch [lo, hi), in order of
// start: the allocations a by-allocation view gives a band of their own.
std::vector<uint32_t> shownIntervals(const DeviceTimeline& timeline,
                                     std::span<const uint32_t> largest, int64_t lo, int64_t hi,
                                     size_t max);

// The live allocations at x, bottom first, as `mode` stacks them.
std::vector<uint32_t> stackedAt(const DeviceTimeline& timeline, StackMode mode,
                                std::span<const uint32_t> shown, int64_t x);

// The allocation drawn at height y (bytes) at x, if any.
std::optional<uint32_t> allocationAt(const DeviceTimeline& timeline, StackMode mode,
                                     std::span<const uint32_t> shown, int64_t x, double y);

}  // namespace memscope
