// Bytes by source line (memscope/analysis/source_lines.h): the innermost user
// frame of each allocation live at the peak, with its layer; the rows add up
// to the peak.
#include "memscope/analysis/source_lines.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "../analysis_test_util.h"

namespace memscope {
namespace {

constexpr int64_t MiB = 1 << 20;

TEST(SourceLines, TheLinesHoldingThePeakWithTheirLayerAddUp) {
    // The peak is in the last step's backward: the saved activations are
    // freed, the kept logits and the hook's outputs are not.
    const Trace t =
        testutil::leakyRun({.keep_logits = true, .hook_stores = true, .plateau_cache = false});
    auto tl = Timeline::build(t);
    ASSERT_TRUE(tl.ok());
    const DeviceTimeline& d = (*tl)->devices().at(0);
    const LinesAtPeak lines = linesAtPeak(t, ModuleAttribution(t), d, 10);
    EXPECT_EQ(lines.total, d.peak.bytes);
    int64_t sum = lines.rest_bytes;
    for (const LineBytes& r : lines.rows) sum += r.bytes;
    EXPECT_EQ(sum, d.peak.bytes);
    ASSERT_EQ(lines.rows.size(), 3u);
    EXPECT_EQ(lines.rows[0].label, "forward  (/home/me/model.py:50)");
    EXPECT_EQ(lines.rows[0].file, "/home/me/model.py");
    EXPECT_EQ(lines.rows[0].line, 50u);
    EXPECT_EQ(lines.rows[0].function, "forward");
    EXPECT_EQ(lines.rows[0].module, "head");
    EXPECT_EQ(lines.rows[0].bytes, 10 * 2 * MiB);
    EXPECT_EQ(lines.rows[0].count, 10u);
    EXPECT_EQ(lines.rows[1].label, "save_output  (/home/me/train.py:20)");
    EXPECT_EQ(lines.rows[1].module, "blocks.3");
    EXPECT_EQ(lines.rows[1].bytes, 10 * MiB / 2);
    // Parameters, gradients, state: no user frame, one last row.
    EXPECT_EQ(lines.rows.back().label, "(no user frame)");
    EXPECT_EQ(lines.rows.back().module, "(outside modules)");
    // Each line names its allocations: alive at the peak, adding up to its bytes.
    for (const LineBytes& r : lines.rows) {
        int64_t bytes = 0;
        for (uint32_t i : r.intervals) {
            EXPECT_NE(std::find(d.peak.live_intervals.begin(), d.peak.live_intervals.end(), i),
                      d.peak.live_intervals.end());
            bytes += int64_t(d.intervals.at(i).size);
        }
        EXPECT_EQ(bytes, r.bytes) << r.label;
        EXPECT_EQ(r.intervals.size(), size_t(r.count)) << r.label;
    }

    // At most `top` lines, the rest summed.
    const LinesAtPeak one = linesAtPeak(t, ModuleAttribution(t), d, 1);
    ASSERT_EQ(one.rows.size(), 2u);
    EXPECT_EQ(one.rest_count, 1u);
    EXPECT_EQ(one.rest_bytes, 10 * MiB / 2);
}

TEST(SourceLines, TheLineIsTheInnermostUserFrameNotTheLibrary) {
    testutil::Stacked s = testutil::realisticStack();
    Event e = testutil::ev(10, EventKind::Alloc, 0x1000, 4096);
    e.stack = s.stack;
    s.trace.events.push_back(e);
    auto tl = Timeline::build(s.trace);
    ASSERT_TRUE(tl.ok());
    const LinesAtPeak lines =
        linesAtPeak(s.trace, ModuleAttribution(s.trace), (*tl)->devices().at(0), 10);
    ASSERT_EQ(lines.rows.size(), 1u);
    EXPECT_EQ(lines.rows[0].label, "forward  (/home/me/project/model.py:7)");
    EXPECT_EQ(lines.rows[0].module, "");  // no modules in this trace
    EXPECT_EQ(lines.rows[0].bytes, 4096);
}

}  // namespace
}  // namespace memscope
