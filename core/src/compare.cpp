#include "memscope/compare.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace memscope {

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
        m.slope_before_ = (m.shared_[1] - m.shared_[0]) / double(m.xs_[1] - m.xs_[0]);
        const size_t k = m.xs_.size() - 1;
        m.slope_after_ = (m.shared_[k] - m.shared_[k - 1]) / double(m.xs_[k] - m.xs_[k - 1]);
        // A flat end segment would make inverse() undefined past it.
        if (m.slope_before_ <= 0) m.slope_before_ = 1e-9;
        if (m.slope_after_ <= 0) m.slope_after_ = 1e-9;
    }
    return m;
}

double AxisMap::forward(int64_t x) const {
    if (xs_.empty()) return double(x);
    if (x <= xs_.front()) return shared_.front() + double(x - xs_.front()) * slope_before_;
    if (x >= xs_.back()) return shared_.back() + double(x - xs_.back()) * slope_after_;
    const size_t i = size_t(std::upper_bound(xs_.begin(), xs_.end(), x) - xs_.begin());  // xs_[i-1] < x < xs_[i]
    const double t = double(x - xs_[i - 1]) / double(xs_[i] - xs_[i - 1]);
    return shared_[i - 1] + t * (shared_[i] - shared_[i - 1]);
}

int64_t AxisMap::inverse(double s) const {
    if (xs_.empty()) return int64_t(std::floor(s));
    // Offsets are computed in double and added to the int64 knot: epoch
    // nanoseconds (~1.8e18) do not fit a double's 53 bits exactly. An offset
    // within rounding error of a whole unit is that unit, so that
    // inverse(forward(x)) == x.
    auto offset = [](int64_t base, double v) {
        constexpr double lim = 9.0e18;
        v = std::clamp(v, -lim, lim);
        const double r = std::round(v);
        if (std::abs(v - r) <= std::max(1e-9, 64 * 2.2e-16 * std::abs(v))) v = r;  // a few ulps
        return base + int64_t(std::floor(v));
    };
    if (s <= shared_.front()) return offset(xs_.front(), (s - shared_.front()) / slope_before_);
    if (s >= shared_.back()) return offset(xs_.back(), (s - shared_.back()) / slope_after_);
    const size_t i = size_t(std::upper_bound(shared_.begin(), shared_.end(), s) - shared_.begin());
    const double span = shared_[i] - shared_[i - 1];
    const double t = span > 0 ? (s - shared_[i - 1]) / span : 0.0;
    return offset(xs_[i - 1], t * double(xs_[i] - xs_[i - 1]));
}

