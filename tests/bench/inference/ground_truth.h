#pragma once
// How well category and step inference (inference.h) recovers what memscope's
// trainer recorded: a labelled trace is exported as a plain PyTorch snapshot
// with its categories, phases and annotations left out (allocations, frees,
// sizes and times are all that remain, as in a user's snapshot), loaded
// back, inferred, and scored against the labels, bytes-weighted.

#include <array>
#include <cstdint>
#include <string>

#include "memscope/base/result.h"
#include "memscope/model/trace.h"

namespace memscope::ground_truth {

struct Score {
    size_t steps_found = 0;
    int64_t peak_bytes = 0;
    double peak_correct = 0;      // share of the bytes live at the peak in their true category
    double timeline_correct = 0;  // the same, weighted by bytes x lifetime over the whole run
    std::array<int64_t, kCategoryCount> truth_at_peak{};     // bytes by true category
    std::array<int64_t, kCategoryCount> inferred_at_peak{};  // bytes by inferred category
    std::string wrong;  // the largest misses at the peak, "activation->temporary 64 KiB, ..."
};

// `scratch` is a file path the exported snapshot is written to.
Result<Score> scoreInference(const Trace& labelled, const std::string& scratch);

}  // namespace memscope::ground_truth
