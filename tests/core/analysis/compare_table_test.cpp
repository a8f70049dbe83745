// The compare table: the numbers both the GUI and `memscope-cli compare` show.
#include "memscope/analysis/compare_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../analysis_test_util.h"
#include "memscope/report/compare_report.h"
#include "memscope/timeline/timeline.h"

namespace memscope {
namespace {

using testutil::event;
using testutil::trainingRun;

struct Runs {
    std::vector<Trace> traces;
    std::vector<std::shared_ptr<const Timeline>> timelines;
    std::vector<CompareInput> inputs;
};

Runs threeRuns() {
    Runs r;
    r.traces.push_back(trainingRun("block", "block", 1000, 3000));
    r.traces.push_back(trainingRun("full", "full", 5000));
    r.traces.push_back(trainingRun("selective", "selective", 3000, 500));
    for (const Trace& t : r.traces) r.timelines.push_back(*Timeline::build(t));
    for (size_t i = 0; i < r.traces.size(); ++i)
        r.inputs.push_back({"/runs/" + r.traces[i].metadata.name + ".memscope",
                            r.traces[i].metadata.name,
                            RunRef{&r.traces[i], &r.timelines[i]->devices().at(0)}});
    return r;
}

// Issue 64, class 6: a predicted run that claims policy "full" is never the
// default baseline while a measured run is compared.
TEST(CompareTable, APredictedRunIsNeverTheDefaultBaselineBesideAMeasuredOne) {
    Runs r = threeRuns();
    r.traces[1].prediction = Prediction{"/runs/x.memscope", "full", "full", "recorded", {}};
    EXPECT_EQ(defaultBaseline(r.inputs), 0u);  // no measured full run: the first measured
    r.traces[0].prediction = r.traces[1].prediction;
    EXPECT_EQ(defaultBaseline(r.inputs), 2u);
    r.traces[2].prediction = r.traces[1].prediction;
    EXPECT_EQ(defaultBaseline(r.inputs), 1u);  // all predicted: as before
}

TEST(CompareTable, BaselineIsTheFullPolicyAndDeltasAreAgainstIt) {
    const Runs r = threeRuns();
    EXPECT_EQ(defaultBaseline(r.inputs), 1u);
    const CompareTable t = buildCompareTable(r.inputs, defaultBaseline(r.inputs), AlignMode::Time);
    ASSERT_EQ(t.rows.size(), 3u);
    const int64_t base = t.rows[1].summary.peak_bytes;
    EXPECT_EQ(base, 9000);
    for (const CompareRow& row : t.rows) {
        ASSERT_TRUE(row.delta.peak_bytes);
        EXPECT_EQ(*row.delta.peak_bytes, row.summary.peak_bytes - base);
    }
    EXPECT_EQ(*t.rows[1].delta.peak_bytes, 0);
    EXPECT_EQ(t.cell(1, {CompareColumnKind::PeakDelta}), "—");
    EXPECT_EQ(t.cell(1, {CompareColumnKind::Run}), "full (baseline)");
    // Only the categories some run holds at its peak get a column.
    for (Category c : t.categories) {
        bool any = false;
        for (const CompareRow& row : t.rows)
            any = any || row.peak->by_category[size_t(index(c))] != 0;
        EXPECT_TRUE(any) << toString(c);
    }
    EXPECT_EQ(std::count(t.categories.begin(), t.categories.end(), Category::Unknown), 0);
    // Recorded metrics give step time and recompute overhead.
    ASSERT_TRUE(t.rows[0].summary.recompute_overhead);
    EXPECT_GT(*t.rows[0].summary.recompute_overhead, 0.0);
    EXPECT_DOUBLE_EQ(*t.rows[1].summary.recompute_overhead, 0.0);
}

TEST(CompareTable, PhaseScopeComparesThePhasePeaks) {
    const Runs r = threeRuns();
    const CompareTable t =
        buildCompareTable(r.inputs, 1, AlignMode::Step, PeakScope{TrainingPhase::Forward});
    for (size_t i = 0; i < t.rows.size(); ++i) {
        const auto& f = t.rows[i].summary.phase_peaks.by_phase[index(TrainingPhase::Forward)];
        ASSERT_TRUE(f);
        EXPECT_EQ(t.rows[i].peak->bytes, f->bytes);
        EXPECT_EQ(*t.rows[i].delta.peak_bytes, f->bytes - t.rows[1].peak->bytes);
    }
    EXPECT_EQ(t.axis_unit, "step");
    // Aligned by step, the forward peak lies inside the step it happened in.
    EXPECT_GE(t.rows[1].peak_x, 1.0);
    EXPECT_LT(t.rows[1].peak_x, 2.0);
    EXPECT_EQ(t.header({CompareColumnKind::Peak}), "Peak (forward)");
}

TEST(CompareTable, CsvTextAndJsonCarryTheSameNumbers) {
    const Runs r = threeRuns();
    const CompareTable t = buildCompareTable(r.inputs, 1, AlignMode::Time);
    const std::string csv = toCsv(t);
    EXPECT_EQ(csv.substr(0, csv.find('\n')).rfind("path,run,peak_bytes,delta_peak_bytes,", 0), 0u)
        << csv;
    EXPECT_NE(csv.find("/runs/full.memscope,full,9000,0,"), std::string::npos) << csv;
    const std::string text = toText(t);
    EXPECT_NE(text.find("full (baseline)"), std::string::npos);
    // Header, three rows, and two lines per non-baseline run: what changed,
    // and why (policy_explainer.h).
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 8);
    EXPECT_NE(text.find("block vs full: \u2212"), std::string::npos) << text;
    EXPECT_NE(text.find("  why: the peak is in backward"), std::string::npos) << text;

