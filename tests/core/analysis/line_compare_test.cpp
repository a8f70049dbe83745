// Bytes by source line across runs (memscope/analysis/line_compare.h): lines
// matched by function, file name and line across two checkouts; every run's
// column adds up to its peak; the rest and the allocations without a user
// frame come last.
#include "memscope/analysis/line_compare.h"

#include <gtest/gtest.h>

#include "../analysis_test_util.h"

namespace memscope {
namespace {

constexpr int64_t MiB = 1 << 20;

LineBytes line(std::string function, std::string file, uint32_t number, int64_t bytes,
               uint32_t count, std::vector<uint32_t> intervals) {
    LineBytes l;
    l.function = std::move(function);
    l.file = std::move(file);
    l.line = number;
    l.label = l.function + "  (" + l.file + ":" + std::to_string(number) + ")";
    l.bytes = bytes;
    l.count = count;
    l.intervals = std::move(intervals);
    return l;
}

TEST(LineCompare, LinesMatchByFunctionFileNameAndLineAcrossCheckouts) {
    LinesAtPeak a, b;
    a.rows = {line("forward", "/home/me/main/model.py", 30, 4 * MiB, 4, {0, 1, 2, 3}),
              line("log_extra", "/home/me/main/train.py", 90, 3 * MiB, 1, {4})};
    LineBytes none;
    none.label = kNoUserLineLabel;
    none.bytes = 2 * MiB;
    none.count = 2;
    none.intervals = {5, 6};
    a.rows.push_back(none);
    a.total = 9 * MiB;
    // B: another checkout; the same line, a line A lacks, and one line
    // beyond its `top`.
    b.rows = {line("forward", "/tmp/other/model.py", 30, MiB, 1, {7}),
              line("checkpoint_input", "/tmp/other/model.py", 35, MiB / 2, 2, {8, 9}),
              // Same file and line, another function: another row.
              line("backward", "/tmp/other/model.py", 30, MiB / 4, 1, {10})};
    b.rest_bytes = MiB / 4;
    b.rest_count = 1;
    b.total = 2 * MiB;

    const LinesCompared c = compareLines({&a, &b});
    EXPECT_EQ(c.totals, (std::vector<int64_t>{9 * MiB, 2 * MiB}));
    ASSERT_EQ(c.rows.size(), 6u);
    EXPECT_EQ(c.rows[0].label, "forward  (model.py:30)");
    EXPECT_EQ(c.rows[0].bytes, (std::vector<int64_t>{4 * MiB, MiB}));
    EXPECT_EQ(c.rows[0].counts, (std::vector<uint32_t>{4, 1}));
    EXPECT_EQ(c.rows[0].intervals, (std::vector<std::vector<uint32_t>>{{0, 1, 2, 3}, {7}}));
    EXPECT_EQ(c.rows[1].label, "log_extra  (train.py:90)");
    EXPECT_EQ(c.rows[1].bytes, (std::vector<int64_t>{3 * MiB, 0}));
    EXPECT_EQ(c.rows[2].label, "checkpoint_input  (model.py:35)");
    EXPECT_EQ(c.rows[3].label, "backward  (model.py:30)");
    EXPECT_EQ(c.rows[4].label, kOtherLinesLabel);
    EXPECT_EQ(c.rows[4].bytes, (std::vector<int64_t>{0, MiB / 4}));
    EXPECT_EQ(c.rows[5].label, kNoUserLineLabel);
    EXPECT_EQ(c.rows[5].bytes, (std::vector<int64_t>{2 * MiB, 0}));
    for (size_t k = 0; k < 2; ++k) {
        int64_t sum = 0;
        for (const LineAcrossRuns& r : c.rows) sum += r.bytes[k];
        EXPECT_EQ(sum, c.totals[k]) << "run " << k;
    }
}

TEST(LineCompare, TwoRecordedRunsAddUpToTheirPeaks) {
    const Trace a =
        testutil::leakyRun({.keep_logits = true, .hook_stores = true, .plateau_cache = false});
    const Trace b =
        testutil::leakyRun({.keep_logits = false, .hook_stores = true, .plateau_cache = false});
    auto ta = Timeline::build(a), tb = Timeline::build(b);
    ASSERT_TRUE(ta.ok() && tb.ok());
    const DeviceTimeline &da = (*ta)->devices().at(0), &db = (*tb)->devices().at(0);
    const LinesAtPeak la = linesAtPeak(a, ModuleAttribution(a), da, SIZE_MAX);
    const LinesAtPeak lb = linesAtPeak(b, ModuleAttribution(b), db, 1);  // the rest summed
    const LinesCompared c = compareLines({&la, &lb});
    for (size_t k = 0; k < 2; ++k) {
        int64_t sum = 0;
        for (const LineAcrossRuns& r : c.rows) sum += r.bytes[k];
        EXPECT_EQ(sum, (k == 0 ? da : db).peak.bytes) << "run " << k;
    }
    ASSERT_FALSE(c.rows.empty());
    EXPECT_EQ(c.rows[0].label, "forward  (model.py:50)");  // the kept logits, A only
    EXPECT_EQ(c.rows[0].bytes[0], 10 * 2 * MiB);
    EXPECT_EQ(c.rows[0].bytes[1], 0);
    EXPECT_EQ(c.rows[0].module, "head");
    EXPECT_EQ(c.rows[0].intervals[0].size(), 10u);
}

}  // namespace
}  // namespace memscope
