#include "memscope/timeline/step_series.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

using namespace memscope;

namespace {

StepSeries randomWalk(size_t n, uint32_t seed) {
    std::mt19937_64 rng(seed);
    StepSeries s;
    s.initial = 100;
    int64_t x = 0, y = 100;
    for (size_t i = 0; i < n; ++i) {
        x += int64_t(rng() % 3);  // repeated x values happen in real traces
        y += int64_t(rng() % 201) - 100;
        s.append(x, y);
    }
    s.finalize();
    return s;
}

}  // namespace

TEST(StepSeries, ValueAtIsTheStepInForce) {
    StepSeries s;
    s.initial = 5;
    s.append(10, 7);
    s.append(20, 3);
    s.append(20, 4);
    s.finalize();
    EXPECT_EQ(s.valueAt(9), 5);
    EXPECT_EQ(s.valueAt(10), 7);
    EXPECT_EQ(s.valueAt(19), 7);
    EXPECT_EQ(s.valueAt(20), 4);  // the last point at an x wins
    EXPECT_EQ(s.valueAt(1000), 4);
    EXPECT_EQ(s.indexAt(9), -1);
}

TEST(StepSeries, SmallRangeReturnsEveryPoint) {
    StepSeries s = randomWalk(50, 1);
    const auto lod = s.levelOfDetail(s.xs().front(), s.xs().back(), 1000);
    // x0's value, then every point (equal neighbours may merge), never more.
    EXPECT_LE(lod.size(), 52u);
    EXPECT_EQ(lod.front().y, s.valueAt(s.xs().front()));
    EXPECT_EQ(lod.back().y, s.ys().back());
}

class LevelOfDetail : public ::testing::TestWithParam<std::tuple<size_t, size_t>> {};

