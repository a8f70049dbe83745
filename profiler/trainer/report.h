#pragma once
// The per-run report: a table on stdout and the same figures as JSON.

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analysis.h"
#include "config.h"
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
