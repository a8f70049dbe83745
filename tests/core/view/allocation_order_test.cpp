// The stacking order the views share: the view modes, the default mode, and
// the hit test of each mode.
#include "memscope/view/allocation_order.h"

#include <gtest/gtest.h>

#include "../analysis_test_util.h"
#include "memscope/timeline/timeline.h"

namespace memscope {
namespace {

using testutil::event;

// A trace with recorded categories opens by category; one whose allocations
// are all "unknown" (a user's snapshot) opens by allocation.
TEST(AllocationOrder, DefaultModeFollowsTheRecordedCategories) {
    DeviceTimeline tl;
    EXPECT_EQ(defaultViewMode(tl), ViewMode::Category);  // nothing to show either way
    AllocationInterval a;
    a.size = 10;
    tl.intervals = {a, a};
    EXPECT_EQ(defaultViewMode(tl), ViewMode::Allocation);
    tl.intervals[1].category = Category::Activation;
    EXPECT_EQ(defaultViewMode(tl), ViewMode::Category);
    EXPECT_EQ(viewModeFromString("allocation"), ViewMode::Allocation);
    EXPECT_EQ(viewModeFromString("module"), ViewMode::Module);
    for (ViewMode m : {ViewMode::Category, ViewMode::Allocation, ViewMode::Module})
        EXPECT_EQ(viewModeFromString(toString(m)), m);
    EXPECT_FALSE(viewModeFromString("site").has_value());
}

TEST(AllocationOrder, HitTestFollowsTheStackingOfEachMode) {
    Trace t;
    t.events = {event(0, EventKind::Alloc, 0x100, 10, Category::Activation),
                event(1, EventKind::Alloc, 0x200, 20, Category::Parameter),
                event(2, EventKind::Alloc, 0x300, 30, Category::Activation)};
    auto tl = *Timeline::build(t);
    const DeviceTimeline& d = tl->devices().at(0);
    // By category: parameter (index 0) at the bottom, then activations by start.
    const auto order = stackedAt(d, ViewMode::Category, 5);
    ASSERT_EQ(order.size(), 3u);
    EXPECT_EQ(d.intervals[order[0]].size, 20u);
    EXPECT_EQ(d.intervals[order[1]].size, 10u);
    EXPECT_EQ(d.intervals[order[2]].size, 30u);
    EXPECT_EQ(d.intervals[*allocationAt(d, ViewMode::Category, 5, 25.0)].size, 10u);
    EXPECT_FALSE(allocationAt(d, ViewMode::Category, 5, 60.0));
    // By allocation: every live allocation in order of start.
    const auto byStart = stackedAt(d, ViewMode::Allocation, 5);
    ASSERT_EQ(byStart.size(), 3u);
    EXPECT_EQ(d.intervals[byStart[0]].size, 10u);
    EXPECT_EQ(d.intervals[byStart[1]].size, 20u);
    EXPECT_EQ(d.intervals[*allocationAt(d, ViewMode::Allocation, 5, 35.0)].size, 30u);
    EXPECT_EQ(d.intervals[*allocationAt(d, ViewMode::Allocation, 5, 5.0)].size, 10u);
}

}  // namespace
}  // namespace memscope
