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
#include "memscope/phase_peaks.h"
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
};

// Reads the run's trace back (when it has one) and derives the figures.
Result<PolicyReport> makeReport(RunResult run);
// Fills overhead_vs_full for every report when a "full" run is among them.
void compareToFull(std::vector<PolicyReport>& reports);

void printTable(std::ostream& out, const TrainConfig& config, const std::string& preset,
                const std::vector<PolicyReport>& reports);
std::string toJson(const TrainConfig& config, const std::string& preset,
                   const std::vector<PolicyReport>& reports);

}  // namespace memscope::trainer
