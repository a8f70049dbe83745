// The shared x axis of a comparison: runs lined up by time, step or phase.
#include "memscope/analysis/alignment.h"

#include <algorithm>
#include <cmath>

#include "memscope/model/phases.h"

namespace memscope {
namespace {

// a - b as a double, also where the int64 difference overflows (a trace whose
// times span more than 2^63 ns).
double difference(int64_t a, int64_t b) {
    int64_t d = 0;
    if (!__builtin_sub_overflow(a, b, &d)) return double(d);
    return double(a) - double(b);
}

}  // namespace

AxisMap AxisMap::linear(int64_t origin, double scale) {
    AxisMap m;
    m.xs_ = {origin};
    m.shared_ = {0.0};
    m.slope_before_ = m.slope_after_ = scale;
    return m;
}

AxisMap AxisMap::fromKnots(std::vector<int64_t> xs, std::vector<double> shared) {
    AxisMap m;
    const size_t n = std::min(xs.size(), shared.size());
    for (size_t i = 0; i < n; ++i) {
        if (!m.xs_.empty() && (xs[i] <= m.xs_.back() || shared[i] < m.shared_.back())) continue;
        m.xs_.push_back(xs[i]);
        m.shared_.push_back(shared[i]);
    }
    if (m.xs_.size() >= 2) {
        m.slope_before_ = (m.shared_[1] - m.shared_[0]) / difference(m.xs_[1], m.xs_[0]);
        const size_t k = m.xs_.size() - 1;
        m.slope_after_ = (m.shared_[k] - m.shared_[k - 1]) / difference(m.xs_[k], m.xs_[k - 1]);
        // A flat end segment would make inverse() undefined past it.
        if (m.slope_before_ <= 0) m.slope_before_ = 1e-9;
        if (m.slope_after_ <= 0) m.slope_after_ = 1e-9;
    }
    return m;
}

double AxisMap::forward(int64_t x) const {
    if (xs_.empty()) return double(x);
    if (x <= xs_.front()) return shared_.front() + difference(x, xs_.front()) * slope_before_;
    if (x >= xs_.back()) return shared_.back() + difference(x, xs_.back()) * slope_after_;
    const size_t i =
        size_t(std::upper_bound(xs_.begin(), xs_.end(), x) - xs_.begin());  // xs_[i-1] < x < xs_[i]
    const double t = difference(x, xs_[i - 1]) / difference(xs_[i], xs_[i - 1]);
    return shared_[i - 1] + t * (shared_[i] - shared_[i - 1]);
}

int64_t AxisMap::inverse(double s) const {
    if (xs_.empty()) return int64_t(std::floor(std::clamp(s, -9.2e18, 9.2e18)));
    // Offsets are computed in double and added to the int64 knot: epoch
    // nanoseconds (~1.8e18) do not fit a double's 53 bits exactly. An offset
    // within rounding error of a whole unit is that unit, so that
    // inverse(forward(x)) == x.
    auto offset = [](int64_t base, double v) {
        const double r = std::round(v);
        if (std::abs(v - r) <= std::max(1e-9, 64 * 2.2e-16 * std::abs(v))) v = r;  // a few ulps
        const double whole = std::floor(v);
        // Past int64 either way (a span over 2^63 ns, a view far beyond the
        // data): held at the end instead of overflowing.
        const long double target = (long double)base + (long double)whole;
        if (target >= 9.2233720368547758e18L) return INT64_MAX;
        if (target <= -9.2233720368547758e18L) return INT64_MIN;
        if (std::abs(whole) < 9.0e18) return base + int64_t(whole);  // exact
        return int64_t(target);
    };
    if (s <= shared_.front()) return offset(xs_.front(), (s - shared_.front()) / slope_before_);
    if (s >= shared_.back()) return offset(xs_.back(), (s - shared_.back()) / slope_after_);
    const size_t i = size_t(std::upper_bound(shared_.begin(), shared_.end(), s) - shared_.begin());
    const double span = shared_[i] - shared_[i - 1];
    const double t = span > 0 ? (s - shared_[i - 1]) / span : 0.0;
    return offset(xs_[i - 1], t * difference(xs_[i], xs_[i - 1]));
}

namespace {

struct Fractions {
    double fwd = 0.0, bwd = 0.35, bwd_end = 0.9;  // used when the reference has none
};

Fractions referenceFractions(const std::vector<StepBounds>& steps) {
    Fractions f;
    double sf = 0, sb = 0, se = 0;
    size_t n = 0;
    for (const StepBounds& s : steps) {
        if (!s.forward_start || !s.backward_start || !s.backward_end) continue;
        const double len = double(s.end - s.start);
        sf += double(*s.forward_start - s.start) / len;
        sb += double(*s.backward_start - s.start) / len;
        se += double(*s.backward_end - s.start) / len;
        ++n;
    }
    if (n > 0) f = {sf / double(n), sb / double(n), se / double(n)};
    return f;
}

double timeScale(const RunRef& run) {
    return run.trace ? timeScale(*run.trace) : 1.0;
}

}  // namespace

std::string alignUnit(AlignMode mode, const RunRef& run) {
    if (mode != AlignMode::Time) return "step";
    return timeScale(run) == 1.0 ? "events" : "s";
}

std::vector<Alignment> alignRuns(std::span<const RunRef> runs, AlignMode mode, size_t reference) {
    std::vector<Alignment> out;
    out.reserve(runs.size());
    Fractions frac;
    if (mode == AlignMode::Phase && reference < runs.size() && runs[reference].trace &&
        runs[reference].timeline)
        frac = referenceFractions(
            stepBounds(*runs[reference].trace, runs[reference].timeline->device));
    for (const RunRef& run : runs) {
        Alignment a;
        const int64_t origin = run.timeline ? run.timeline->start : 0;
        a.map = AxisMap::linear(origin, timeScale(run));
        if (mode == AlignMode::Time) {
            out.push_back(std::move(a));
            continue;
        }
        const std::vector<StepBounds> steps = run.trace && run.timeline
                                                  ? stepBounds(*run.trace, run.timeline->device)
                                                  : std::vector<StepBounds>{};
        if (steps.empty()) {
            a.fell_back = true;
            out.push_back(std::move(a));
            continue;
        }
        std::vector<int64_t> xs;
        std::vector<double> shared;
        for (size_t k = 0; k < steps.size(); ++k) {
            const StepBounds& s = steps[k];
            const double base = double(k);
            xs.push_back(s.start);
            shared.push_back(base);
            if (mode == AlignMode::Phase && s.forward_start && s.backward_start && s.backward_end &&
                s.start <= *s.forward_start && *s.forward_start < *s.backward_start &&
                *s.backward_start < *s.backward_end && *s.backward_end <= s.end) {
                xs.insert(xs.end(), {*s.forward_start, *s.backward_start, *s.backward_end});
                shared.insert(shared.end(),
                              {base + frac.fwd, base + frac.bwd, base + frac.bwd_end});
            }
            // The next step's start usually equals this end; fromKnots drops the duplicate.
            xs.push_back(s.end);
            shared.push_back(base + 1.0);
        }
        a.map = AxisMap::fromKnots(std::move(xs), std::move(shared));
        a.mode = mode;
        out.push_back(std::move(a));
    }
    if (mode == AlignMode::Time)
        for (auto& a : out) a.mode = AlignMode::Time;
    return out;
}

}  // namespace memscope
