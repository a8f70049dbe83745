// The allocator replay: the allocator's state at any event, forward from empty
// or backward from the recorded end state.
#include "memscope/timeline/allocator_replay.h"

#include <gtest/gtest.h>

#include "../analysis_test_util.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

namespace memscope {
namespace {

using testutil::ev;

TEST(AllocatorReplay, HostBlocksOutsideSegmentsCarryTheirInferredCategories) {
    // A CPU trace: no segments, categories known by inference only.
    Trace t;
    t.events = {testutil::event(0, EventKind::Alloc, 0x1000, 100, Category::Unknown, {}, -1),
                testutil::event(1, EventKind::Alloc, 0x2000, 50, Category::Unknown, {}, -1)};
    t.inferred_categories = {{Category::Parameter, CategoryRule::AliveThroughout},
                             {Category::Activation, CategoryRule::ForwardToBackward}};
    auto tl = Timeline::build(t);
    ASSERT_TRUE(tl.ok());
    auto s = allocatorStateAt(t, (*tl)->devices().at(0), 1);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_TRUE(s->segments.empty());
    ASSERT_EQ(s->loose_blocks.size(), 2u);
    for (const ReplayBlock& b : s->loose_blocks)
        EXPECT_EQ(b.category, b.address == 0x1000 ? Category::Parameter : Category::Activation);
}

TEST(AllocatorReplay, ForwardFromEmpty) {
    Trace t;
    t.events = {ev(0, EventKind::SegmentAlloc, 0x1000, 1000), ev(1, EventKind::Alloc, 0x1000, 100),
                ev(2, EventKind::Alloc, 0x1200, 100), ev(3, EventKind::FreeCompleted, 0x1000, 100)};
    auto tl = Timeline::build(t);
    ASSERT_TRUE(tl.ok());
    const auto& d = (*tl)->devices().at(0);
    auto s2 = allocatorStateAt(t, d, 2);
    ASSERT_TRUE(s2.ok()) << s2.message();
    EXPECT_FALSE(s2->backwards);
    ASSERT_EQ(s2->segments.size(), 1u);
    EXPECT_EQ(s2->segments[0].blocks.size(), 2u);
    EXPECT_EQ(s2->active_bytes, 200u);
    EXPECT_EQ(s2->reserved_bytes, 1000u);
    auto s3 = allocatorStateAt(t, d, 3);
    ASSERT_TRUE(s3.ok());
    EXPECT_EQ(s3->active_bytes, 100u);
    EXPECT_EQ(s3->largest_free_gap, 0x200u);  // the freed first block, larger than the tail
}

TEST(AllocatorReplay, BackwardFromEndStateAndExpandableUnmap) {
    Trace t;
    t.events = {ev(0, EventKind::SegmentMap, 0x1000, 400), ev(1, EventKind::Alloc, 0x1000, 100),
                ev(2, EventKind::SegmentMap, 0x1190, 400), ev(3, EventKind::Alloc, 0x1190, 50),
                ev(4, EventKind::FreeCompleted, 0x1000, 100)};
    AllocatorState end;
    Segment seg;
    seg.address = 0x1000;
    seg.total_size = 800;
    seg.expandable = true;
    seg.block_count = 1;
    end.segments.push_back(seg);
    end.blocks.push_back(Block{0x1190, 50, 50, {}, BlockState::ActiveAllocated});
    t.allocator_state = end;
    auto tl = Timeline::build(t);
    ASSERT_TRUE(tl.ok());
    const auto& d = (*tl)->devices().at(0);
    auto s = allocatorStateAt(t, d, 1);  // after the first map and alloc
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_TRUE(s->backwards);
    EXPECT_EQ(s->reserved_bytes, 400u);
    EXPECT_EQ(s->active_bytes, 100u);
    auto before = allocatorStateAt(t, d, -1);
    ASSERT_TRUE(before.ok());
    EXPECT_EQ(before->event_index, -1);
    EXPECT_EQ(before->reserved_bytes, 0u);
}

}  // namespace
}  // namespace memscope
