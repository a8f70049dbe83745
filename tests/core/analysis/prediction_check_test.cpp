// A predicted run against the measured run of its policy, in one compare table.
#include "memscope/analysis/prediction_check.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "../analysis_test_util.h"
#include "memscope/timeline/timeline.h"

namespace memscope {
namespace {

using testutil::trainingRun;

// A what-if's output as the table sees it: a trace marked predicted.
Trace predicted(const std::string& policy, uint64_t act, uint64_t recompute) {
    Trace t = trainingRun(policy + " (predicted)", "", act, recompute);
    // The simulator keeps the measured run's metrics; what counts is the provenance.
    t.metrics->policy = "full";
    t.prediction = Prediction{"full.memscope", "full", policy, "recorded", {}};
    return t;
}

struct Runs {
    std::vector<Trace> traces;
    std::vector<std::shared_ptr<const Timeline>> timelines;
    std::vector<CompareInput> inputs;

    void add(Trace t) { traces.push_back(std::move(t)); }
    CompareTable table(PeakScope scope = {}) {
        timelines.clear();
        inputs.clear();
        for (const Trace& t : traces) timelines.push_back(*Timeline::build(t));
        for (size_t i = 0; i < traces.size(); ++i)
            inputs.push_back(
                {"", traces[i].metadata.name, RunRef{&traces[i], &timelines[i]->devices().at(0)}});
        return buildCompareTable(inputs, 0, AlignMode::Time, scope);
    }
};

TEST(PredictionCheck, APredictionIsCheckedAgainstTheMeasuredRunOfItsPolicy) {
    Runs r;
    r.add(trainingRun("full", "full", 5000));
    r.add(trainingRun("block", "block", 1000, 3000));
    r.add(predicted("block", 1200, 3000));
    r.add(predicted("sqrt", 2000, 2000));  // no measured sqrt run
    const CompareTable t = r.table();
    const auto checks = predictionChecks(t);
    ASSERT_EQ(checks.size(), 4u);
    EXPECT_FALSE(checks[0]);  // measured rows carry no check
    EXPECT_FALSE(checks[1]);
    EXPECT_FALSE(checks[3]);
    ASSERT_TRUE(checks[2]);
    EXPECT_EQ(checks[2]->measured_row, 1u);
    const int64_t measured = t.rows[1].peak->bytes, guess = t.rows[2].peak->bytes;
    ASSERT_NE(measured, guess);  // the test means something only if they differ
    EXPECT_EQ(checks[2]->delta_bytes, guess - measured);
    EXPECT_DOUBLE_EQ(checks[2]->delta_fraction, double(guess - measured) / double(measured));
}

TEST(PredictionCheck, NeverAgainstAnotherPredictionNorTheSourceOfAnotherPolicy) {
    Runs r;
    r.add(trainingRun("full", "full", 5000));  // the source: policy full, not block
    r.add(predicted("block", 1200, 3000));
    Trace other = predicted("block", 1000, 3000);
    other.metrics->policy = "block";  // a prediction that says block is still no measurement
    r.add(std::move(other));
    for (const auto& c : predictionChecks(r.table())) EXPECT_FALSE(c);
}

TEST(PredictionCheck, UsesTheTablesScope) {
    Runs r;
    r.add(trainingRun("block", "block", 1000, 3000));
    r.add(predicted("block", 1500, 3000));
    const CompareTable t = r.table(PeakScope{TrainingPhase::Forward});
    const auto checks = predictionChecks(t);
    ASSERT_TRUE(checks[1]);
    EXPECT_EQ(checks[1]->measured_row, 0u);
    EXPECT_EQ(checks[1]->delta_bytes, t.rows[1].peak->bytes - t.rows[0].peak->bytes);
    // The forward's peak is not the run's: the check follows the scope.
    EXPECT_NE(t.rows[0].peak->bytes, t.rows[0].summary.peak_bytes);
}

TEST(PredictionCheck, CellReadsAsASignedPercentage) {
    EXPECT_EQ(predictionCheckCell({0, 31, 0.031}), "+3.1%");
    EXPECT_EQ(predictionCheckCell({0, -4, -0.004}), "-0.4%");
    EXPECT_EQ(predictionCheckCell({0, 0, -0.0004}), "0.0%");
    EXPECT_EQ(predictionCheckCell({0, 0, 0}), "0.0%");
}

}  // namespace
}  // namespace memscope