    const auto j = nlohmann::json::parse(toJson(t));
    EXPECT_EQ(j["baseline"], "/runs/full.memscope");
    ASSERT_EQ(j["runs"].size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
        const auto& row = j["runs"][i];
        EXPECT_EQ(row["path"], t.rows[i].path);
        EXPECT_EQ(row["peak_bytes"].get<int64_t>(), t.rows[i].summary.peak_bytes);
        EXPECT_EQ(row["delta_peak_bytes"].get<int64_t>(), t.rows[i].summary.peak_bytes - 9000);
        EXPECT_TRUE(row["peak_time_us"].is_number());
        EXPECT_TRUE(row["step_time_ms"].is_number());
        EXPECT_EQ(row["peaks_by_phase"].size(), 3u);
        int64_t highest = 0;
        for (const auto& [name, p] : row["peaks_by_phase"].items())
            highest = std::max(highest, p["bytes"].get<int64_t>());
        EXPECT_EQ(highest, row["peak_bytes"].get<int64_t>());
        EXPECT_EQ(row["categories_at_peak"].size(), t.categories.size());
    }
}

TEST(CompareTable, ARunWithoutThePhaseHasNoFigureButTheOthersStillCompare) {
    Runs r = threeRuns();
    Trace plain;
    plain.metadata.name = "plain";
    plain.events = {event(1, EventKind::Alloc, 0x10, 64, Category::Unknown)};
    auto tl = *Timeline::build(plain);
    r.inputs.push_back({"/runs/plain", "plain", RunRef{&plain, &tl->devices().at(0)}});
    const CompareTable t =
        buildCompareTable(r.inputs, 1, AlignMode::Phase, PeakScope{TrainingPhase::Backward});
    EXPECT_FALSE(t.rows[3].peak);
    EXPECT_FALSE(t.rows[3].delta.peak_bytes);
    EXPECT_TRUE(t.rows[3].alignment.fell_back);
    EXPECT_EQ(t.cell(3, {CompareColumnKind::Peak}), "—");
    EXPECT_EQ(t.raw(3, {CompareColumnKind::PeakDelta}), "");
    const auto j = nlohmann::json::parse(toJson(t));
    EXPECT_TRUE(j["runs"][3]["peak_bytes"].is_null());
}

}  // namespace
}  // namespace memscope
