#pragma once
// How well category and step inference (inference.h) recovers what memscope's
// trainer recorded: a labelled trace is exported as a plain PyTorch snapshot
// with its categories, phases and annotations left out (allocations, frees,
// sizes and times are all that remain, as in a user's snapshot), loaded
// back, inferred, and scored against the labels, bytes-weighted.
//
// An ExportStyle makes the snapshot the way PyTorch >= 2.5 writes a training
// run's: the optimizer's own `Optimizer.step#…` ranges as its only
// annotations, and the history switched on after warm-up, so that what was
// alive at that moment (parameters, optimizer state) is in the end state
// without frames and without an allocation in the trace.

#include <array>
#include <cstdint>
#include <string>

#include "memscope/base/result.h"
#include "memscope/model/trace.h"

namespace memscope::ground_truth {

struct ExportStyle {
    bool optimizer_annotations = false;  // Optimizer.step#Adam.step around each optimizer phase
    int first_step = 0;                  // the history starts at this step (0 = from the start)
    int steps = -1;                      // steps kept from first_step on (-1 = all)
    std::string describe() const;        // "annotated, from step 1, 1 step"
};

struct Score {
    size_t steps_found = 0;
    size_t steps_expected = 0;  // the steps the exported history holds
    int64_t peak_bytes = 0;
    double peak_correct = 0;      // share of the bytes live at the peak in their true category
    double timeline_correct = 0;  // the same, weighted by bytes x lifetime over the whole run
    // The breakdown at the peak as a user reads it: 1 - (bytes in the wrong
    // category total) / all, so that two same-size blocks of a parameter and
    // its optimizer state told apart wrongly, which no trace can tell apart,
    // cost nothing.
    double composition_correct = 0;
    std::array<int64_t, kCategoryCount> truth_at_peak{};     // bytes by true category
    std::array<int64_t, kCategoryCount> inferred_at_peak{};  // bytes by inferred category
    std::string wrong;  // the largest misses at the peak, "activation->temporary 64 KiB, ..."
    // At the optimizer phase's peak, where every parameter, gradient and
    // state tensor is alive (optimizer_peak_score.h), by true and inferred
    // category.
    bool optimizer_peak = false;  // the import has an optimizer phase
    std::array<int64_t, kCategoryCount> truth_at_optimizer{};
    std::array<int64_t, kCategoryCount> inferred_at_optimizer{};

    // |inferred - truth| / truth of a category's bytes at the peak (0 when
    // both are 0, 1 when only the truth is 0).
    double error(Category c) const;
    // The same at the optimizer phase's peak.
    double optimizerError(Category c) const;
};

// `scratch` is a file path the exported snapshot is written to.
Result<Score> scoreInference(const Trace& labelled, const std::string& scratch,
                             const ExportStyle& style = {});

}  // namespace memscope::ground_truth
