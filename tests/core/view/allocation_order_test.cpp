// The stacking order the views share: the default mode, the largest and shown
// allocations, and the hit test of each mode.
#include "memscope/view/allocation_order.h"

#include <gtest/gtest.h>

#include "../analysis_test_util.h"
#include "memscope/timeline/timeline.h"

namespace memscope {
namespace {

using testutil::ev;
using testutil::event;

// A trace with recorded categories opens by category; one whose allocations
// are all "unknown" (a user's snapshot) opens by allocation.
TEST(AllocationOrder, DefaultModeFollowsTheRecordedCategories) {
    DeviceTimeline tl;
    EXPECT_EQ(defaultStackMode(tl), StackMode::ByCategory);  // nothing to show either way
    AllocationInterval a;
    a.size = 10;
    tl.intervals = {a, a};
    EXPECT_EQ(defaultStackMode(tl), StackMode::ByAllocation);
    tl.intervals[1].category = Category::Activation;
    EXPECT_EQ(defaultStackMode(tl), StackMode::ByCategory);
    EXPECT_EQ(stackModeFromString("allocation"), StackMode::ByAllocation);
    EXPECT_EQ(stackModeFromString(toString(StackMode::ByCategory)), StackMode::ByCategory);
    EXPECT_FALSE(stackModeFromString("site").has_value());
}

TEST(AllocationOrder, HitTestFollowsTheStackingOfEachMode) {
    Trace t;
    t.events = {event(0, EventKind::Alloc, 0x100, 10, Category::Activation),
                event(1, EventKind::Alloc, 0x200, 20, Category::Parameter),
                event(2, EventKind::Alloc, 0x300, 30, Category::Activation)};
    auto tl = *Timeline::build(t);
    const DeviceTimeline& d = tl->devices().at(0);
    // By category: parameter (index 0) at the bottom, then activations by start.
    const auto order = stackedAt(d, StackMode::ByCategory, {}, 5);
    ASSERT_EQ(order.size(), 3u);
    EXPECT_EQ(d.intervals[order[0]].size, 20u);
    EXPECT_EQ(d.intervals[order[1]].size, 10u);
    EXPECT_EQ(d.intervals[order[2]].size, 30u);
    EXPECT_EQ(d.intervals[*allocationAt(d, StackMode::ByCategory, {}, 5, 25.0)].size, 10u);
    EXPECT_FALSE(allocationAt(d, StackMode::ByCategory, {}, 5, 60.0));
    // By allocation: those without a band first, then the shown ones.
    const auto largest = largestIntervals(d, 1);
    const auto shown = shownIntervals(d, largest, 0, 10, 64);
    ASSERT_EQ(shown.size(), 1u);
    EXPECT_EQ(d.intervals[shown[0]].size, 30u);
    EXPECT_EQ(d.intervals[*allocationAt(d, StackMode::ByAllocation, shown, 5, 35.0)].size, 30u);
    EXPECT_EQ(d.intervals[*allocationAt(d, StackMode::ByAllocation, shown, 5, 5.0)].size, 10u);
}

TEST(Compare, LargestIntervals) {
    Trace t;
    t.events = {ev(0, EventKind::Alloc, 0x10, 8), ev(1, EventKind::Alloc, 0x20, 64),
                ev(2, EventKind::Alloc, 0x30, 16)};
    auto tl = Timeline::build(t);
    ASSERT_TRUE(tl.ok());
    const auto& d = (*tl)->devices().at(0);
    const auto top = largestIntervals(d, 2);
    ASSERT_EQ(top.size(), 2u);
    EXPECT_EQ(d.intervals[top[0]].size, 64u);
    EXPECT_EQ(d.intervals[top[1]].size, 16u);
}

}  // namespace
}  // namespace memscope
