#pragma once
// Peaks of live bytes within training phases and steps, per device: what
// PyTorch users quote as "the peak increase during forward+backward"
// (torch.cuda.max_memory_allocated() minus the memory before forward).
// Computed by Timeline::build in its one pass over the events.

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "memscope/model/phases.h"
#include "memscope/model/trace.h"
#include "memscope/model/types.h"

namespace memscope {

// The highest live bytes within one window (a phase occurrence or a step).
struct WindowPeak {
    int64_t bytes = 0;
    int64_t time = 0;          // Event::time of the peak (the window's start if nothing rose)
    int64_t event_index = -1;  // device-local index of the peak event; -1 = the state at the start
    int64_t start_bytes = 0;   // live bytes when the window began
    int32_t step = -1;  // ordinal of the window's step (index into PhasePeaks::by_step), -1 = none
    PhaseId phase;      // innermost recorded phase of the peak event
    std::array<int64_t, kCategoryCount> by_category{};

    int64_t increaseBytes() const { return bytes - start_bytes; }
};

struct StepPeaks {
    int32_t index = 0;           // ordinal among the device's steps, by start
    int32_t recorded_step = -1;  // Phase::step of the step phase, -1 unknown
    int64_t start = 0;
    int64_t end = 0;
    WindowPeak whole;
    std::array<std::optional<WindowPeak>, kTrainingPhaseCount> phases;  // absent: not in this step
};

struct PhasePeaks {
    // The highest occurrence of each training phase over the whole run; its
    // increase is against the start of that occurrence.
    std::array<std::optional<WindowPeak>, kTrainingPhaseCount> by_phase;
    std::vector<StepPeaks> by_step;

    bool empty() const;
    // The highest of by_phase, or nullopt.
    std::optional<WindowPeak> highest() const;
};

}  // namespace memscope
