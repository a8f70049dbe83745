#pragma once
// Why the bytes at a device's peak have their categories: per category, the
// bytes each rule decided (CategoryRule; Recorded where the producer said),
// so that `summary` and its JSON say which rule made a figure, not only that
// it was inferred.

#include <cstdint>
#include <vector>

#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

struct CategoryRuleBytes {
    Category category = Category::Unknown;
    CategoryRule rule = CategoryRule::Recorded;  // Recorded: the producer's label
    int64_t bytes = 0;
    uint32_t count = 0;  // allocations
};

// The intervals live at the device's peak, by category and rule, by
// category's order, then largest first within a category.
std::vector<CategoryRuleBytes> categoryRulesAtPeak(const Trace& trace,
                                                   const DeviceTimeline& timeline);

}  // namespace memscope
