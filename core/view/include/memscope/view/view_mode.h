#pragma once
// How a timeline's live bytes are stacked: the one choice every timeline view
// (a run's, each plot of a comparison, a screenshot) makes.

#include <cstdint>
#include <optional>
#include <string_view>

#include "memscope/timeline/timeline.h"

namespace memscope {

enum class ViewMode : uint8_t {
    Category = 0,    // one band per category
    Allocation = 1,  // every allocation a block of its own, placed by the layout
    Module = 2,      // one band per module group (module_stack.h)
};

std::string_view toString(ViewMode mode);  // "category", "allocation", "module"
std::optional<ViewMode> viewModeFromString(std::string_view name);

// How a device opens when the user has not chosen: by category where the
// trace recorded categories for some of its allocations, else by allocation
// (a trace without categories would be one "unknown" block).
ViewMode defaultViewMode(const DeviceTimeline& timeline);

}  // namespace memscope
