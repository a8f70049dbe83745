// The op of an allocation as every front end shows it: recorded op scopes
// (by time) and ops inferred per allocation (by event), the wording that
// says which, and the op of each site at the peak.
#include "memscope/analysis/allocation_op.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "../analysis_test_util.h"
#include "memscope/analysis/op_breakdown.h"
#include "memscope/analysis/peak_explainer.h"
#include "memscope/timeline/timeline.h"

namespace memscope {
namespace {

using testutil::event;

// Four allocations of one stack at times 10, 20, 30, 40, never freed.
Trace fourAllocations() {
    testutil::Stacked s = testutil::realisticStack();
    Trace t = std::move(s.trace);
    t.events = {event(10, EventKind::Alloc, 0x100, 4000, Category::Activation),
                event(20, EventKind::Alloc, 0x200, 1000, Category::Activation),
                event(30, EventKind::Alloc, 0x300, 2000, Category::Activation),
                event(40, EventKind::Alloc, 0x400, 500, Category::Activation)};
    for (Event& e : t.events) e.stack = s.stack;
    return t;
}

const AllocationInterval& at(const DeviceTimeline& d, uint64_t address) {
    for (const AllocationInterval& a : d.intervals)
        if (a.address == address) return a;
    throw std::runtime_error("no such allocation");
}

TEST(AllocationOp, RecordedScopesByTimeWithTheirSource) {
    Trace t = fourAllocations();
    t.ops.source = OpSource::Recorded;
    t.ops.scopes = {OpScope{5, 25, t.internString("aten::linear"), 0},
                    OpScope{8, 15, t.internString("aten::addmm"), 1},
                    OpScope{9, 12, t.internString("aten::empty"), 2}};
    auto tl = *Timeline::build(t);
    const DeviceTimeline& d = tl->devices().at(0);
    const OpAttribution ops(t);
    const auto first = opOfInterval(ops, at(d, 0x100));
    ASSERT_TRUE(first);
    EXPECT_EQ(t.string(first->name), "aten::addmm");  // the nested empty looked through
    EXPECT_EQ(first->source, OpSource::Recorded);
    EXPECT_EQ(opText(t, *first), "aten::addmm (recorded)");
    EXPECT_EQ(t.string(opOfInterval(ops, at(d, 0x200))->name), "aten::linear");
    EXPECT_FALSE(opOfInterval(ops, at(d, 0x300)));  // outside every op
    // No ops at all, and an allocation made before the trace: none.
    EXPECT_FALSE(opOfInterval(OpAttribution(Trace{}), at(d, 0x100)));
    AllocationInterval ghost = at(d, 0x100);
    ghost.alloc_event = kNoEvent;
    EXPECT_FALSE(opOfInterval(ops, ghost));
}

TEST(AllocationOp, InferredPerEventAndSaidSo) {
    Trace t = fourAllocations();
    t.ops.source = OpSource::Inferred;
    const StringId mm = t.internString("aten::mm");
    t.ops.event_ops = {mm, StringId{}, t.internString("aten::add"), mm};
    auto tl = *Timeline::build(t);
    const DeviceTimeline& d = tl->devices().at(0);
    const OpAttribution ops(t);
    const auto first = opOfInterval(ops, at(d, 0x100));
    ASSERT_TRUE(first);
    EXPECT_EQ(first->source, OpSource::Inferred);
    EXPECT_EQ(opText(t, *first), "aten::mm (inferred from C++ frames)");
    EXPECT_FALSE(opOfInterval(ops, at(d, 0x200)));
    EXPECT_EQ(t.string(opOfInterval(ops, at(d, 0x300))->name), "aten::add");
    EXPECT_EQ(opSourceText(OpSource::Recorded), "recorded");

    // The site's op is the one holding most of its bytes: mm's 4500 of 7500.
    const auto sites = sitesAtPeak(t, d, 10);
    ASSERT_EQ(sites.size(), 1u);
    ASSERT_TRUE(sites[0].op);
    EXPECT_EQ(sites[0].op->name, mm);
    EXPECT_EQ(sites[0].op->source, OpSource::Inferred);
    // As the text reports' site rows (summary's, an OOM's) end.
    EXPECT_EQ(opSuffix(t, sites[0].op), "  [aten::mm, inferred]");
    EXPECT_EQ(opSuffix(t, std::nullopt), "");
}

TEST(AllocationOp, SitesWithoutOpsHaveNone) {
    Trace t = fourAllocations();
    auto tl = *Timeline::build(t);
    const auto sites = sitesAtPeak(t, tl->devices().at(0), 10);
    ASSERT_EQ(sites.size(), 1u);
    EXPECT_FALSE(sites[0].op);
}

}  // namespace
}  // namespace memscope

namespace memscope {
namespace {

TEST(OpBreakdown, PeakBytesByTheOpThatMadeThemAddUpToThePeak) {
    Trace t = fourAllocations();
    t.ops.source = OpSource::Recorded;
    t.ops.scopes = {OpScope{5, 25, t.internString("aten::linear"), 0},
                    OpScope{8, 15, t.internString("aten::addmm"), 1},
                    OpScope{35, 45, t.internString("aten::addmm"), 0}};
    auto tl = *Timeline::build(t);
    const DeviceTimeline& d = tl->devices().at(0);
    const OpBreakdown b = opsAtPeak(t, OpAttribution(t), d);
    EXPECT_EQ(b.source, OpSource::Recorded);
    EXPECT_EQ(b.total, 7500);
    ASSERT_EQ(b.rows.size(), 3u);
    // addmm: 4000 + 500 (two calls, one row); outside every op: 2000; linear: 1000.
    EXPECT_EQ(b.rows[0].label, "aten::addmm");
    EXPECT_EQ(b.rows[0].bytes, 4500);
    EXPECT_EQ(b.rows[0].count, 2u);
    EXPECT_EQ(b.rows[0].by_category[size_t(Category::Activation)], 4500);
    EXPECT_EQ(b.rows[1].label, kOutsideOpsLabel);
    EXPECT_TRUE(b.rows[1].name.isNull());
    EXPECT_EQ(b.rows[2].label, "aten::linear");
    // A trace without ops: one "(no op)" row, source none.
    Trace bare = fourAllocations();
    auto bare_tl = *Timeline::build(bare);
    const OpBreakdown none = opsAtPeak(bare, OpAttribution(bare), bare_tl->devices().at(0));
    EXPECT_EQ(none.source, OpSource::None);
    ASSERT_EQ(none.rows.size(), 1u);
    EXPECT_EQ(none.rows[0].bytes, 7500);
}

}  // namespace
}  // namespace memscope
