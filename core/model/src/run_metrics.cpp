#include "memscope/model/run_metrics.h"

#include <numeric>

namespace memscope {
namespace {

// The steps the means are taken over: all but the first (warm-up) one when
// there are others.
size_t firstCounted(size_t n) {
    return n > 1 ? 1 : 0;
}

double sumFrom(const std::vector<int64_t>& v, size_t first) {
    double s = 0;
    for (size_t i = first; i < v.size(); ++i) s += double(v[i]);
    return s;
}

}  // namespace

std::optional<double> RunMetrics::meanStepSeconds() const {
    if (step_ns.empty()) return std::nullopt;
    const size_t first = firstCounted(step_ns.size());
    return sumFrom(step_ns, first) / double(step_ns.size() - first) * 1e-9;
}

std::optional<double> RunMetrics::recomputeFraction() const {
    if (step_ns.empty() || recompute_ns.size() != step_ns.size()) return std::nullopt;
    const size_t first = firstCounted(step_ns.size());
    const double steps = sumFrom(step_ns, first);
    if (steps <= 0) return std::nullopt;
    return sumFrom(recompute_ns, first) / steps;
}

}  // namespace memscope
