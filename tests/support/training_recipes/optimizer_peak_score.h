#pragma once
// The figures issue 58's truth table gives per file: at the peak of the
// optimizer phase, where every parameter, its gradient and the optimizer's
// state are alive, the bytes memscope puts in each category, against the
// truth where it is known allocation by allocation (a recipe's) or as totals
// (a fixture's CATEGORIES.json, a model's own count).

#include <array>
#include <cstdint>
#include <functional>
#include <string>

#include "memscope/base/result.h"
#include "memscope/open/open_run.h"
#include "training_recipe.h"

namespace memscope::recipes {

struct OptimizerPeakScore {
    bool in_optimizer_phase = false;  // else the device's peak (no optimizer phase found)
    int64_t time = 0;
    int64_t bytes = 0;
    std::array<int64_t, kCategoryCount> found{};  // bytes by category memscope gives
    std::array<int64_t, kCategoryCount> truth{};  // by true category (recipes only)
    int64_t right = 0;                            // bytes in their true category (recipes only)
    std::array<bool, kCategoryCount> recorded{};  // some of the category's bytes were recorded
    // The largest misses (recipes only): "activation->temporary 64.0 KiB, ...".
    std::string misses;

    int64_t found_of(Category c) const { return found[size_t(index(c))]; }
    int64_t truth_of(Category c) const { return truth[size_t(index(c))]; }
    double share_right() const { return bytes ? double(right) / double(bytes) : 0.0; }
    // The breakdown as a user reads it: 1 - (bytes in the wrong category in
    // total) / all, so that same-size gradient and state blocks alive from
    // before the trace, which no trace tells apart, cost nothing when their
    // bytes add up (recipes only).
    double composition_right() const;
};

// The figures at a device's optimizer-phase peak (its peak without an
// optimizer phase); `truth` gives an interval's true category.
using TruthOf = std::function<Category(const AllocationInterval&)>;
OptimizerPeakScore scoreAtOptimizerPeak(const DeviceTimeline& device, const TruthOf& truth);

// The figures at the optimizer-phase peak of the device with the highest
// peak of an opened trace, without truth.
OptimizerPeakScore scoreAtOptimizerPeak(const OpenedTrace& opened);

// A recipe written as PyTorch writes a snapshot (to `scratch`), imported,
// inferred and scored against its truth.
Result<OptimizerPeakScore> scoreRecipe(const RecipeTrace& recipe, const std::string& scratch);

// |found - truth| / truth (0 when both are 0, 1 when only the truth is).
double relativeError(int64_t found, int64_t truth);

}  // namespace memscope::recipes
