// Issue 58's truth table: for each class of training snapshot PyTorch writes
// (built here with the truth of every allocation, training_recipe.h), and for
// the shared fixture with its CATEGORIES.json, the parameter, gradient and
// optimizer-state bytes at the optimizer-phase peak against the truth. The
// table is printed; each figure must be within 5 % of the truth.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "memscope/base/units.h"
#include "memscope/builtin_plugins.h"
#include "optimizer_peak_score.h"
#include "training_recipe.h"

namespace memscope::recipes {
namespace {

namespace fs = std::filesystem;

constexpr Category kScored[] = {Category::Parameter, Category::Gradient, Category::OptimizerState};

void printRow(const std::string& name, const OptimizerPeakScore& s,
              const std::array<int64_t, 3>& truth, double share) {
    std::string cells;
    for (size_t i = 0; i < 3; ++i) {
        char cell[64];
        const int64_t found = s.found_of(kScored[i]);
        std::snprintf(cell, sizeof cell, " %10s/%-10s %+6.1f%%", formatBytes(found).c_str(),
                      formatBytes(truth[i]).c_str(),
                      truth[i] ? 100.0 * double(found - truth[i]) / double(truth[i]) : 0.0);
        cells += cell;
    }
    std::printf("%-48s%s %6.1f%%  %s%s\n", name.c_str(), cells.c_str(), 100 * share,
                s.misses.c_str(), s.in_optimizer_phase ? "" : "  (no optimizer phase)");
}

void printHeader() {
    std::printf("%-48s %29s %29s %29s %7s\n", "class (found/truth at the optimizer-phase peak)",
                "parameter", "gradient", "optimizer_state", "right");
}

class CategoryClasses : public ::testing::TestWithParam<TrainingRecipe> {};

TEST_P(CategoryClasses, ParameterGradientAndStateWithinFivePercentAtTheOptimizerPeak) {
    const TrainingRecipe& recipe = GetParam();
    const RecipeTrace built = buildRecipe(recipe);
    const fs::path scratch = fs::temp_directory_path() / ("memscope-category-classes-" +
                                                          std::to_string(::getpid()) + ".pickle");
    auto score = scoreRecipe(built, scratch.string());
    fs::remove(scratch);
    ASSERT_TRUE(score.ok()) << score.message();
    // The recipe's truth at the peak is the model's own count (every
    // parameter, gradient and state tensor is alive there), but for the
    // allocator's rounding to 512 B.
    EXPECT_LE(relativeError(score->truth_of(Category::Parameter), built.parameter_bytes), 0.01);
    EXPECT_LE(relativeError(score->truth_of(Category::Gradient), built.gradient_bytes), 0.01);
    EXPECT_LE(relativeError(score->truth_of(Category::OptimizerState), built.optimizer_state_bytes),
              0.01);
    printHeader();
    printRow(recipe.name, *score,
             {built.parameter_bytes, built.gradient_bytes, built.optimizer_state_bytes},
             score->composition_right());
    EXPECT_TRUE(score->in_optimizer_phase);
    for (Category c : kScored)
        EXPECT_LE(relativeError(score->found_of(c), score->truth_of(c)), 0.05)
            << toString(c) << ": " << formatBytes(score->found_of(c)) << " against "
            << formatBytes(score->truth_of(c));
    EXPECT_GE(score->composition_right(), 0.9);
}

INSTANTIATE_TEST_SUITE_P(Issue58, CategoryClasses, ::testing::ValuesIn(issue58Classes()),
                         [](const ::testing::TestParamInfo<TrainingRecipe>& info) {
                             std::string name;
                             for (char c : info.param.name)
                                 name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                             return name;
                         });

// The shared fixtures with a truth in CATEGORIES.json (real snapshots, made
// by PyTorch's own optimizers).
TEST(CategoryFixtures, TheOptimizerPeakMatchesCategoriesJson) {
    const fs::path dir = MEMSCOPE_FIXTURES_DIR;
    const fs::path truth_file = dir / "CATEGORIES.json";
    if (!fs::exists(dir)) GTEST_SKIP() << "fixtures folder missing: " << dir.string();
    if (!fs::exists(truth_file)) GTEST_SKIP() << "no " << truth_file.string();
    std::ifstream in(truth_file);
    const nlohmann::json truth = nlohmann::json::parse(in, nullptr, false);
    ASSERT_FALSE(truth.is_discarded()) << truth_file.string();
    printHeader();
    for (const auto& [file, expected] : truth.items()) {
        const auto& at = expected.at("at_optimizer_step");
        auto opened = openTrace((dir / "snapshots" / file).string(), processRegistry());
        ASSERT_TRUE(opened.ok()) << opened.message();
        const OptimizerPeakScore s = scoreAtOptimizerPeak(*opened);
        const std::array<int64_t, 3> want = {at.at("parameter_bytes").get<int64_t>(),
                                             at.at("gradient_bytes").get<int64_t>(),
                                             at.at("optimizer_state_bytes").get<int64_t>()};
        int64_t right = 0;
        for (size_t i = 0; i < 3; ++i) right += std::min(s.found_of(kScored[i]), want[i]);
        printRow(file, s, want, s.bytes ? double(right) / double(s.bytes) : 0.0);
        EXPECT_TRUE(s.in_optimizer_phase) << file;
        for (size_t i = 0; i < 3; ++i)
            EXPECT_LE(relativeError(s.found_of(kScored[i]), want[i]), 0.05)
                << file << " " << toString(kScored[i]) << ": "
                << formatBytes(s.found_of(kScored[i])) << " against " << formatBytes(want[i]);
    }
}

}  // namespace
}  // namespace memscope::recipes
