// The layout pyramid: a frame read from it is the sweep's picture at the
// stored resolution, keeps the peak and every byte, answers the hit test
// with what it draws, and leaves finer views to the sweep.
#include "memscope/view/layout_pyramid.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <vector>

#include "../allocation_test_util.h"
#include "memscope/view/allocation_order.h"

namespace memscope {
namespace {

using testutil::AllocationFixture;
using testutil::churn;

PyramidOptions smallPyramid(size_t columns) {
    PyramidOptions o;
    o.min_columns = columns;
    o.max_columns = columns;
    o.threads = 2;
    return o;
}

LayoutRequest wholeRun(const DeviceTimeline& tl, size_t columns, uint64_t minBand) {
    LayoutRequest r;
    r.lo = tl.start;
    r.hi = tl.end + 1;
    r.columns = columns;
    r.min_band_bytes = minBand;
    return r;
}

// Every column stacks contiguous segments from zero up to its total, which
// is what is live at its sample, one count per live allocation.
void expectComplete(const AllocationFixture& f, const AllocationLayout& l) {
    const auto segments = l.drawnSegments();
    for (const LayoutColumn& c : l.columns) {
        uint64_t y = 0, count = 0;
        ASSERT_LE(c.last, segments.size());
        for (uint32_t k = c.first; k < c.last; ++k) {
            EXPECT_GT(segments[k].top, y);  // not empty
            y = segments[k].top;
            count += segments[k].count;
        }
        EXPECT_EQ(y, c.total);
        EXPECT_EQ(int64_t(c.total), f.tl->live.valueAt(c.sample));
        EXPECT_EQ(count, f.tl->liveAt(c.sample).size());
    }
}

TEST(LayoutPyramid, ReadsBackTheSweepAtItsOwnResolution) {
    const AllocationFixture f(churn(6000, 12, 5));
    const LayoutPyramid p = buildLayoutPyramid(*f.tl, f.index, smallPyramid(256));
    ASSERT_FALSE(p.empty());
    ASSERT_EQ(p.columns.size(), 256u);
    // One pixel per stored column: the stored columns themselves.
    const LayoutRequest r = wholeRun(*f.tl, 256, p.min_band_bytes);
    const auto read = layoutFromPyramid(*f.tl, p, r);
    ASSERT_TRUE(read);
    ASSERT_TRUE(read->shared_segments);  // read in place, nothing copied
    ASSERT_EQ(read->columns.size(), 256u);
    // Each column is the sweep's stack at its sample, segment for segment.
    for (const LayoutColumn& a : read->columns) {
        LayoutRequest one = r;
        one.lo = a.sample;
        one.hi = a.sample + 1;
        one.columns = 1;
        const AllocationLayout swept = layoutAllocations(*f.tl, f.index, one);
        ASSERT_EQ(swept.columns.size(), 1u);
        const LayoutColumn& b = swept.columns.front();
        ASSERT_EQ(a.total, b.total);
        ASSERT_EQ(a.last - a.first, b.last - b.first);
        for (uint32_t i = 0; i < a.last - a.first; ++i) {
            const LayoutSegment& x = read->drawnSegments()[a.first + i];
            const LayoutSegment& y = swept.segments[b.first + i];
            EXPECT_EQ(x.top, y.top);
            EXPECT_EQ(x.interval, y.interval);
            EXPECT_EQ(x.site, y.site);
            EXPECT_EQ(x.count, y.count);
        }
    }
    expectComplete(f, *read);
}

TEST(LayoutPyramid, CoarserViewsKeepThePeakAndEveryByte) {
    const AllocationFixture f(churn(8000, 20, 6));
    const LayoutPyramid p = buildLayoutPyramid(*f.tl, f.index, smallPyramid(512));
    for (size_t pixels : {37u, 100u, 333u, 512u}) {
        const auto l = layoutFromPyramid(*f.tl, p, wholeRun(*f.tl, pixels, p.min_band_bytes * 3));
        ASSERT_TRUE(l) << pixels;
        ASSERT_EQ(l->columns.size(), pixels);
        EXPECT_EQ(int64_t(l->max_total), f.tl->peak.bytes) << pixels;
        expectComplete(f, *l);
        // Each pixel shows the highest stored column it overlaps.
        for (const LayoutColumn& c : l->columns) {
            uint64_t highest = 0;
            for (const LayoutColumn& s : p.columns)
                if (s.x1 > c.x0 && s.x0 < c.x1) highest = std::max(highest, s.total);
            EXPECT_EQ(c.total, highest);
        }
    }
}

TEST(LayoutPyramid, HighestColumnMatchesAScan) {
    const AllocationFixture f(churn(4000, 6, 7));
    const LayoutPyramid p = buildLayoutPyramid(*f.tl, f.index, smallPyramid(300));
    ASSERT_GE(p.columns.size(), 128u);
    std::mt19937 rng(3);
    const auto n = uint32_t(p.columns.size());
    for (int t = 0; t < 500; ++t) {
        uint32_t a = rng() % n, b = rng() % n;
        if (a > b) std::swap(a, b);
        uint32_t best = a;
        for (uint32_t i = a; i <= b; ++i)
            if (p.columns[i].total > p.columns[best].total) best = i;
        EXPECT_EQ(p.columns[highestColumn(p, a, b)].total, p.columns[best].total);
    }
}

TEST(LayoutPyramid, HitTestAnswersWithWhatIsDrawn) {
    const AllocationFixture f(churn(5000, 9, 8));
    AllocationIndex index =
        AllocationIndex::build(f.trace, *f.tl, AllocationIndex::Detail::WithPyramid);
    ASSERT_TRUE(index.pyramid && !index.pyramid->empty());
    const AllocationLayout l =
        layoutAllocations(*f.tl, index, wholeRun(*f.tl, 200, index.pyramid->min_band_bytes * 2));
    ASSERT_TRUE(l.shared_segments);  // served by the pyramid
    std::mt19937 rng(4);
    size_t answered = 0;
    for (int t = 0; t < 400; ++t) {
        const LayoutColumn& c = l.columns[rng() % l.columns.size()];
        if (c.total == 0) continue;
        const double bytes = double(rng() % c.total);
        const LayoutSegment* s = segmentAt(l, c.x0, bytes);
        ASSERT_TRUE(s);
        const auto hit = allocationAt(*f.tl, l, c.x0, bytes);
        ASSERT_TRUE(hit);
        ++answered;
        if (s->interval >= 0) {
            EXPECT_EQ(int64_t(*hit), s->interval);
        }
        // What is under the mouse is live at the moment the column shows.
        const AllocationInterval& a = f.tl->intervals[*hit];
        EXPECT_LE(a.start, c.sample);
        EXPECT_GT(effectiveEnd(a), c.sample);
    }
    EXPECT_GT(answered, 300u);
}

TEST(LayoutPyramid, FinerViewsAndThinnerBandsGoToTheSweep) {
    const AllocationFixture f(churn(6000, 8, 9));
    AllocationIndex index =
        AllocationIndex::build(f.trace, *f.tl, AllocationIndex::Detail::WithPyramid);
    const LayoutPyramid& p = *index.pyramid;
    const int64_t span = f.tl->end + 1 - f.tl->start;
    // A tenth of the run at 1000 pixels is 100x finer than 1024 stored columns.
    LayoutRequest fine = wholeRun(*f.tl, 1000, p.min_band_bytes);
    fine.hi = fine.lo + span / 10;
    EXPECT_FALSE(layoutFromPyramid(*f.tl, p, fine));
    const AllocationLayout swept = layoutAllocations(*f.tl, index, fine);
    EXPECT_FALSE(swept.shared_segments);
    EXPECT_FALSE(swept.columns.empty());
    // Bands thinner than stored: the sweep draws them.
    EXPECT_FALSE(layoutFromPyramid(*f.tl, p, wholeRun(*f.tl, 100, p.min_band_bytes / 4)));
    EXPECT_TRUE(layoutFromPyramid(*f.tl, p, wholeRun(*f.tl, 100, p.min_band_bytes)));
    // Another timeline's pyramid is refused.
    const AllocationFixture other(churn(300, 2, 10));
    EXPECT_FALSE(layoutFromPyramid(*other.tl, p, wholeRun(*other.tl, 10, p.min_band_bytes)));
}

TEST(LayoutPyramid, BeyondTheLastEventShowsWhatStaysLive) {
    const AllocationFixture f(churn(3000, 5, 11));
    const LayoutPyramid p = buildLayoutPyramid(*f.tl, f.index, smallPyramid(128));
    const int64_t span = f.tl->end + 1 - f.tl->start;
    LayoutRequest r = wholeRun(*f.tl, 64, p.min_band_bytes);
    r.lo = f.tl->start - span / 2;  // half a run of nothing before it
    r.hi = f.tl->end + 1 + span / 2;
    const auto l = layoutFromPyramid(*f.tl, p, r);
    ASSERT_TRUE(l);
    EXPECT_EQ(l->columns.front().total, 0u);
    EXPECT_EQ(l->columns.front().first, l->columns.front().last);
    const LayoutColumn& last = l->columns.back();
    uint64_t neverFreed = 0;
    for (const AllocationInterval& a : f.tl->intervals)
        if (effectiveEnd(a) > f.tl->end) neverFreed += a.size;
    EXPECT_EQ(last.total, neverFreed);
    EXPECT_EQ(int64_t(l->max_total), f.tl->peak.bytes);
}

// The tasks finish in any order on two threads; their parts go into the
// pyramid in column order: the same pyramid as one thread builds.
TEST(LayoutPyramid, TwoThreadsBuildWhatOneBuilds) {
    const AllocationFixture f(churn(9000, 15, 21));
    PyramidOptions one = smallPyramid(2048), two = smallPyramid(2048);
    one.threads = 1;
    const LayoutPyramid a = buildLayoutPyramid(*f.tl, f.index, one);
    const LayoutPyramid b = buildLayoutPyramid(*f.tl, f.index, two);
    ASSERT_FALSE(a.empty());
    ASSERT_EQ(a.columns.size(), b.columns.size());
    ASSERT_EQ(a.segments->size(), b.segments->size());
    for (size_t k = 0; k < a.columns.size(); ++k) {
        EXPECT_EQ(a.columns[k].first, b.columns[k].first) << k;
        EXPECT_EQ(a.columns[k].last, b.columns[k].last) << k;
        EXPECT_EQ(a.columns[k].sample, b.columns[k].sample) << k;
    }
    for (size_t k = 0; k < a.segments->size(); ++k) {
        EXPECT_EQ((*a.segments)[k].top, (*b.segments)[k].top) << k;
        EXPECT_EQ((*a.segments)[k].interval, (*b.segments)[k].interval) << k;
    }
}

// No column holds more segments than the bound the pyramid's room stops
// at, at any band height down to single bytes; the room it keeps is what
// the first part projects (the churn is uniform), and its memory counts
// what it holds, not that room.
TEST(LayoutPyramid, ColumnsStayWithinTheBoundOfTheRoom) {
    const AllocationFixture f(churn(12000, 40, 8));
    for (uint64_t rows : {uint64_t(1), uint64_t(7), uint64_t(768), uint64_t(1) << 40}) {
        PyramidOptions o = smallPyramid(1024);
        o.rows = rows;
        const LayoutPyramid p = buildLayoutPyramid(*f.tl, f.index, o);
        ASSERT_FALSE(p.empty()) << rows;
        const size_t bound = maxSegmentsPerPyramidColumn(*f.tl, p.min_band_bytes);
        size_t most = 0;
        for (const LayoutColumn& c : p.columns) most = std::max<size_t>(most, c.last - c.first);
        most = std::max<size_t>(most, p.tail.last - p.tail.first);
        EXPECT_LE(most, bound) << rows;
        EXPECT_GT(most, 0u) << rows;
        EXPECT_LE(p.segments->capacity(), (p.columns.size() + 1) * bound) << rows;
        EXPECT_LE(p.segments->capacity(), 2 * p.segments->size()) << rows;
        EXPECT_GE(p.memoryBytes(), p.segments->size() * sizeof(LayoutSegment)) << rows;
        EXPECT_LT(p.memoryBytes(), p.segments->size() * sizeof(LayoutSegment) +
                                       p.columns.capacity() * sizeof(LayoutColumn) +
                                       p.columns.size() * sizeof(uint32_t))
            << rows;
    }
}

TEST(LayoutPyramid, ACancelledBuildGivesNothing) {
    const AllocationFixture f(churn(2000, 4, 12));
    std::atomic<bool> cancel{true};
    PyramidOptions o = smallPyramid(512);
    o.cancel = &cancel;
    const LayoutPyramid p = buildLayoutPyramid(*f.tl, f.index, o);
    EXPECT_TRUE(p.empty());
    EXPECT_FALSE(layoutFromPyramid(*f.tl, p, wholeRun(*f.tl, 10, 1 << 20)));
}

}  // namespace
}  // namespace memscope
