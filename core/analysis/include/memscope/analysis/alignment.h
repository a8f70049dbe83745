#pragma once
// The shared x axis of a comparison: a monotone map from each run's time onto
// one axis, lining runs up by time since start, by training step, or by phase
// (forward/backward boundaries on the reference's). Pure functions, so the GUI's
// compare view and `memscope-cli compare --align` agree.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

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

// Seconds per unit of Event::time: 1e-9 with a clock, 1 (one event) without.
inline double timeScale(const Trace& trace) {
    return trace.metadata.time_base == TimeBase::Nanoseconds ? 1e-9 : 1.0;
}

// Maps every run onto one axis. In Phase mode the boundaries inside a step
// (forward start, backward start, backward end) land at the reference run's
// average fractions of its step, so a slower run's backward still lines up with
// the reference's backward. A run without step phases falls back to Time.
std::vector<Alignment> alignRuns(std::span<const RunRef> runs, AlignMode mode,
                                 size_t reference = 0);

}  // namespace memscope
