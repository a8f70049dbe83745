// The allocation search: by an address inside a block and by frame text.
#include "memscope/view/allocation_search.h"

#include <gtest/gtest.h>

#include <array>

#include "../analysis_test_util.h"
#include "memscope/timeline/timeline.h"

namespace memscope {
namespace {

using testutil::event;

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

// The inspector's neighbours: the live blocks nearest by address when the
// allocation was made, up to three each side, in address order; blocks freed
// before it or made after it are not neighbours.
TEST(AllocationSearch, NeighboursByAddressAreTheLiveBlocksAroundIt) {
    Trace t;
    const uint64_t k = 0x1000;
    for (int i = 0; i < 9; ++i)  // 9 blocks at k*1..k*9, made at times 0..8
        t.events.push_back(
            event(i, EventKind::Alloc, k * uint64_t(i + 1), 256, Category::Activation));
    t.events.push_back(event(9, EventKind::FreeCompleted, k * 2, 256, Category::Activation));
    t.events.push_back(event(10, EventKind::Alloc, k * 20, 256, Category::Activation));  // the one
    t.events.push_back(event(11, EventKind::Alloc, k * 21, 256, Category::Activation));  // later
    auto tl = *Timeline::build(t);
    const DeviceTimeline& d = tl->devices().at(0);
    auto intervalAt = [&](uint64_t address, int64_t start) {
        for (uint32_t i = 0; i < d.intervals.size(); ++i)
            if (d.intervals[i].address == address && d.intervals[i].start == start) return i;
        return uint32_t(UINT32_MAX);
    };
    const uint32_t self = intervalAt(k * 20, 10);
    ASSERT_NE(self, UINT32_MAX);
    std::vector<uint64_t> addresses;
    for (uint32_t i : neighboursByAddress(d, self)) addresses.push_back(d.intervals[i].address);
    // Below: the three highest live addresses (k*2 was freed); none above.
    EXPECT_EQ(addresses, (std::vector<uint64_t>{k * 7, k * 8, k * 9}));
    // The lowest block: none below, three above, k*2 (live then) among them.
    const uint32_t first = intervalAt(k * 1, 0);
    addresses.clear();
    for (uint32_t i : neighboursByAddress(d, first, 3)) addresses.push_back(d.intervals[i].address);
    EXPECT_EQ(addresses, (std::vector<uint64_t>{}));  // alone when it was made
    const uint32_t fourth = intervalAt(k * 4, 3);
    addresses.clear();
    for (uint32_t i : neighboursByAddress(d, fourth, 2))
        addresses.push_back(d.intervals[i].address);
    EXPECT_EQ(addresses, (std::vector<uint64_t>{k * 2, k * 3}));
    EXPECT_TRUE(neighboursByAddress(d, uint32_t(d.intervals.size())).empty());
}

}  // namespace
}  // namespace memscope
