// The allocator replay: the allocator's state at any event, forward from empty
// or backward from the recorded end state.
#include "memscope/timeline/allocator_replay.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

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

// The backward replay decides blocks in one forward pass; it must leave what
// undoing every later event one by one from the end state leaves (the
// reference below), on traces with every irregularity a ring buffer or a
// recorder's gap makes: frees without allocs, allocs at a live address, a
// free requested but never completed, segments allocated and freed.
struct ReferenceState {
    std::map<uint64_t, uint64_t> segments;  // address -> size
    std::map<uint64_t, ReplayBlock> blocks;
};

ReferenceState undoOneByOne(const Trace& t, const DeviceTimeline& d, int64_t last) {
    ReferenceState st;
    for (const Segment& s : t.allocator_state->segments) st.segments[s.address] = s.total_size;
    for (const Block& b : t.allocator_state->blocks)
        if (b.state != BlockState::Inactive)
            st.blocks[b.address] =
                ReplayBlock{b.address, b.size, b.state, b.stack, Category::Unknown};
    for (int64_t k = int64_t(d.trace_events.size()) - 1; k > last; --k) {
        const uint64_t i = d.trace_events[size_t(k)];
        const Event& e = t.events[i];
        switch (e.kind) {
            case EventKind::Alloc:
                st.blocks.erase(e.address);
                break;
            case EventKind::FreeRequested:
                if (auto it = st.blocks.find(e.address); it != st.blocks.end())
                    it->second.state = BlockState::ActiveAllocated;
                break;
            case EventKind::FreeCompleted:
                st.blocks[e.address] = ReplayBlock{e.address, e.size, BlockState::ActiveAllocated,
                                                   e.stack, t.categoryOf(i)};
                break;
            case EventKind::SegmentAlloc:
                st.segments.erase(e.address);
                break;
            case EventKind::SegmentFree:
                st.segments[e.address] = e.size;
                break;
            default:
                break;
        }
    }
    return st;
}

TEST(AllocatorReplay, BackwardReplayLeavesWhatUndoingEachEventLeaves) {
    std::mt19937_64 rng(7);
    for (int round = 0; round < 40; ++round) {
        Trace t;
        // Eight block addresses inside two segments of 0x1000, and a third
        // segment that comes and goes.
        const uint64_t base = 0x10000;
        const EventKind kinds[] = {EventKind::Alloc, EventKind::FreeRequested,
                                   EventKind::FreeCompleted, EventKind::SegmentAlloc,
                                   EventKind::SegmentFree};
        const Category cats[] = {Category::Activation, Category::Gradient, Category::Parameter};
        for (int i = 0; i < 60; ++i) {
            const EventKind k = kinds[rng() % (rng() % 4 ? 3 : 5)];
            const bool seg = k == EventKind::SegmentAlloc || k == EventKind::SegmentFree;
            const uint64_t addr = seg ? base + 0x2000 : base + (rng() % 8) * 0x200;
            t.events.push_back(ev(i, k, addr, seg ? 0x1000 : 16 + rng() % 400, cats[rng() % 3]));
        }
        AllocatorState end;
        for (uint64_t s = 0; s < 3; ++s) {
            if (s == 2 && rng() % 2) continue;
            Segment seg;
            seg.address = base + s * 0x1000;
            seg.total_size = 0x1000;
            seg.first_block = end.blocks.size();
            for (uint64_t b = 0; b < 8; ++b) {
                if (s == 2 || rng() % 2) continue;
                const uint64_t a = seg.address + b * 0x200;
                if (a >= base + 0x1000 && s == 0) continue;
                const BlockState states[] = {BlockState::ActiveAllocated,
                                             BlockState::ActivePendingFree, BlockState::Inactive};
                end.blocks.push_back(Block{a, 1000 + rng() % 100, 0, {}, states[rng() % 3]});
            }
            seg.block_count = end.blocks.size() - seg.first_block;
            end.segments.push_back(seg);
        }
        t.allocator_state = end;
        auto tl = Timeline::build(t);
        ASSERT_TRUE(tl.ok());
        const DeviceTimeline& d = (*tl)->devices().at(0);
        for (int64_t at = -1; at < 60; ++at) {
            auto got = allocatorStateAt(t, d, at);
            ASSERT_TRUE(got.ok()) << got.message();
            const ReferenceState want = undoOneByOne(t, d, got->event_index);
            std::map<uint64_t, uint64_t> segments;
            std::map<uint64_t, ReplayBlock> blocks;
            for (const ReplaySegment& s : got->segments) {
                segments[s.address] = s.size;
                for (const ReplayBlock& b : s.blocks) blocks[b.address] = b;
            }
            for (const ReplayBlock& b : got->loose_blocks) blocks[b.address] = b;
            EXPECT_EQ(segments, want.segments) << "round " << round << " at " << at;
            ASSERT_EQ(blocks.size(), want.blocks.size()) << "round " << round << " at " << at;
            for (const auto& [addr, b] : want.blocks) {
                const ReplayBlock& g = blocks.at(addr);
                EXPECT_EQ(g.size, b.size) << "round " << round << " at " << at;
                EXPECT_EQ(g.state, b.state) << "round " << round << " at " << at;
                // An end-state block's category is not known; a freed one's is its event's.
                if (b.category != Category::Unknown) {
                    EXPECT_EQ(g.category, b.category);
                }
            }
            // The same moment from the event order alone, reading no category
            // (what runs beside inference): the same blocks, none labelled.
            auto bare = allocatorStateAfter(t, d.device, d.trace_events, got->event_index, false);
            ASSERT_TRUE(bare.ok()) << bare.message();
            EXPECT_EQ(bare->event_index, got->event_index);
            EXPECT_EQ(bare->reserved_bytes, got->reserved_bytes);
            EXPECT_EQ(bare->active_bytes, got->active_bytes);
            EXPECT_EQ(bare->largest_free_gap, got->largest_free_gap);
            for (const ReplaySegment& s : bare->segments)
                for (const ReplayBlock& b : s.blocks) {
                    EXPECT_EQ(b.category, Category::Unknown);
                    EXPECT_EQ(blocks.at(b.address).size, b.size);
                }
        }
    }
}

}  // namespace
}  // namespace memscope
