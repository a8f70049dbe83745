#include "memscope/whatif/policy_frontier.h"

#include <cstdio>

#include "memscope/base/units.h"

namespace memscope {

bool dominates(const PolicyPoint& b, const PolicyPoint& a) {
    return b.peak_bytes <= a.peak_bytes && b.step_ms <= a.step_ms &&
           (b.peak_bytes < a.peak_bytes || b.step_ms < a.step_ms);
}

std::vector<bool> onFrontier(std::span<const PolicyPoint> points) {
    std::vector<bool> result(points.size(), true);
    for (size_t i = 0; i < points.size(); ++i)
        for (size_t j = 0; j < points.size() && result[i]; ++j)
            if (j != i && dominates(points[j], points[i])) result[i] = false;
    return result;
}

BudgetAnswer fitBudget(std::span<const PolicyPoint> points, int64_t budget_bytes) {
    BudgetAnswer answer;
    answer.budget_bytes = budget_bytes;
    for (size_t i = 0; i < points.size(); ++i) {
        const PolicyPoint& p = points[i];
        if (p.peak_bytes <= budget_bytes) {
            if (!answer.choice) {
                answer.choice = i;
                continue;
            }
            const PolicyPoint& best = points[*answer.choice];
            if (p.step_ms < best.step_ms ||
                (p.step_ms == best.step_ms && p.peak_bytes < best.peak_bytes))
                answer.choice = i;
        }
        if (!answer.closest) {
            answer.closest = i;
            continue;
        }
        const PolicyPoint& c = points[*answer.closest];
        if (p.peak_bytes < c.peak_bytes || (p.peak_bytes == c.peak_bytes && p.step_ms < c.step_ms))
            answer.closest = i;
    }
    if (answer.choice) {
        answer.closest.reset();
    } else if (answer.closest) {
        answer.short_by_bytes = points[*answer.closest].peak_bytes - budget_bytes;
    }
    return answer;
}

std::string describeBudget(std::span<const PolicyPoint> points, const BudgetAnswer& answer) {
    std::string text = "budget " + formatBytes(answer.budget_bytes) + ": ";
    char ms[32];
    if (answer.choice) {
        const PolicyPoint& p = points[*answer.choice];
        std::snprintf(ms, sizeof ms, "%.1f", p.step_ms);
        return text + p.name + " is the fastest policy that fits (peak " +
               formatBytes(p.peak_bytes) + ", " + ms + " ms per step)";
    }
    if (!answer.closest) return text + "no policy was measured";
    const PolicyPoint& p = points[*answer.closest];
    return text + "no policy fits; the smallest peak, " + p.name + "'s " +
           formatBytes(p.peak_bytes) + ", is " + formatBytes(answer.short_by_bytes) + " over";
}

}  // namespace memscope
