#pragma once
// The what-if simulator against the trainer's ground truth: the trainer runs
// full-save and the policies, memscope predicts each policy from the
// full-save run alone (whatif.h), and every prediction is scored against the
// measured run of the same policy. Shared by the test that holds the
// targets (tests/trainer/whatif_ground_truth_test.cpp) and the benchmark
// that prints the table (memscope-bench-whatif).

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config.h"
#include "memscope/base/result.h"
#include "memscope/model/phases.h"

namespace memscope::whatif_truth {

struct Row {
    std::string policy;
    std::optional<std::string> refused;
    int64_t predicted_peak = 0, measured_peak = 0;
    std::array<std::optional<int64_t>, kTrainingPhaseCount> predicted_phase{}, measured_phase{};
    // The forward+backward increase: the higher of the two phase peaks over
    // the live bytes at the forward's start (what the literature quotes).
    int64_t predicted_increase = 0, measured_increase = 0;
    double predicted_recompute_ms = 0, measured_recompute_ms = 0;
    bool predicted_frontier = false, measured_frontier = false;

    double peakError() const;  // (predicted - measured) / measured
    std::optional<double> phaseError(TrainingPhase p) const;
    double increaseError() const;
};

struct Table {
    std::string model;  // "gpt quick"
    std::vector<Row> rows;
    double load_ms = 0, predict_ms = 0;  // the full-save run's open, all predictions
};

// The sweep both check: every layer-set policy and opt-in-bwd, alone and
// composed, selective and the save lists the model has (a gpt adds its
// attention core's).
std::vector<std::string> sweepPolicies(trainer::ModelKind model);

// Runs full-save and `policies` (memscope-train's names) with `config` into
// `dir`, predicts them from full-save and scores them.
Result<Table> run(const trainer::TrainConfig& config, const std::string& preset,
                  const std::vector<std::string>& policies, const std::string& dir);

std::string format(const Table& table);

}  // namespace memscope::whatif_truth
