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

}  // namespace
}  // namespace memscope
