#include "memscope/analysis/compare.h"

#include <algorithm>
#include <cmath>

namespace memscope {
namespace {

int64_t seriesMax(const StepSeries& s) {
    int64_t best = s.initial;
    for (int64_t y : s.ys()) best = std::max(best, y);
    return best;
}

// Recompute phases' total time, outermost ones only (nested ones counted once).
int64_t recomputeTime(const Trace& t, int16_t device) {
    int64_t total = 0;
    for (const Phase& p : t.phases) {
        if (p.kind != PhaseKind::Recompute || !phaseOnDevice(p, device)) continue;
        const Phase* parent = t.phase(p.parent);
        if (parent && parent->kind == PhaseKind::Recompute) continue;
        total += p.end - p.start;
    }
    return total;
}

}  // namespace

RunSummary summarizeRun(const RunRef& run) {
    RunSummary s;
    if (!run.trace || !run.timeline) return s;
    const Trace& t = *run.trace;
    const DeviceTimeline& d = *run.timeline;
    s.name = t.metadata.name;
    s.peak_bytes = d.peak.bytes;
    s.peak_time = d.peak.time;
    s.peak_seconds = double(d.peak.time - d.start) * timeScale(t);
    s.peak_phase = phasePath(t, d.peak.phase);
    s.peak_by_category = d.peak.by_category;
    s.has_reserved = !(d.reserved.empty() && d.reserved.initial == 0);
    s.reserved_peak = seriesMax(d.reserved);
    s.phase_peaks = d.phase_peaks;

    const std::vector<StepBounds> steps = stepBounds(t, d.device);
    s.steps = steps.size();
    const bool clock = t.metadata.time_base == TimeBase::Nanoseconds;
    int64_t step_total = 0;
    for (const StepBounds& f : steps) step_total += f.end - f.start;
    // What the producer measured comes first; the phases' own lengths otherwise.
    if (t.metrics) {
        s.step_time_s = t.metrics->meanStepSeconds();
        s.recompute_overhead = t.metrics->recomputeFraction();
    }
    if (!s.step_time_s && clock && !steps.empty())
        s.step_time_s = double(step_total) * 1e-9 / double(steps.size());
    if (!s.recompute_overhead && clock && step_total > 0)
        s.recompute_overhead = double(recomputeTime(t, d.device)) / double(step_total);
    return s;
}

std::optional<WindowPeak> scopedPeak(const RunSummary& s, PeakScope scope) {
    if (scope.phase) return s.phase_peaks.by_phase[size_t(index(*scope.phase))];
    WindowPeak p;
    p.bytes = s.peak_bytes;
    p.time = s.peak_time;
    p.by_category = s.peak_by_category;
    return p;
}

SummaryDelta compareToBaseline(Baseline<RunSummary> baseline, Candidate<RunSummary> candidate,
                               PeakScope scope) {
    const RunSummary& b = baseline.value;
    const RunSummary& c = candidate.value;
    SummaryDelta d;
    const auto pb = scopedPeak(b, scope), pc = scopedPeak(c, scope);
    if (pb && pc) {
        d.peak_bytes = pc->bytes - pb->bytes;
        d.peak_ratio = pb->bytes != 0 ? double(pc->bytes) / double(pb->bytes) : 1.0;
        for (int i = 0; i < kCategoryCount; ++i)
            d.by_category[size_t(i)] = pc->by_category[size_t(i)] - pb->by_category[size_t(i)];
    }
    if (b.step_time_s && c.step_time_s && *b.step_time_s > 0)
        d.step_time_ratio = *c.step_time_s / *b.step_time_s;
    return d;
}

std::vector<CurvePoint> differenceCurve(const StepSeries& a, const AxisMap& map_a,
                                        const StepSeries& b, const AxisMap& map_b, double x0,
                                        double x1, size_t maxPoints) {
    std::vector<CurvePoint> out;
    if (!(x1 > x0)) return out;
    maxPoints = std::max<size_t>(maxPoints, 4);
    std::vector<double> xs;
    auto collect = [&](const StepSeries& s, const AxisMap& m) {
        const int64_t lo = m.inverse(x0), hi = std::max(m.inverse(x1), lo + 1);
        for (const SeriesPoint& p : s.levelOfDetail(lo, hi, maxPoints)) {
            const double x = m.forward(p.x);
            if (x >= x0 && x <= x1) xs.push_back(x);
        }
    };
    collect(a, map_a);
    collect(b, map_b);
    xs.push_back(x0);
    xs.push_back(x1);
    std::sort(xs.begin(), xs.end());
    xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
    out.reserve(xs.size());
    for (double x : xs) {
        // A step's change point maps back to itself only up to rounding: nudge
        // by half a unit of the run's own x so the new value is seen.
        const int64_t ya =
            a.valueAt(map_a.inverse(x) + (map_a.forward(map_a.inverse(x) + 1) <= x ? 1 : 0));
        const int64_t yb =
            b.valueAt(map_b.inverse(x) + (map_b.forward(map_b.inverse(x) + 1) <= x ? 1 : 0));
        out.push_back({x, ya - yb});
    }
    return out;
}

}  // namespace memscope
