#pragma once
// A predicted run (the what-if, Trace::prediction) against a measured run of
// the same policy, where one comparison holds both: how far the prediction's
// peak lies from what was measured. The GUI's compare table shows it beside
// each predicted row, so a prediction is never read without its check when
// the check is at hand.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memscope/analysis/compare_table.h"

namespace memscope {

struct PredictionCheck {
    size_t measured_row = 0;    // the table row of the measured run of the same policy
    int64_t delta_bytes = 0;    // predicted peak - measured peak, in the table's scope
    double delta_fraction = 0;  // delta / measured peak (0 when the measured peak is 0)
};

// Per table row: set for a predicted row when a measured row (no
// Trace::prediction) recorded the predicted policy (RunMetrics::policy equal
// to Prediction::policy; the first such row), and both have a peak in the
// table's scope. Unset for measured rows and for predictions without a match.
std::vector<std::optional<PredictionCheck>> predictionChecks(const CompareTable& table);

// "+3.1%", "−0.4%", "0.0%": the difference as the table shows it.
std::string predictionCheckCell(const PredictionCheck& check);

}  // namespace memscope
