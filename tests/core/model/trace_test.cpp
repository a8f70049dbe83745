// The trace: interned frames and stacks, its devices, streams and metadata.
#include "memscope/model/trace.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

using namespace memscope;

TEST(Trace, InternsFramesAndStacks) {
    Trace trace;
    const Frame f1{trace.internString("matmul"), trace.internString("model.py"), 10};
    const Frame f2{trace.internString("forward"), trace.internString("model.py"), 20};
    const FrameId a = trace.internFrame(f1);
    const FrameId b = trace.internFrame(f2);
    EXPECT_EQ(trace.internFrame(f1), a);
    EXPECT_NE(a, b);
    EXPECT_EQ(trace.frame(a), f1);

    const std::vector<FrameId> s1{a, b}, s2{b, a}, s3{a};
    const StackId x = trace.internStack(s1);
    EXPECT_EQ(trace.internStack(s1), x);
    EXPECT_NE(trace.internStack(s2), x);
    EXPECT_NE(trace.internStack(s3), x);
    EXPECT_EQ(trace.internStack({}), StackId(0));
    ASSERT_EQ(trace.stack(x).size(), 2u);
    EXPECT_EQ(trace.stack(x)[1], b);
    EXPECT_TRUE(trace.stack(StackId(12345)).empty());
    EXPECT_EQ(trace.stackCount(), 4u);  // the empty stack and three others
}

TEST(Trace, DevicesFromEventsAndSegments) {
    Trace trace;
    trace.events.push_back(Event{0, 1, 1, {}, {}, 0, 2, EventKind::Alloc, Category::Unknown});
    trace.events.push_back(Event{0, 1, 1, {}, {}, 0, -1, EventKind::Alloc, Category::Unknown});
    trace.allocator_state.emplace();
    Segment seg;
    seg.device = 5;
    trace.allocator_state->segments.push_back(seg);
    EXPECT_EQ(trace.devices(), (std::vector<int16_t>{-1, 2, 5}));
}

TEST(Trace, StreamsAndMetadata) {
    Trace trace;
    EXPECT_EQ(trace.internStream(0), 0u);
    const uint32_t s = trace.internStream(0x7f0012345678ull);
    EXPECT_EQ(trace.internStream(0x7f0012345678ull), s);
    EXPECT_EQ(trace.streams[s], 0x7f0012345678ull);
    trace.metadata.setProperty("policy", "full");
    trace.metadata.setProperty("policy", "block");
    ASSERT_NE(trace.metadata.property("policy"), nullptr);
    EXPECT_EQ(*trace.metadata.property("policy"), "block");
    EXPECT_EQ(trace.metadata.property("missing"), nullptr);
}
