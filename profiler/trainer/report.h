#pragma once
// The per-run report: tables on stdout and the same figures as JSON
// (summary.json, written with RapidJSON).

#include <array>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analysis.h"
#include "config.h"
#include "memscope/analysis/activation_theory.h"
#include "memscope/timeline/phase_peaks.h"
#include "trainer.h"

namespace memscope::trainer {

struct PolicyReport {
    RunResult run;
    std::optional<PeakInfo> peak;           // absent when not recorded
    int64_t activation_at_forward_end = 0;  // last step
    int64_t max_gradient_bytes = 0;
    double mean_step_ms = 0;  // steps after the first (warm-up) when there are any
    double mean_recompute_ms = 0;
    std::optional<double> overhead_vs_full;  // (step - full step) / full step
    // Core's per-phase peaks (forward, backward, optimizer; each absent when
    // the phase was not recorded) of the device with the highest peak, and
    // the same as `memscope-cli summary --json` prints them
    // (devices.<id>.peaks_by_phase); "" when not recorded.
    std::array<std::optional<WindowPeak>, kTrainingPhaseCount> phase_peaks;
    std::string peaks_by_phase_json;
    // Whether no other recorded run of the same table is both no larger and
    // no slower (and better in one); absent when not recorded (markFrontier).
    std::optional<bool> on_frontier;
    // Activation bytes per layer against the literature's formula for the
    // policy (core's activation_theory.h); absent when not recorded.
    std::optional<ActivationTheory> theory;
};

// The answer to --budget: the fastest recorded run whose peak fits.
struct BudgetReport {
    int64_t bytes = 0;
    std::optional<std::string> policy;  // null when none fits
    int64_t short_by_bytes = 0;         // how far the smallest peak is over; 0 when one fits
    std::string line;                   // the sentence printed
};

// Reads the run's trace back (when it has one) and derives the figures.
Result<PolicyReport> makeReport(RunResult run);
// Fills overhead_vs_full for every report when a "full" run is among them.
void compareToFull(std::vector<PolicyReport>& reports);
// Fills on_frontier for every recorded report: peak against mean step time
// (core's policy_frontier).
void markFrontier(std::vector<PolicyReport>& reports);
// The fastest recorded run whose peak is at most `bytes`.
BudgetReport answerBudget(const std::vector<PolicyReport>& reports, int64_t bytes);

// The run table, the per-phase table, (two or more recorded runs) the
// frontier table: peak, phase peaks, step and recompute time, on the
// frontier; and activation bytes per layer against the formulas.
void printTable(std::ostream& out, const TrainConfig& config, const std::string& preset,
                const std::vector<PolicyReport>& reports);
// `budget` adds the top-level "budget" object.
std::string toJson(const TrainConfig& config, const std::string& preset,
                   const std::vector<PolicyReport>& reports,
                   const std::optional<BudgetReport>& budget = std::nullopt);

}  // namespace memscope::trainer
