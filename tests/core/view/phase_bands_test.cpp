// The phase strip's data (memscope/view/phase_bands.h): rows, order, shades,
// the names of inferred phases, annotation ranges, and what lies under x.
#include "memscope/view/phase_bands.h"

#include <gtest/gtest.h>

namespace memscope {
namespace {

void addPhase(Trace& t, const char* name, PhaseKind kind, int64_t start, int64_t end,
              int16_t device = -1, bool inferred = false, int32_t step = -1, int32_t block = -1) {
    Phase p;
    p.name = t.internString(name);
    p.kind = kind;
    p.device = device;
    p.start = start;
    p.end = end;
    p.inferred = inferred;
    p.step = step;
    p.block = block;
    t.addPhase(p);
}

void addAnnotation(Trace& t, const char* name, AnnotationStage stage, int64_t time) {
    Annotation a;
    a.name = t.internString(name);
    a.stage = stage;
    a.time = time;
    t.annotations.push_back(a);
}

TEST(PhaseBands, RowsHoldTheirKindsByStartWithOtherDevicesLeftOut) {
    Trace t;
    addPhase(t, "forward", PhaseKind::Forward, 10, 20, 0);
    addPhase(t, "backward", PhaseKind::Backward, 20, 30, -1, /*inferred=*/true);
    addPhase(t, "step 1", PhaseKind::Step, 10, 35, -1, false, 1);  // logged when it closed
    addPhase(t, "step 0", PhaseKind::Step, 0, 10, -1, false, 0);
    addPhase(t, "block 2", PhaseKind::Block, 12, 14, -1, false, 1, 2);
    addPhase(t, "recompute", PhaseKind::Recompute, 22, 24);
    addPhase(t, "elsewhere", PhaseKind::Forward, 11, 12, 1);
    const PhaseBandData d = buildPhaseBands(t, 0);
    EXPECT_EQ(d.itemCount(), 6u);
    ASSERT_EQ(d.rows[0].size(), 2u);
    EXPECT_EQ(d.nameOf(d.rows[0][0]), "step 0");
    EXPECT_EQ(d.rows[0][0].shade, PhaseBandShade::StepEven);
    EXPECT_EQ(d.rows[0][1].shade, PhaseBandShade::StepOdd);
    ASSERT_EQ(d.rows[1].size(), 2u);
    EXPECT_EQ(d.rows[1][0].shade, PhaseBandShade::Forward);
    EXPECT_FALSE(d.rows[1][0].inferred);
    EXPECT_EQ(d.rows[1][1].shade, PhaseBandShade::Backward);
    EXPECT_TRUE(d.rows[1][1].inferred);
    EXPECT_EQ(d.nameOf(d.rows[1][1]), "backward (inferred)");
    ASSERT_EQ(d.rows[2].size(), 2u);
    EXPECT_EQ(d.rows[2][0].shade, PhaseBandShade::BlockEven);
    EXPECT_EQ(d.rows[2][1].shade, PhaseBandShade::Recompute);
    EXPECT_EQ(d.firstReaching(1, 21), 1u);
    EXPECT_EQ(phaseNamesAt(d, 23),
              (std::vector<std::string>{"step 1", "backward (inferred)", "recompute"}));
    EXPECT_TRUE(phaseNamesAt(d, 100).empty());
}

TEST(PhaseBands, AnnotationPairsAreRangesAndTheRestTicks) {
    Trace t;
    addAnnotation(t, "load", AnnotationStage::Start, 5);
    addAnnotation(t, "load", AnnotationStage::Start, 6);
    addAnnotation(t, "load", AnnotationStage::End, 8);  // closes the inner one
    addAnnotation(t, "mark", AnnotationStage::Instant, 9);
    const PhaseBandData d = buildPhaseBands(t, 0);
    const auto& row = d.rows[3];
    ASSERT_EQ(row.size(), 3u);
    // By start: the unmatched outer start (a tick), the range, the instant.
    EXPECT_EQ(row[0].start, 5);
    EXPECT_EQ(row[0].end, 5);
    EXPECT_EQ(row[1].start, 6);
    EXPECT_EQ(row[1].end, 8);
    EXPECT_EQ(row[2].start, 9);
    for (const PhaseBandItem& it : row) EXPECT_EQ(it.shade, PhaseBandShade::Range);
    // The same label is kept once.
    EXPECT_EQ(d.names.size(), 2u);
}

}  // namespace
}  // namespace memscope
