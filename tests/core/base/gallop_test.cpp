#include "memscope/base/gallop.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <random>
#include <vector>

namespace memscope {
namespace {

// Against the standard searches over [from, size), on arrays with runs of
// equal values, targets before, inside and past them, and every start.
TEST(Gallop, FindsWhatTheStandardSearchesFindFromAnyStart) {
    std::mt19937_64 rng(5);
    for (int round = 0; round < 200; ++round) {
        std::vector<int64_t> v(rng() % 70);
        int64_t x = int64_t(rng() % 5) - 2;
        for (int64_t& e : v) e = x += int64_t(rng() % 3);  // repeats happen
        for (size_t from = 0; from <= v.size(); ++from) {
            for (int64_t target = -4; target <= x + 2; ++target) {
                const auto first = v.begin() + ptrdiff_t(from);
                const auto lower = size_t(std::lower_bound(first, v.end(), target) - v.begin());
                const auto upper = size_t(std::upper_bound(first, v.end(), target) - v.begin());
                ASSERT_EQ(gallopTo(from, v.size(), [&](size_t i) { return v[i] >= target; }), lower)
                    << "round " << round << ", from " << from << ", target " << target;
                ASSERT_EQ(gallopTo(from, v.size(), [&](size_t i) { return v[i] > target; }), upper)
                    << "round " << round << ", from " << from << ", target " << target;
            }
        }
    }
    // Past the end, or on an empty array: the start itself.
    EXPECT_EQ(gallopTo(5, 3, [](size_t) { return false; }), 5u);
    EXPECT_EQ(gallopTo(0, 0, [](size_t) { return true; }), 0u);
}

// A target k places on is found in about 2 log2(k) looks, whatever the size.
TEST(Gallop, LooksGrowWithTheDistanceNotTheSize) {
    const size_t size = size_t(1) << 30;  // never materialised: the predicate is the array
    for (size_t k : {size_t(1), size_t(7), size_t(1000)}) {
        size_t looks = 0;
        const size_t at = gallopTo(100, size, [&](size_t i) {
            ++looks;
            return i >= 100 + k;
        });
        EXPECT_EQ(at, 100 + k);
        EXPECT_LE(looks, 2 * size_t(std::bit_width(k)) + 2) << k;
    }
}

}  // namespace
}  // namespace memscope
