#pragma once
// Queries over a trace's phases: the top-level training phases that per-phase
// peaks and compare alignment use, and the readable path of a phase.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memscope/model/trace.h"
#include "memscope/model/training_phase.h"

namespace memscope {

std::string_view toString(TrainingPhase phase);  // "forward", "backward", "optimizer"
// "step", "forward", "backward", "optimizer", "block", "recompute", "range".
std::string_view toString(PhaseKind kind);
std::optional<TrainingPhase> trainingPhaseFromString(std::string_view name);
std::optional<TrainingPhase> trainingPhaseOf(PhaseKind kind);

// Whether a phase applies to a device (-1 = all devices).
inline bool phaseOnDevice(const Phase& p, int16_t device) {
    return p.device < 0 || p.device == device;
}

// A step phase of a device and the boundaries of its first forward and
// backward inside it; steps ordered by start, open ones left out.
struct StepBounds {
    int64_t start = 0;
    int64_t end = 0;
    std::optional<int64_t> forward_start, backward_start, backward_end;
};
std::vector<StepBounds> stepBounds(const Trace& trace, int16_t device);

// "step 1 / backward / block 3": the phase and its parents, outermost first.
std::string phasePath(const Trace& trace, PhaseId phase);

// The first phase of `kind` in training step `step` (in the trace's order).
std::optional<PhaseId> findPhase(const Trace& trace, PhaseKind kind, int32_t step);
// Whether `phase` is `ancestor` or nested in it (a bounded walk: a corrupt
// parent cycle ends it).
bool phaseWithin(const Trace& trace, PhaseId phase, PhaseId ancestor);

}  // namespace memscope