TEST_P(LevelOfDetail, KeepsTheEnvelopeWithinBudget) {
    const auto [n, budget] = GetParam();
    StepSeries s = randomWalk(n, uint32_t(n + budget));
    std::mt19937_64 rng(7);
    for (int trial = 0; trial < 20; ++trial) {
        const int64_t span = s.xs().back() + 10;
        int64_t x0 = int64_t(rng() % uint64_t(span)) - 5;
        int64_t x1 = int64_t(rng() % uint64_t(span));
        if (x1 < x0) std::swap(x0, x1);
        const auto lod = s.levelOfDetail(x0, x1, budget);
        ASSERT_LE(lod.size(), budget);
        ASSERT_GE(lod.size(), 1u);
        EXPECT_EQ(lod.front().x, x0);
        EXPECT_EQ(lod.front().y, s.valueAt(x0));
        EXPECT_EQ(lod.back().y, s.valueAt(x1));
        for (size_t i = 1; i < lod.size(); ++i) ASSERT_LE(lod[i - 1].x, lod[i].x);
        // The true extremes of the range must survive the reduction.
        int64_t mn = s.valueAt(x0), mx = mn;
        for (size_t i = 0; i < s.size(); ++i)
            if (s.xs()[i] > x0 && s.xs()[i] <= x1)
                mn = std::min(mn, s.ys()[i]), mx = std::max(mx, s.ys()[i]);
        int64_t lmn = lod.front().y, lmx = lmn;
        for (const auto& p : lod) lmn = std::min(lmn, p.y), lmx = std::max(lmx, p.y);
        EXPECT_EQ(lmn, mn);
        EXPECT_EQ(lmx, mx);
        // Every point returned is a real point of the series (or a range edge).
        for (size_t i = 1; i + 1 < lod.size(); ++i) {
            bool real = false;
            for (size_t j = 0; j < s.size() && !real; ++j)
                real = s.xs()[j] == lod[i].x && s.ys()[j] == lod[i].y;
            ASSERT_TRUE(real) << "invented point at x=" << lod[i].x;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Sizes, LevelOfDetail,
                         ::testing::Combine(::testing::Values(1, 31, 33, 1000, 100000),
                                            ::testing::Values(4, 10, 301, 2000)));

TEST(StepSeries, EmptySeries) {
    StepSeries s;
    s.initial = 42;
    s.finalize();
    const auto lod = s.levelOfDetail(0, 100, 10);
    ASSERT_EQ(lod.size(), 2u);
    EXPECT_EQ(lod[0], (SeriesPoint{0, 42}));
    EXPECT_EQ(lod[1], (SeriesPoint{100, 42}));
}

// Each bucket is exactly the points with x in (its left edge, its right
// edge]: an end found one point off would move an extreme into the next
// bucket, which the envelope tests above do not see.
TEST(StepSeries, BucketsHoldExactlyThePointsBetweenTheirEdges) {
    for (uint32_t seed : {1u, 2u, 3u}) {
        const StepSeries s = randomWalk(200000, seed);
        const int64_t x0 = s.xs()[1000], x1 = s.xs()[150000];
        const size_t budget = 602;  // 300 buckets of about 500 points
        const auto lod = s.levelOfDetail(x0, x1, budget);
        std::vector<SeriesPoint> want{{x0, s.valueAt(x0)}};
        const size_t buckets = (budget - 2) / 2;
        const long double width = ((long double)x1 - (long double)x0) / (long double)buckets;
        size_t i = size_t(std::upper_bound(s.xs().begin(), s.xs().end(), x0) - s.xs().begin());
        for (size_t b = 0; b < buckets; ++b) {
            const int64_t edge =
                b + 1 == buckets ? x1 : int64_t((long double)x0 + (long double)(b + 1) * width);
            size_t lo = i, hi = i;  // first min, first max
            for (; i < s.size() && s.xs()[i] <= edge; ++i) {
                if (s.ys()[i] < s.ys()[lo]) lo = i;
                if (s.ys()[i] > s.ys()[hi]) hi = i;
            }
            if (i == lo && i == hi) continue;  // an empty bucket
            for (size_t k : {std::min(lo, hi), std::max(lo, hi)}) {
                const SeriesPoint p{s.xs()[k], s.ys()[k]};
                if (k == std::max(lo, hi) && lo == hi) break;
                if (!(want.size() > 1 && want.back() == p)) want.push_back(p);
            }
        }
        if (want.back().x < x1 || want.back().y != s.valueAt(x1))
            want.push_back({x1, s.valueAt(x1)});
        ASSERT_EQ(lod.size(), want.size()) << "seed " << seed;
        for (size_t k = 0; k < want.size(); ++k) ASSERT_EQ(lod[k], want[k]) << "point " << k;
    }
}

// Each cell's highest value in force, by brute force: the value at its start,
// then every point strictly inside it; the earliest of equals.
TEST(StepSeries, CellMaximaAreEachCellsOwnHighestMoment) {
    const StepSeries s = randomWalk(5000, 21);
    const auto xs = s.xs();
    const auto ys = s.ys();
    std::mt19937_64 rng(4);
    for (int round = 0; round < 40; ++round) {
        // Edges before, inside and past the series, some a unit apart, some
        // on a point's x (where several points share it).
        std::vector<int64_t> edges{int64_t(rng() % 40) - 20};
        const size_t cells = 1 + rng() % 300;
        for (size_t k = 0; k < cells; ++k) {
            const int64_t gap = rng() % 4 == 0 ? 1 : int64_t(rng() % (rng() % 2 ? 20 : 400)) + 1;
            edges.push_back(edges.back() + gap);
        }
        const std::vector<SeriesPoint> got = s.cellMaxima(edges);
        ASSERT_EQ(got.size(), cells);
        for (size_t k = 0; k < cells; ++k) {
            const int64_t lo = edges[k], hi = edges[k + 1];
            SeriesPoint want{lo, s.valueAt(lo)};
            for (size_t i = 0; i < xs.size(); ++i)
                if (xs[i] > lo && xs[i] < hi && ys[i] > want.y) want = {xs[i], ys[i]};
            ASSERT_EQ(got[k], want) << "cell [" << lo << ", " << hi << ") of round " << round;
        }
        // A cell's answer does not depend on its neighbours.
        const size_t k = rng() % cells;
        const std::vector<int64_t> alone{edges[k], edges[k + 1]};
        EXPECT_EQ(s.cellMaxima(alone).front(), got[k]);
    }
    EXPECT_TRUE(s.cellMaxima(std::vector<int64_t>{5}).empty());
    EXPECT_EQ(StepSeries{}.cellMaxima(std::vector<int64_t>{0, 10}).front(), (SeriesPoint{0, 0}));
}
