// FirstReaching: the first item from a position whose end reaches a time, checked against a linear
// search.
#include "memscope/view/first_reaching.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <vector>

namespace memscope {
namespace {

size_t bruteForce(const std::vector<int64_t>& ends, size_t from, int64_t x) {
    for (size_t i = from; i < ends.size(); ++i)
        if (ends[i] >= x) return i;
    return ends.size();
}

TEST(FirstReaching, EmptyAndOneItem) {
    const FirstReaching none{std::span<const int64_t>()};
    EXPECT_EQ(none.find(0, 0), 0u);
    const std::vector<int64_t> one{5};
    const FirstReaching tree(one);
    EXPECT_EQ(tree.find(0, 5), 0u);
    EXPECT_EQ(tree.find(0, 6), 1u);
    EXPECT_EQ(tree.find(1, 0), 1u);
    EXPECT_EQ(tree.find(99, 0), 1u);
}

// A long item early must not hide what comes after a later start: the
// running-maximum search it replaces could not start past it.
TEST(FirstReaching, StartsAnywhereAfterALongItem) {
    const std::vector<int64_t> ends{1000, 10, 20, 30, 40, 50};
    const FirstReaching tree(ends);
    EXPECT_EQ(tree.find(0, 25), 0u);
    EXPECT_EQ(tree.find(1, 25), 3u);
    EXPECT_EQ(tree.find(4, 25), 4u);
    EXPECT_EQ(tree.find(1, 51), 6u);
    EXPECT_EQ(tree.find(1, std::numeric_limits<int64_t>::min()), 1u);
}

TEST(FirstReaching, MatchesALinearSearchOnRandomEnds) {
    std::mt19937_64 rng(7);
    for (size_t n : {2u, 3u, 7u, 8u, 9u, 63u, 64u, 65u, 1000u}) {
        std::vector<int64_t> ends(n);
        for (auto& e : ends) e = int64_t(rng() % 200) - 50;
        const FirstReaching tree(ends);
        ASSERT_EQ(tree.size(), n);
        for (size_t from = 0; from <= n; ++from)
            for (int64_t x = -60; x <= 160; x += 7)
                ASSERT_EQ(tree.find(from, x), bruteForce(ends, from, x))
                    << "n " << n << " from " << from << " x " << x;
    }
}

}  // namespace
}  // namespace memscope
