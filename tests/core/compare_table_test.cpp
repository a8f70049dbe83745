// The compare table (the numbers both the GUI and `memscope-cli compare`
// show), the CI gate's rules, and the stacking order the views share.
#include "memscope/compare_table.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "analysis_test_util.h"
#include "memscope/allocation_order.h"
#include "memscope/allocation_search.h"
#include "memscope/peak_check.h"

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
    // Header, three rows, and a line per non-baseline run on what changed.
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 6);
    EXPECT_NE(text.find("block vs full: \u2212"), std::string::npos) << text;

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

TEST(PeakCheck, LimitsDevicesAndPhases) {
    const Trace t = trainingRun("full", "full", 5000);
    auto tl = *Timeline::build(t);
    auto whole = peaksToCheck(*tl, std::nullopt, std::nullopt);
    ASSERT_TRUE(whole.ok());
    ASSERT_EQ(whole->size(), 1u);
    EXPECT_EQ((*whole)[0].bytes, 9000);
    EXPECT_FALSE(judge((*whole)[0], 9000).over);
    const CheckVerdict over = judge((*whole)[0], 8999);
    EXPECT_TRUE(over.over);
    EXPECT_NE(over.message.find("device 0"), std::string::npos) << over.message;
    EXPECT_NE(over.message.find("1 B"), std::string::npos) << over.message;
    auto fwd = peaksToCheck(*tl, int16_t(0), TrainingPhase::Forward);
    ASSERT_TRUE(fwd.ok());
    EXPECT_EQ((*fwd)[0].bytes, 8050);
    EXPECT_NE(judge((*fwd)[0], 1).message.find("forward"), std::string::npos);
    EXPECT_FALSE(peaksToCheck(*tl, int16_t(3), std::nullopt).ok());

    Trace plain;
    plain.events = {event(1, EventKind::Alloc, 0x10, 64, Category::Unknown)};
    auto ptl = *Timeline::build(plain);
    auto missing = peaksToCheck(*ptl, std::nullopt, TrainingPhase::Optimizer);
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.message().find("no optimizer phase"), std::string::npos) << missing.message();

    EXPECT_EQ(growthLimit(1000, 10), 1100);
    EXPECT_EQ(growthLimit(1000, 0), 1000);
    EXPECT_EQ(growthLimit(1000, -50), 500);
    EXPECT_EQ(growthLimit(INT64_MAX, 50), INT64_MAX);
}

// A trace with recorded categories opens by category; one whose allocations
// are all "unknown" (a user's snapshot) opens by allocation.
TEST(AllocationOrder, DefaultModeFollowsTheRecordedCategories) {
    DeviceTimeline tl;
    EXPECT_EQ(defaultStackMode(tl), StackMode::ByCategory);  // nothing to show either way
    AllocationInterval a;
    a.size = 10;
    tl.intervals = {a, a};
    EXPECT_EQ(defaultStackMode(tl), StackMode::ByAllocation);
    tl.intervals[1].category = Category::Activation;
    EXPECT_EQ(defaultStackMode(tl), StackMode::ByCategory);
    EXPECT_EQ(stackModeFromString("allocation"), StackMode::ByAllocation);
    EXPECT_EQ(stackModeFromString(toString(StackMode::ByCategory)), StackMode::ByCategory);
    EXPECT_FALSE(stackModeFromString("site").has_value());
}

TEST(AllocationOrder, HitTestFollowsTheStackingOfEachMode) {
    Trace t;
    t.events = {event(0, EventKind::Alloc, 0x100, 10, Category::Activation),
                event(1, EventKind::Alloc, 0x200, 20, Category::Parameter),
                event(2, EventKind::Alloc, 0x300, 30, Category::Activation)};
    auto tl = *Timeline::build(t);
    const DeviceTimeline& d = tl->devices().at(0);
    // By category: parameter (index 0) at the bottom, then activations by start.
    const auto order = stackedAt(d, StackMode::ByCategory, {}, 5);
    ASSERT_EQ(order.size(), 3u);
    EXPECT_EQ(d.intervals[order[0]].size, 20u);
    EXPECT_EQ(d.intervals[order[1]].size, 10u);
    EXPECT_EQ(d.intervals[order[2]].size, 30u);
    EXPECT_EQ(d.intervals[*allocationAt(d, StackMode::ByCategory, {}, 5, 25.0)].size, 10u);
    EXPECT_FALSE(allocationAt(d, StackMode::ByCategory, {}, 5, 60.0));
    // By allocation: those without a band first, then the shown ones.
    const auto largest = largestIntervals(d, 1);
    const auto shown = shownIntervals(d, largest, 0, 10, 64);
    ASSERT_EQ(shown.size(), 1u);
    EXPECT_EQ(d.intervals[shown[0]].size, 30u);
    EXPECT_EQ(d.intervals[*allocationAt(d, StackMode::ByAllocation, shown, 5, 35.0)].size, 30u);
    EXPECT_EQ(d.intervals[*allocationAt(d, StackMode::ByAllocation, shown, 5, 5.0)].size, 10u);
}

TEST(AllocationSearch, ByAddressInsideABlockAndByFrameText) {
    Trace t;
    const FrameId f =
        t.internFrame({t.internString("softmax"), t.internString("/src/Model.py"), 419});
    const std::array frames{f};
    const StackId s = t.internStack(frames);
    t.events = {event(0, EventKind::Alloc, 0x1000, 256, Category::Activation),
                event(1, EventKind::Alloc, 0x2000, 512, Category::Activation)};
    t.events[1].stack = s;
    auto tl = *Timeline::build(t);
    const DeviceTimeline& d = tl->devices().at(0);
    auto byAddr = searchAllocations(t, d, " 0x10ff ", 10);
    ASSERT_EQ(byAddr.intervals.size(), 1u);
    EXPECT_EQ(d.intervals[byAddr.intervals[0]].address, 0x1000u);
    EXPECT_EQ(searchAllocations(t, d, "4096", 10).total_matches, 1u);  // decimal 4096 = 0x1000
    EXPECT_EQ(searchAllocations(t, d, "4352", 10).total_matches,
              0u);  // 0x1100: just past the block
    auto byText = searchAllocations(t, d, "model.PY", 10);
    ASSERT_EQ(byText.intervals.size(), 1u);
    EXPECT_EQ(d.intervals[byText.intervals[0]].size, 512u);
    EXPECT_EQ(searchAllocations(t, d, "   ", 10).total_matches, 0u);
}

}  // namespace
}  // namespace memscope