namespace {

bool phaseOnDevice(const Phase& p, int16_t device) { return p.device < 0 || p.device == device; }

// The step phases of a run, ordered by start; their sub-phase boundaries.
struct StepFrame {
    int64_t start = 0, end = 0;
    std::optional<int64_t> fwd, bwd, bwd_end;
};

std::vector<StepFrame> stepFrames(const RunRef& run) {
    std::vector<StepFrame> steps;
    if (!run.trace || !run.timeline) return steps;
    const auto& phases = run.trace->phases;
    std::vector<uint32_t> step_ids;  // PhaseId values
    for (uint32_t i = 0; i < phases.size(); ++i)
        if (phases[i].kind == PhaseKind::Step && phaseOnDevice(phases[i], run.timeline->device) &&
            phases[i].end > phases[i].start)
            step_ids.push_back(i + 1);
    std::sort(step_ids.begin(), step_ids.end(),
              [&](uint32_t a, uint32_t b) { return phases[a - 1].start < phases[b - 1].start; });
    steps.reserve(step_ids.size());
    for (uint32_t id : step_ids) steps.push_back({phases[id - 1].start, phases[id - 1].end, {}, {}, {}});
    // A sub-phase belongs to the step whose range holds its start; the first
    // forward and backward of a step are its boundaries.
    for (const Phase& p : phases) {
        if (!phaseOnDevice(p, run.timeline->device)) continue;
        if (p.kind != PhaseKind::Forward && p.kind != PhaseKind::Backward) continue;
        auto it = std::upper_bound(steps.begin(), steps.end(), p.start,
                                   [](int64_t t, const StepFrame& s) { return t < s.start; });
        if (it == steps.begin()) continue;
        StepFrame& s = *std::prev(it);
        if (p.start >= s.end) continue;
        if (p.kind == PhaseKind::Forward) {
            if (!s.fwd || p.start < *s.fwd) s.fwd = p.start;
        } else {
            if (!s.bwd || p.start < *s.bwd) s.bwd = p.start;
            const int64_t e = std::min(p.end, s.end);
            if (!s.bwd_end || e > *s.bwd_end) s.bwd_end = e;
        }
    }
    return steps;
}

struct Fractions {
    double fwd = 0.0, bwd = 0.35, bwd_end = 0.9;  // used when the reference has none
};

Fractions referenceFractions(const std::vector<StepFrame>& steps) {
    Fractions f;
    double sf = 0, sb = 0, se = 0;
    size_t n = 0;
    for (const StepFrame& s : steps) {
        if (!s.fwd || !s.bwd || !s.bwd_end) continue;
        const double len = double(s.end - s.start);
        sf += double(*s.fwd - s.start) / len;
        sb += double(*s.bwd - s.start) / len;
        se += double(*s.bwd_end - s.start) / len;
        ++n;
    }
    if (n > 0) f = {sf / double(n), sb / double(n), se / double(n)};
    return f;
}

double timeScale(const RunRef& run) {
    return run.trace && run.trace->metadata.time_base == TimeBase::Nanoseconds ? 1e-9 : 1.0;
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
    if (mode == AlignMode::Phase && reference < runs.size()) frac = referenceFractions(stepFrames(runs[reference]));
    for (const RunRef& run : runs) {
        Alignment a;
        const int64_t origin = run.timeline ? run.timeline->start : 0;
        a.map = AxisMap::linear(origin, timeScale(run));
        if (mode == AlignMode::Time) {
            out.push_back(std::move(a));
            continue;
        }
        const std::vector<StepFrame> steps = stepFrames(run);
        if (steps.empty()) {
            a.fell_back = true;
            out.push_back(std::move(a));
            continue;
        }
        std::vector<int64_t> xs;
        std::vector<double> shared;
        for (size_t k = 0; k < steps.size(); ++k) {
            const StepFrame& s = steps[k];
            const double base = double(k);
            xs.push_back(s.start);
            shared.push_back(base);
            if (mode == AlignMode::Phase && s.fwd && s.bwd && s.bwd_end && s.start <= *s.fwd &&
                *s.fwd < *s.bwd && *s.bwd < *s.bwd_end && *s.bwd_end <= s.end) {
                xs.insert(xs.end(), {*s.fwd, *s.bwd, *s.bwd_end});
                shared.insert(shared.end(), {base + frac.fwd, base + frac.bwd, base + frac.bwd_end});
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

std::string phasePath(const Trace& trace, PhaseId phase) {
    std::vector<std::string_view> names;
    // Bounded walk: a corrupt parent cycle must not hang the GUI.
    for (size_t guard = 0; !phase.isNull() && guard < 64; ++guard) {
        const Phase* p = trace.phase(phase);
        if (!p) break;
        names.push_back(trace.string(p->name));
        phase = p->parent;
    }
    // Some producers (memscope-train) already name a phase by its whole path
    // ("step 1 / backward"): a name that extends the path so far replaces it.
    std::string out;
    for (auto it = names.rbegin(); it != names.rend(); ++it) {
        if (!out.empty() && it->starts_with(out)) {
            out = *it;
            continue;
        }
        if (!out.empty()) out += " / ";
        out += *it;
    }
    return out;
}

namespace {

std::optional<double> numericProperty(const TraceMetadata& md, std::initializer_list<std::string_view> keys) {
    for (std::string_view k : keys) {
        if (const std::string* v = md.property(k)) {
            try {
                size_t used = 0;
                const double d = std::stod(*v, &used);
                if (used > 0 && std::isfinite(d)) return d;
            } catch (...) {
                // not a number: try the next key
            }
        }
    }
    return std::nullopt;
}

// "12.5,13,12.9": the trainer's per-step figures.
std::vector<double> numberList(const TraceMetadata& md, std::string_view key) {
    std::vector<double> out;
    const std::string* v = md.property(key);
    if (!v) return out;
    size_t pos = 0;
    while (pos < v->size()) {
        size_t comma = v->find(',', pos);
        if (comma == std::string::npos) comma = v->size();
        try {
            out.push_back(std::stod(v->substr(pos, comma - pos)));
        } catch (...) {
            return {};  // not a list of numbers: ignore the property
        }
        pos = comma + 1;
    }
    return out;
}

double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

}  // namespace

RunSummary summarizeRun(const RunRef& run) {
    RunSummary s;
    if (!run.trace || !run.timeline) return s;
    const Trace& t = *run.trace;
    const DeviceTimeline& d = *run.timeline;
    s.name = t.metadata.name;
    s.peak_bytes = d.peak.bytes;
    s.peak_time = d.peak.time;
    s.peak_seconds = double(d.peak.time - d.start) * timeScale(run);
    s.peak_phase = phasePath(t, d.peak.phase);
    s.peak_by_category = d.peak.by_category;
    const auto ys = d.reserved.ys();
    s.reserved_peak = d.reserved.initial;
    for (int64_t y : ys) s.reserved_peak = std::max(s.reserved_peak, y);

    const std::vector<StepFrame> steps = stepFrames(run);
    s.steps = steps.size();
    const bool clock = t.metadata.time_base == TimeBase::Nanoseconds;
    int64_t step_total = 0;
    for (const StepFrame& f : steps) step_total += f.end - f.start;
    // memscope-train writes per-step lists: step_times_ms and recompute_ms.
    // Like its own report, skip the first (warm-up) step when there are more.
    std::vector<double> step_ms = numberList(t.metadata, "step_times_ms");
    std::vector<double> recompute_ms = numberList(t.metadata, "recompute_ms");
    if (step_ms.size() > 1) step_ms.erase(step_ms.begin());
    if (recompute_ms.size() > 1) recompute_ms.erase(recompute_ms.begin());
    if (!step_ms.empty())
        s.step_time_s = sum(step_ms) / double(step_ms.size()) / 1000.0;
    else if (auto ms = numericProperty(t.metadata, {"step_time_ms", "mean_step_time_ms"}))
        s.step_time_s = *ms / 1000.0;
    else if (auto sec = numericProperty(t.metadata, {"step_time_s", "mean_step_time_s"}))
        s.step_time_s = *sec;
    else if (clock && !steps.empty())
        s.step_time_s = double(step_total) * 1e-9 / double(steps.size());

    if (!recompute_ms.empty() && sum(step_ms) > 0) {
        s.recompute_overhead = sum(recompute_ms) / sum(step_ms);
    } else if (auto r = numericProperty(t.metadata, {"recompute_overhead", "recompute_fraction"})) {
        s.recompute_overhead = *r;
    } else if (auto pct = numericProperty(t.metadata, {"recompute_overhead_pct", "recompute_overhead_percent"})) {
        s.recompute_overhead = *pct / 100.0;
    } else if (clock && step_total > 0) {
        // Recompute phases' share of step time; nested recompute phases are
        // counted once by taking only outermost ones.
        int64_t recompute = 0;
        for (const Phase& p : t.phases) {
            if (p.kind != PhaseKind::Recompute || !phaseOnDevice(p, d.device)) continue;
            const Phase* parent = t.phase(p.parent);
            if (parent && parent->kind == PhaseKind::Recompute) continue;
            recompute += p.end - p.start;
        }
        s.recompute_overhead = double(recompute) / double(step_total);
    }
    return s;
}

SummaryDelta compareToBaseline(Baseline<RunSummary> baseline, Candidate<RunSummary> candidate) {
    const RunSummary& b = baseline.value;
    const RunSummary& c = candidate.value;
    SummaryDelta d;
    d.peak_bytes = c.peak_bytes - b.peak_bytes;
    d.peak_ratio = b.peak_bytes != 0 ? double(c.peak_bytes) / double(b.peak_bytes) : 1.0;
    for (int i = 0; i < kCategoryCount; ++i) d.by_category[i] = c.peak_by_category[i] - b.peak_by_category[i];
    if (b.step_time_s && c.step_time_s && *b.step_time_s > 0) d.step_time_ratio = *c.step_time_s / *b.step_time_s;
    return d;
}

std::vector<CurvePoint> differenceCurve(const StepSeries& a, const AxisMap& map_a, const StepSeries& b,
                                        const AxisMap& map_b, double x0, double x1, size_t maxPoints) {
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
        const int64_t ya = a.valueAt(map_a.inverse(x) + (map_a.forward(map_a.inverse(x) + 1) <= x ? 1 : 0));
        const int64_t yb = b.valueAt(map_b.inverse(x) + (map_b.forward(map_b.inverse(x) + 1) <= x ? 1 : 0));
        out.push_back({x, ya - yb});
    }
    return out;
}

std::vector<uint32_t> largestIntervals(const DeviceTimeline& timeline, size_t count) {
    const auto& iv = timeline.intervals;
    std::vector<uint32_t> idx(iv.size());
    std::iota(idx.begin(), idx.end(), 0u);
    auto larger = [&](uint32_t x, uint32_t y) {
        if (iv[x].size != iv[y].size) return iv[x].size > iv[y].size;
        return iv[x].start < iv[y].start;
    };
    count = std::min(count, idx.size());
    std::partial_sort(idx.begin(), idx.begin() + ptrdiff_t(count), idx.end(), larger);
    idx.resize(count);
    return idx;
}

}  // namespace memscope
