#include "memscope/analysis/category_rules.h"

#include <algorithm>
#include <map>

#include "memscope/inference/inference.h"

namespace memscope {

std::vector<CategoryRuleBytes> categoryRulesAtPeak(const Trace& trace,
                                                   const DeviceTimeline& timeline) {
    const CategoryRuleLookup rules(trace);
    std::map<std::pair<Category, CategoryRule>, CategoryRuleBytes> by_rule;
    for (uint32_t i : timeline.peak.live_intervals) {
        if (i >= timeline.intervals.size()) continue;
        const AllocationInterval& a = timeline.intervals[i];
        const CategoryRule rule = rules.of(a);
        CategoryRuleBytes& r = by_rule[{a.category, rule}];
        r.category = a.category;
        r.rule = rule;
        r.bytes += int64_t(a.size);
        ++r.count;
    }
    std::vector<CategoryRuleBytes> out;
    for (const auto& [key, r] : by_rule) out.push_back(r);
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
        if (a.category != b.category) return index(a.category) < index(b.category);
        return a.bytes > b.bytes;
    });
    return out;
}

}  // namespace memscope
