#pragma once
// How live allocations are stacked in the timeline, one definition for the
// bands a view draws and for the hit test that finds the allocation under the
// mouse, so the two cannot drift apart.
//
// By category: categories bottom first in torch.profiler's order, inside a
// category the live allocations in order of start. By allocation: the live
// allocations in order of start (the view's layout, allocation_layout.h,
// places them in lanes of their own).

#include <cstdint>
#include <optional>
#include <vector>

#include "memscope/timeline/timeline.h"
#include "memscope/view/view_mode.h"

namespace memscope {

// Whether an interval is live at x (start <= x < end, or never freed).
inline bool liveAtX(const AllocationInterval& a, int64_t x) {
    return a.start <= x && (x < a.end || a.free_event == kNoEvent);
}

// The live allocations at x, bottom first, as `mode` stacks them.
// (ViewMode::Module stacks by module_stack.h's groups: moduleStackedAt.)
std::vector<uint32_t> stackedAt(const DeviceTimeline& timeline, ViewMode mode, int64_t x);

// The allocation drawn at height y (bytes) at x, if any.
std::optional<uint32_t> allocationAt(const DeviceTimeline& timeline, ViewMode mode, int64_t x,
                                     double y);

}  // namespace memscope
