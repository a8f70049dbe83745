// The interval ends index: exactly the allocations of a range live at a time.
#include "memscope/timeline/interval_ends.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "../allocation_test_util.h"
#include "memscope/timeline/timeline.h"

namespace memscope {
namespace {

using testutil::AllocationFixture;
using testutil::churn;

TEST(IntervalEnds, FindsExactlyTheLiveOnesOfARange) {
    const AllocationFixture f(churn(5000, 3, 10));
    const auto& iv = f.tl->intervals;
    std::mt19937_64 rng(11);
    for (int n = 0; n < 300; ++n) {
        size_t a = rng() % (iv.size() + 1), b = rng() % (iv.size() + 1);
        if (a > b) std::swap(a, b);
        const int64_t x = f.tl->start + int64_t(rng() % uint64_t(f.tl->end - f.tl->start + 2));
        std::vector<uint32_t> found, expected;
        f.index.ends.collectLive(*f.tl, a, b, x, found);
        for (size_t i = a; i < b; ++i)
            if (effectiveEnd(iv[i]) > x) expected.push_back(uint32_t(i));
        ASSERT_EQ(found, expected) << a << ".." << b << " at " << x;
    }
    // An index of another timeline answers nothing.
    std::vector<uint32_t> none;
    EXPECT_EQ(IntervalEnds::build(DeviceTimeline{}).collectLive(*f.tl, 0, iv.size(), 0, none), 0u);
    EXPECT_TRUE(none.empty());
}

}  // namespace
}  // namespace memscope
