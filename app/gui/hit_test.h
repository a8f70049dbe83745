#pragma once
// Which allocation lies under a point of the stacked timeline. Mirrors the
// stacking of computeBands: by category (bottom category first), and inside a
// band the live allocations in order of start; by allocation, the rest at the
// bottom, then the bands shown.

#include <cstdint>
#include <optional>
#include <vector>

#include "memscope/timeline.h"
#include "timeline_bands.h"

namespace memscope::gui {

std::optional<uint32_t> allocationAt(const DeviceTimeline& tl, StackMode mode, const std::vector<uint32_t>& shown,
                                     int64_t x, double y);

}  // namespace memscope::gui
