#pragma once
// Comparing runs: the shared x axis that lines runs up by time, by step or by
// phase; the per-run figures of the compare table; the difference of two live
// curves. Pure functions over Trace and DeviceTimeline, so the GUI, the CLI and
// the tests agree on one definition.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "memscope/timeline.h"
#include "memscope/trace.h"

namespace memscope {

enum class AlignMode : uint8_t {
    Time = 0,   // seconds since the run's first event (events where TimeBase::EventIndex)
    Step = 1,   // step k spans [k, k+1), linear inside a step
    Phase = 2,  // like Step, and forward/backward boundaries land on the reference's
};

// A monotone piecewise-linear map from one run's x (Event::time) to the shared
// compare axis. Outside its knots it extrapolates with the end segments' slopes,
// so a view can zoom past the recorded range without jumps.
class AxisMap {
public:
    AxisMap() = default;
    // shared = (x - origin) * scale
    static AxisMap linear(int64_t origin, double scale);
    // Knots must have strictly increasing x and non-decreasing shared values;
    // violating knots are dropped (a broken phase must not fold the axis).
    static AxisMap fromKnots(std::vector<int64_t> xs, std::vector<double> shared);

    double forward(int64_t x) const;
    // The run x that maps to `shared` (rounded down); the inverse of forward on
    // the knots' range.
    int64_t inverse(double shared) const;
    size_t knotCount() const { return xs_.size(); }

private:
    std::vector<int64_t> xs_;
    std::vector<double> shared_;
    double slope_before_ = 1.0;  // shared units per x unit outside the knots
    double slope_after_ = 1.0;
};

// One run of a comparison: a trace and the device timeline being compared.
struct RunRef {
    const Trace* trace = nullptr;
    const DeviceTimeline* timeline = nullptr;
};

struct Alignment {
    AxisMap map;
    AlignMode mode = AlignMode::Time;  // the mode actually used
    bool fell_back = false;            // Step/Phase asked but the run has no step phases
};

// The shared-axis unit for a mode ("s", "events", "step").
std::string alignUnit(AlignMode mode, const RunRef& run);

// Maps every run onto one axis. In Phase mode the boundaries inside a step
// (forward start, backward start, backward end) land at the reference run's
// average fractions of its step, so a slower run's backward still lines up with
// the reference's backward. A run without step phases falls back to Time.
std::vector<Alignment> alignRuns(std::span<const RunRef> runs, AlignMode mode, size_t reference = 0);

// The figures of one compare-table row.
struct RunSummary {
    std::string name;
    int64_t peak_bytes = 0;
    int64_t peak_time = 0;          // run x (Event::time)
    double peak_seconds = 0;        // since the run's first event (events for EventIndex)
    std::string peak_phase;         // "step 1 / backward / block 3", "" outside phases
    std::array<int64_t, kCategoryCount> peak_by_category{};
    int64_t reserved_peak = 0;
    std::optional<double> step_time_s;         // mean Step phase duration, or metadata
    std::optional<double> recompute_overhead;  // fraction of step time, metadata or phases
    size_t steps = 0;
};

RunSummary summarizeRun(const RunRef& run);

// Run identity is part of the type, so a baseline and a candidate cannot be
// swapped by accident (Orbit's Baseline<T>/Comparison<T>).
template <typename T>
struct Baseline {
    const T& value;
};
template <typename T>
struct Candidate {
    const T& value;
};

struct SummaryDelta {
    int64_t peak_bytes = 0;  // candidate - baseline
    double peak_ratio = 1;   // candidate / baseline (1 when the baseline peak is 0)
    std::array<int64_t, kCategoryCount> by_category{};
    std::optional<double> step_time_ratio;
};

SummaryDelta compareToBaseline(Baseline<RunSummary> baseline, Candidate<RunSummary> candidate);

// The live-bytes difference (a - b) on the shared axis over [x0, x1], at the
// change points of both level-of-detail reductions (at most about 2*maxPoints
// points), so the cost depends on maxPoints, not on the trace size.
struct CurvePoint {
    double x = 0;
    int64_t y = 0;
    friend bool operator==(const CurvePoint&, const CurvePoint&) = default;
};
std::vector<CurvePoint> differenceCurve(const StepSeries& a, const AxisMap& map_a, const StepSeries& b,
                                        const AxisMap& map_b, double x0, double x1, size_t maxPoints);

// "step 1 / backward / block 3": the phase and its parents, outermost first.
std::string phasePath(const Trace& trace, PhaseId phase);

// The largest intervals of a device, largest first (ties: earlier start first);
// the by-allocation timeline draws these as their own bands.
std::vector<uint32_t> largestIntervals(const DeviceTimeline& timeline, size_t count);

}  // namespace memscope
