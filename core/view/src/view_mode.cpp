#include "memscope/view/view_mode.h"

namespace memscope {

std::string_view toString(ViewMode mode) {
    switch (mode) {
        case ViewMode::Category:
            return "category";
        case ViewMode::Allocation:
            return "allocation";
        case ViewMode::Module:
            return "module";
    }
    return "category";
}

std::optional<ViewMode> viewModeFromString(std::string_view name) {
    for (ViewMode m : {ViewMode::Category, ViewMode::Allocation, ViewMode::Module})
        if (name == toString(m)) return m;
    return std::nullopt;
}

ViewMode defaultViewMode(const DeviceTimeline& timeline) {
    for (const AllocationInterval& a : timeline.intervals)
        if (a.category != Category::Unknown) return ViewMode::Category;
    return timeline.intervals.empty() ? ViewMode::Category : ViewMode::Allocation;
}

}  // namespace memscope
