#pragma once
// Tracks the peaks of live bytes per training-phase occurrence and per step
// while Timeline::build walks a device's events (private to core).
//
// An event belongs to the outermost forward/backward/optimizer ancestor of its
// recorded phase; an event without a recorded phase belongs to the top-level
// training phase whose time range holds it. Steps likewise: the step ancestor,
// else the step whose range holds the event.

#include <array>
#include <cstdint>
#include <vector>

#include "memscope/model/trace.h"
#include "memscope/timeline/phase_peaks.h"
#include "memscope/timeline/step_series.h"

namespace memscope::detail {

using CategoryBytes = std::array<int64_t, kCategoryCount>;

class PhasePeakTracker {
public:
    PhasePeakTracker(const Trace& trace, int16_t device);

    // No steps and no training phases on this device: nothing to track.
    bool idle() const { return windows_.empty(); }

    struct Slot {
        int32_t phase = -1;  // window index, -1 = none
        int32_t step = -1;
    };
    // Before a live-changing event is applied: which windows it belongs to;
    // opens them with the live bytes before the event.
    Slot enter(const Event& e, int64_t local, int64_t live, const CategoryBytes& by_category);
    // After it is applied: a new maximum of the windows is recorded.
    void update(Slot slot, const Event& e, int64_t local, int64_t live,
                const CategoryBytes& by_category);

    // `initial` is what ghosts added to every value (known only at the end);
    // windows without a live-changing event read their value off the series.
    PhasePeaks finish(int64_t initial_live, const CategoryBytes& initial_by_category,
                      const StepSeries& live,
                      const std::array<StepSeries, kCategoryCount>& live_by_category) const;

private:
    struct Window {
        int64_t start = 0;
        int64_t end = 0;    // INT64_MAX while open at the end of recording
        int8_t phase = -1;  // TrainingPhase index, -1 = a step
        int32_t step = -1;  // step ordinal (for steps: their own)
        int32_t recorded_step = -1;
        PhaseId id;  // the phase record of the window
        // Tracking state, relative to the ghosts' initial bytes.
        bool seen = false;
        int64_t start_live = 0;
        WindowPeak peak;
    };
    void touch(Window& w, const Event& e, int64_t local, int64_t live,
               const CategoryBytes& by_category);
    int32_t phaseWindowOf(PhaseId id);
    int32_t stepWindowOf(PhaseId id, int64_t time);
    static int32_t byTime(const std::vector<int32_t>& sorted, const std::vector<Window>& windows,
                          int64_t time);

    const Trace& trace_;
    std::vector<Window> windows_;
    std::vector<int32_t> steps_;   // window indexes of steps, by start (= step ordinal order)
    std::vector<int32_t> phases_;  // window indexes of top-level training phases, by start
    // Per PhaseId: the window of its outermost training ancestor (-1 none, -2 not computed yet),
    // and of its step ancestor (-1 none, -2 not computed yet).
    std::vector<int32_t> phase_window_;
    std::vector<int32_t> step_window_;
};

}  // namespace memscope::detail
