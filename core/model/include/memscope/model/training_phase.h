#pragma once
// The top-level phases of a training step, apart from the queries over a
// trace's phases (phases.h), so that the trace's own sections can name them.

#include <array>
#include <cstdint>

namespace memscope {

// The top-level phases of a training step. Recompute and optimizer work done
// inside backward (block checkpointing, the optimizer fused into backward)
// belong to backward: a phase counts under its outermost training ancestor.
enum class TrainingPhase : uint8_t { Forward = 0, Backward = 1, Optimizer = 2 };
inline constexpr int kTrainingPhaseCount = 3;
inline constexpr std::array<TrainingPhase, kTrainingPhaseCount> kAllTrainingPhases = {
    TrainingPhase::Forward, TrainingPhase::Backward, TrainingPhase::Optimizer};

constexpr int index(TrainingPhase p) {
    return static_cast<int>(p);
}

}  // namespace memscope
