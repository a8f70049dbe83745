#pragma once
// Comparing runs: the per-run figures of the compare table, their differences
// against a baseline, and the difference of two live curves. Pure functions
// over Trace and DeviceTimeline, so the GUI, the CLI and the tests agree on one
// definition. The table itself (rows, columns, CSV/text/JSON) is compare_table.h.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memscope/analysis/alignment.h"
#include "memscope/model/phases.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/phase_peaks.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

// The figures of one compare-table row.
struct RunSummary {
    std::string name;
    int64_t peak_bytes = 0;
    int64_t peak_time = 0;    // run x (Event::time)
    double peak_seconds = 0;  // since the run's first event (events for EventIndex)
    std::string peak_phase;   // "step 1 / backward / block 3", "" outside phases
    std::array<int64_t, kCategoryCount> peak_by_category{};
    int64_t reserved_peak = 0;
    bool has_reserved = false;          // the source records segments (a reserved curve)
    std::optional<double> step_time_s;  // mean step time: recorded metrics, else step phases
    std::optional<double>
        recompute_overhead;  // fraction of step time: recorded metrics, else phases
    size_t steps = 0;
    PhasePeaks phase_peaks;  // per training phase and step
};

RunSummary summarizeRun(const RunRef& run);

// Which window of the run a compare looks at: the whole run or one phase.
struct PeakScope {
    std::optional<TrainingPhase> phase;  // nullopt = the whole run
};

// The peak a scope selects from a summary: the whole run's, or the phase's
// (nullopt when the run has no such phase).
std::optional<WindowPeak> scopedPeak(const RunSummary& s, PeakScope scope);

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
    std::optional<int64_t> peak_bytes;  // candidate - baseline; absent if either lacks the scope
    double peak_ratio = 1;              // candidate / baseline (1 when the baseline peak is 0)
    std::array<int64_t, kCategoryCount> by_category{};
    std::optional<double> step_time_ratio;
};

SummaryDelta compareToBaseline(Baseline<RunSummary> baseline, Candidate<RunSummary> candidate,
                               PeakScope scope = {});

// The live-bytes difference (a - b) on the shared axis over [x0, x1], at the
// change points of both level-of-detail reductions (at most about 2*maxPoints
// points), so the cost depends on maxPoints, not on the trace size.
struct CurvePoint {
    double x = 0;
    int64_t y = 0;
    friend bool operator==(const CurvePoint&, const CurvePoint&) = default;
};
std::vector<CurvePoint> differenceCurve(const StepSeries& a, const AxisMap& map_a,
                                        const StepSeries& b, const AxisMap& map_b, double x0,
                                        double x1, size_t maxPoints);

}  // namespace memscope
