// By-allocation layouts on a grid, and the pan that takes columns over from
// the frame before: the same layout as one swept afresh, column by column.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "../allocation_test_util.h"
#include "memscope/view/allocation_layout.h"

namespace memscope {
namespace {

using testutil::AllocationFixture;
using testutil::churn;

LayoutRequest gridRequest(int64_t lo, int64_t hi, size_t columns, uint64_t band) {
    LayoutRequest r;
    r.lo = lo;
    r.hi = hi;
    r.columns = columns;
    r.min_band_bytes = band;
    r.grid = true;
    return r;
}

// Same columns, same segments in each, whatever the segments' numbering.
void expectSameLayout(const AllocationLayout& got, const AllocationLayout& want) {
    ASSERT_EQ(got.columns.size(), want.columns.size());
    EXPECT_EQ(got.max_total, want.max_total);
    for (size_t k = 0; k < want.columns.size(); ++k) {
        const LayoutColumn& g = got.columns[k];
        const LayoutColumn& w = want.columns[k];
        ASSERT_EQ(g.x0, w.x0) << "column " << k;
        ASSERT_EQ(g.x1, w.x1) << "column " << k;
        ASSERT_EQ(g.sample, w.sample) << "column " << k;
        ASSERT_EQ(g.total, w.total) << "column " << k;
        ASSERT_EQ(g.last - g.first, w.last - w.first) << "column " << k;
        ASSERT_LE(g.last, got.segments.size());
        for (uint32_t i = 0; i < w.last - w.first; ++i) {
            const LayoutSegment& a = got.segments[g.first + i];
            const LayoutSegment& b = want.segments[w.first + i];
            ASSERT_EQ(a.top, b.top) << "column " << k << ", segment " << i;
            ASSERT_EQ(a.site, b.site) << "column " << k << ", segment " << i;
            ASSERT_EQ(a.count, b.count) << "column " << k << ", segment " << i;
            ASSERT_EQ(a.interval, b.interval) << "column " << k << ", segment " << i;
        }
    }
}

TEST(AllocationLayoutGrid, ColumnsAreWholeGridCellsSampledAtTheirOwnPeak) {
    const AllocationFixture f(churn(3000, 5, 31));
    const int64_t span = f.tl->end - f.tl->start;
    std::mt19937_64 rng(2);
    for (int round = 0; round < 30; ++round) {
        const int64_t lo = f.tl->start + int64_t(rng() % uint64_t(span));
        const int64_t hi = lo + 1 + int64_t(rng() % uint64_t(span / 3));
        const AllocationLayout l =
            layoutAllocations(*f.tl, f.index, gridRequest(lo, hi, 1 + rng() % 400, 4096));
        ASSERT_GT(l.grid_step, 0);
        ASSERT_FALSE(l.columns.empty());
        EXPECT_EQ(l.columns.front().x0, lo);
        EXPECT_EQ(l.columns.back().x1, hi);
        for (size_t k = 0; k < l.columns.size(); ++k) {
            const LayoutColumn& c = l.columns[k];
            if (k > 0) {
                EXPECT_EQ(c.x0, l.columns[k - 1].x1);
                EXPECT_EQ(c.x0 % l.grid_step, 0) << "an inner edge off the grid";
            }
            ASSERT_LE(c.x1 - c.x0, l.grid_step);
            if (k > 0 && k + 1 < l.columns.size()) {
                EXPECT_EQ(c.x1 - c.x0, l.grid_step);
            }
            // The sample is the column's highest moment (the earliest of equals).
            ASSERT_GE(c.sample, c.x0);
            ASSERT_LT(c.sample, c.x1);
            int64_t best = f.tl->live.valueAt(c.x0);
            for (size_t i = 0; i < f.tl->live.size(); ++i) {
                const int64_t x = f.tl->live.xs()[i];
                if (x > c.x0 && x < c.x1) best = std::max(best, f.tl->live.ys()[i]);
            }
            EXPECT_EQ(f.tl->live.valueAt(c.sample), best)
                << "column [" << c.x0 << ", " << c.x1 << ")";
            EXPECT_EQ(int64_t(c.total), best);
        }
    }
}

// Pans of every size left and right, now and then a zoom or a new band
// height: each layout made from the one before is the layout made afresh,
// and a pan that keeps most of the range in view sweeps only the rest.
TEST(AllocationLayoutGrid, APanTakesOverTheColumnsBothFramesShow) {
    const AllocationFixture f(churn(6000, 6, 32));
    const int64_t span = f.tl->end - f.tl->start;
    std::mt19937_64 rng(3);
    int64_t width = span / 8, lo = f.tl->start + span / 3;
    uint64_t band = 2048;
    AllocationLayout previous;
    size_t reusedFrames = 0;
    for (int step = 0; step < 120; ++step) {
        const int what = int(rng() % 10);
        bool keepsGrid = step > 0;
        if (what == 0) {
            width = std::max<int64_t>(50, width * int64_t(50 + rng() % 100) / 100);  // zoom
            keepsGrid = false;
        } else if (what == 1) {
            band = 512 + rng() % 8192;  // the scale moved
            keepsGrid = false;
        } else {
            const int64_t shift =
                int64_t(rng() % uint64_t(width)) * (rng() % 2 ? 1 : -1) / (rng() % 2 ? 1 : 5);
            lo = std::clamp(lo + shift, f.tl->start - width / 2, f.tl->end);
        }
        const LayoutRequest r = gridRequest(lo, lo + width, 300, band);
        const AllocationLayout fresh = layoutAllocations(*f.tl, f.index, r);
        AllocationLayout panned = layoutAllocations(*f.tl, f.index, r, &previous);
        expectSameLayout(panned, fresh);
        if (::testing::Test::HasFatalFailure()) return;
        if (keepsGrid && panned.grid_step == previous.grid_step) {
            const size_t shared = size_t(std::max<int64_t>(
                0, std::min(previous.columns.back().x1, fresh.columns.back().x1) -
                       std::max(previous.columns.front().x0, fresh.columns.front().x0)));
            // Every whole column both frames hold is taken over.
            if (shared >= size_t(3 * fresh.grid_step)) {
                EXPECT_GE(panned.reused_columns, shared / size_t(fresh.grid_step) - 2);
            }
            reusedFrames += panned.reused_columns > 0 ? 1 : 0;
        } else if (panned.grid_step != previous.grid_step ||
                   previous.min_band_bytes != panned.min_band_bytes) {
            EXPECT_EQ(panned.reused_columns, 0u);  // another grid or band height
        }
        EXPECT_EQ(fresh.reused_columns, 0u);
        previous = std::move(panned);
    }
    EXPECT_GT(reusedFrames, 50u);
}

// Another index's layout, or one not on a grid, gives nothing: its columns
// would name another trace's allocations.
TEST(AllocationLayoutGrid, ALayoutOfAnotherIndexIsNotTakenOver) {
    const AllocationFixture f(churn(3000, 5, 33));
    const AllocationFixture other(churn(3000, 5, 34));
    const int64_t lo = std::max(f.tl->start, other.tl->start);
    const int64_t width = std::min(f.tl->end, other.tl->end) - lo;
    const LayoutRequest r = gridRequest(lo, lo + width / 2, 200, 4096);
    const AllocationLayout theirs = layoutAllocations(*other.tl, other.index, r);
    const AllocationLayout fresh = layoutAllocations(*f.tl, f.index, r);
    const AllocationLayout got = layoutAllocations(*f.tl, f.index, r, &theirs);
    EXPECT_EQ(got.reused_columns, 0u);
    expectSameLayout(got, fresh);
    // The same range evenly cut (no grid) is not taken over either.
    LayoutRequest even = r;
    even.grid = false;
    const AllocationLayout evenLayout = layoutAllocations(*f.tl, f.index, even);
    EXPECT_EQ(evenLayout.grid_step, 0);
    EXPECT_EQ(layoutAllocations(*f.tl, f.index, r, &evenLayout).reused_columns, 0u);
    // One that claims the grid but whose columns are not on it (fewer,
    // wider) is read within its bounds, and the result is still the fresh one.
    AllocationLayout claims = layoutAllocations(*f.tl, f.index, [&] {
        LayoutRequest few = even;
        few.columns = 7;
        return few;
    }());
    claims.grid_step = fresh.grid_step;
    claims.min_band_bytes = fresh.min_band_bytes;
    claims.source = fresh.source;
    claims.source_intervals = fresh.source_intervals;
    expectSameLayout(layoutAllocations(*f.tl, f.index, r, &claims), fresh);
    // Nor is one whose columns are out of order in its segments.
    AllocationLayout shuffled = fresh;
    ASSERT_GT(shuffled.columns.size(), 20u);
    std::swap(shuffled.columns[10].first, shuffled.columns[12].first);
    std::swap(shuffled.columns[10].last, shuffled.columns[12].last);
    if (shuffled.columns[10].first != shuffled.columns[12].first) {
        EXPECT_EQ(layoutAllocations(*f.tl, f.index, r, &shuffled).reused_columns, 0u);
    }
    // Nor is a layout whose columns do not index its segments.
    AllocationLayout broken = fresh;
    broken.segments.resize(broken.segments.size() / 2);
    const AllocationLayout afterBroken = layoutAllocations(*f.tl, f.index, r, &broken);
    EXPECT_EQ(afterBroken.reused_columns, 0u);
    expectSameLayout(afterBroken, fresh);
}

// A view's frames laid out with buffers handed from one to the next, as the
// GUI lays them out (pans, jumps, zooms, a new band height, and frames read
// from the pyramid, which leave no segments behind): each is the layout made
// afresh, and what the buffers hold stays within two rooms and a piece.
TEST(AllocationLayoutGrid, FramesLaidOutWithBuffersAreTheFramesLaidOutWithout) {
    const AllocationFixture f(churn(6000, 6, 35));
    const int64_t span = f.tl->end - f.tl->start;
    std::mt19937_64 rng(5);
    int64_t width = span / 6, lo = f.tl->start + span / 4;
    uint64_t band = 2048;
    AllocationLayout drawn;
    LayoutBuffers buffers;
    size_t largest = 0;
    for (int step = 0; step < 150; ++step) {
        const int what = int(rng() % 12);
        if (what == 0) {
            width = std::max<int64_t>(50, width * int64_t(50 + rng() % 100) / 100);
        } else if (what == 1) {
            band = 512 + rng() % 8192;
        } else if (what == 2) {
            lo = f.tl->start + int64_t(rng() % uint64_t(span));  // a jump
        } else if (what == 3) {
            // A frame read from the pyramid: drawn, with no segments of its own.
            buffers.recycle(std::exchange(drawn, AllocationLayout{}));
            continue;
        } else {
            const int64_t shift = int64_t(rng() % uint64_t(width)) * (rng() % 2 ? 1 : -1) / 4;
            lo = std::clamp(lo + shift, f.tl->start - width / 2, f.tl->end);
        }
        const LayoutRequest r = gridRequest(lo, lo + width, 1 + rng() % 400, band);
        const AllocationLayout fresh = layoutAllocations(*f.tl, f.index, r);
        AllocationLayout next = layoutAllocations(*f.tl, f.index, r, &drawn, &buffers);
        expectSameLayout(next, fresh);
        if (::testing::Test::HasFatalFailure()) return;
        largest = std::max(largest, next.segments.capacity());
        buffers.recycle(std::exchange(drawn, std::move(next)));
        // Two rooms and the piece, none past the largest layout's room.
        EXPECT_LE(buffers.memoryBytes(), 3 * largest * sizeof(LayoutSegment)) << "step " << step;
    }
}

// A layout writes into the largest room the buffers hold, and two rooms
// outlast a frame read from the pyramid: a pan after it, which keeps the
// layout drawn while it builds the next, finds the second.
TEST(AllocationLayoutGrid, ALayoutWritesIntoTheRoomsEarlierFramesLeft) {
    const AllocationFixture f(churn(6000, 6, 36));
    const int64_t span = f.tl->end - f.tl->start;
    const int64_t lo = f.tl->start + span / 3, width = span / 5;
    const LayoutRequest r = gridRequest(lo, lo + width, 300, 2048);
    LayoutBuffers buffers;
    AllocationLayout a = layoutAllocations(*f.tl, f.index, r);
    AllocationLayout b = layoutAllocations(*f.tl, f.index, r);
    a.segments.reserve(a.segments.size() * 3);  // the larger room
    ASSERT_GT(b.segments.capacity(), 0u);
    const LayoutSegment* larger = a.segments.data();
    const LayoutSegment* smaller = b.segments.data();
    buffers.recycle(std::move(a));
    buffers.recycle(std::move(b));
    buffers.recycle(AllocationLayout{});  // a frame read from the pyramid
    AllocationLayout first = layoutAllocations(*f.tl, f.index, r, nullptr, &buffers);
    EXPECT_EQ(first.segments.data(), larger);
    // A pan by a fifth: columns taken over from `first`, the rest swept.
    const LayoutRequest panned = gridRequest(lo + width / 5, lo + width / 5 + width, 300, 2048);
    const AllocationLayout second = layoutAllocations(*f.tl, f.index, panned, &first, &buffers);
    EXPECT_GT(second.reused_columns, 0u);
    EXPECT_EQ(second.segments.data(), smaller);
    expectSameLayout(second, layoutAllocations(*f.tl, f.index, panned));
    // A third room is not kept: the smallest goes.
    LayoutBuffers three;
    for (size_t room : {100u, 300u, 200u}) {
        AllocationLayout l;
        l.segments.reserve(room);
        three.recycle(std::move(l));
    }
    EXPECT_EQ(three.memoryBytes(), 500 * sizeof(LayoutSegment));
    EXPECT_EQ(three.take().capacity(), 300u);
    EXPECT_EQ(three.take().capacity(), 200u);
    EXPECT_EQ(three.take().capacity(), 0u);
}

TEST(AllocationLayoutGrid, BandHeightsKeepThreeSignificantBits) {
    EXPECT_EQ(bandBytesForRow(0), 1u);
    EXPECT_EQ(bandBytesForRow(-5), 1u);
    EXPECT_EQ(bandBytesForRow(0.0 / 0.0), 1u);
    EXPECT_EQ(bandBytesForRow(7), 7u);
    EXPECT_EQ(bandBytesForRow(7.2), 8u);  // whole bytes first
    EXPECT_EQ(bandBytesForRow(1000), 896u);
    for (double row = 1; row < 1e15; row *= 1.37) {
        const uint64_t band = bandBytesForRow(row);
        EXPECT_LE(double(band), std::ceil(row));
        EXPECT_GE(double(band), 0.8 * row) << row;
        EXPECT_LE(std::bit_width(band) - std::countr_zero(band), 3) << row;
    }
    EXPECT_GT(bandBytesForRow(1e30), 0u);
    // Scales a few percent apart mostly share a band height.
    EXPECT_EQ(bandBytesForRow(1.00e6), bandBytesForRow(1.03e6));
}

}  // namespace
}  // namespace memscope
