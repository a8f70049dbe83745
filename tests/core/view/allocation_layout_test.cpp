// The by-allocation layout: every live allocation stacked in allocation order,
// thin ones merged per site, every byte of a column accounted for, and the hit
// test answering with what the layout draws.
#include "memscope/view/allocation_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../allocation_test_util.h"
#include "memscope/view/allocation_order.h"

namespace memscope {
namespace {

using testutil::AllocationFixture;
using testutil::churn;

TEST(AllocationLayout, OneSegmentPerAllocationInAllocationOrder) {
    const AllocationFixture f(churn(600, 4, 3));
    const AllocationLayout l = f.layout(1);  // nothing is thin: every allocation its own band
    ASSERT_FALSE(l.columns.empty());
    for (const LayoutColumn& c : l.columns) {
        const std::vector<uint32_t> order = stackedAt(*f.tl, ViewMode::Allocation, c.sample);
        ASSERT_EQ(size_t(c.last - c.first), order.size());
        uint64_t bottom = 0;
        for (size_t k = 0; k < order.size(); ++k) {
            const LayoutSegment& s = l.segments[c.first + k];
            EXPECT_EQ(s.interval, int64_t(order[k]));
            if (k > 0) {
                EXPECT_LT(order[k - 1], order[k]);  // allocation order, bottom first
            }
            EXPECT_EQ(segmentBottom(l.segments, c.first, c.first + uint32_t(k)), bottom);
            bottom += f.tl->intervals[order[k]].size;
            EXPECT_EQ(s.top, bottom);
            EXPECT_EQ(s.site, f.sites.siteOf(order[k]));
        }
    }
}

// The segments a column of `order` (its stack, bottom first) holds, built
// afresh by the layout's rule: the oracle for the sweep, which reuses the
// column before wherever it can.
std::vector<LayoutSegment> segmentsOf(const AllocationFixture& f,
                                      const std::vector<uint32_t>& order, uint64_t band) {
    std::vector<LayoutSegment> out;
    LayoutSegment run;  // count 0: none open
    uint64_t acc = 0, largest = 0, runBottom = 0;
    const auto flush = [&] {
        if (run.count > 0 && run.top > runBottom) {
            LayoutSegment* prev = out.empty() ? nullptr : &out.back();
            if (prev && prev->interval < 0 && prev->site == run.site && prev->top == runBottom) {
                prev->top = run.top;
                prev->count += run.count;
            } else {
                out.push_back(run);
            }
        }
        run = {};
    };
    for (uint32_t i : order) {
        const uint64_t size = std::min(f.tl->intervals[i].size, UINT64_MAX - acc);
        const uint32_t site = f.sites.siteOf(i);
        if (size >= band) {
            flush();
            out.push_back({acc + size, site, 1, int64_t(i)});
        } else {
            if (run.count > 0 && run.top - runBottom >= band && site != run.site) flush();
            if (run.count == 0) {
                run = {acc, site, 0, -1};
                runBottom = acc;
            }
            if (run.count == 0 || size > largest) {
                largest = size;
                run.site = site;
            }
            run.top += size;
            ++run.count;
        }
        acc += size;
    }
    flush();
    return out;
}

void expectSegmentsAsBuiltAfresh(const AllocationFixture& f, const AllocationLayout& l,
                                 uint64_t band) {
    ASSERT_FALSE(l.columns.empty());
    for (const LayoutColumn& c : l.columns) {
        const std::vector<uint32_t> order = stackedAt(*f.tl, ViewMode::Allocation, c.sample);
        const std::vector<LayoutSegment> want = segmentsOf(f, order, band);
        ASSERT_EQ(size_t(c.last - c.first), want.size()) << "column at " << c.sample;
        for (size_t k = 0; k < want.size(); ++k) {
            const LayoutSegment& got = l.segments[c.first + k];
            ASSERT_EQ(got.top, want[k].top) << "column at " << c.sample << ", segment " << k;
            ASSERT_EQ(got.site, want[k].site) << "column at " << c.sample << ", segment " << k;
            ASSERT_EQ(got.count, want[k].count) << "column at " << c.sample << ", segment " << k;
            ASSERT_EQ(got.interval, want[k].interval)
                << "column at " << c.sample << ", segment " << k;
        }
        EXPECT_EQ(c.total, want.empty() ? 0 : want.back().top);
    }
}

// Enough churn that the sweep runs as two halves on two threads: the columns
// of the right half, the first included, hold what a single sweep gives.
TEST(AllocationLayout, ASweepInTwoHalvesDrawsEveryColumnAsOne) {
    // 250,000 allocations from three sites, each freed eight allocations later.
    Trace t;
    std::vector<StackId> stacks;
    for (uint32_t s = 0; s < 3; ++s) {
        const FrameId frame = t.internFrame({t.internString("layer" + std::to_string(s)),
                                             t.internString("/home/me/model.py"), s + 1});
        stacks.push_back(t.internStack(std::span(&frame, 1)));
    }
    std::mt19937_64 rng(12);
    constexpr int kAllocations = 250000, kLifetime = 8;
    std::vector<Event> allocs;
    for (int i = 0; i < kAllocations; ++i) {
        Event e;
        e.time = 1000 + int64_t(i) * 10;
        e.kind = EventKind::Alloc;
        e.address = 0x10000 + 0x100000 * uint64_t(i % 16);
        e.size = uint64_t(512) << (rng() % 8);
        e.stack = stacks[rng() % stacks.size()];
        allocs.push_back(e);
    }
    for (int i = 0; i < kAllocations + kLifetime; ++i) {
        if (i < kAllocations) t.events.push_back(allocs[size_t(i)]);
        if (i >= kLifetime) {
            Event f = allocs[size_t(i - kLifetime)];
            f.time = 1000 + int64_t(i) * 10 + 5;
            f.kind = EventKind::FreeCompleted;
            t.events.push_back(f);
        }
    }
    const AllocationFixture f(std::move(t));
    ASSERT_EQ(f.tl->intervals.size(), size_t(kAllocations));  // past the threshold for two halves
    const AllocationLayout l = f.layout(1, 400);
    ASSERT_GE(l.columns.size(), 64u);
    uint64_t maxTotal = 0;
    for (const LayoutColumn& c : l.columns) {
        const std::vector<uint32_t> order = stackedAt(*f.tl, ViewMode::Allocation, c.sample);
        ASSERT_EQ(size_t(c.last - c.first), order.size());
        ASSERT_LE(c.last, l.segments.size());
        uint64_t bottom = 0;
        for (size_t k = 0; k < order.size(); ++k) {
            const LayoutSegment& s = l.segments[c.first + k];
            ASSERT_EQ(s.interval, int64_t(order[k]));
            bottom += f.tl->intervals[order[k]].size;
            ASSERT_EQ(s.top, bottom);
        }
        EXPECT_EQ(c.total, bottom);
        maxTotal = std::max(maxTotal, c.total);
    }
    EXPECT_EQ(l.max_total, maxTotal);
    EXPECT_GE(l.work, l.segments.size());
    // With thin allocations merged too, runs included, across the halves.
    expectSegmentsAsBuiltAfresh(f, f.layout(2048, 400), 2048);
}

// Allocations freed anywhere in the stack, columns of one x or several, bands
// from every allocation its own to most of them merged: each column's segments
// are the ones a column built from its stack alone has, though the sweep
// copies what the column before built below the lowest change.
TEST(AllocationLayout, EveryColumnIsWhatItsStackBuildsAfresh) {
    for (uint64_t seed = 20; seed < 22; ++seed)
        for (const int sites : {1, 40}) {
            const AllocationFixture f(churn(4000, sites, seed));
            for (const uint64_t band :
                 {uint64_t(1), uint64_t(64), uint64_t(2048), uint64_t(1) << 14})
                for (const size_t columns : {size_t(97), size_t(600)}) {
                    SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(sites) +
                                 " sites, band " + std::to_string(band) + ", " +
                                 std::to_string(columns) + " columns");
                    expectSegmentsAsBuiltAfresh(f, f.layout(band, columns), band);
                    if (HasFatalFailure()) return;
                }
        }
}

// A long-lived stack with churn at every height: parameters below, activations
// freed in the order they were made and out of it, and allocations of no bytes
// and of more bytes than a stack can hold (their sizes saturate).
TEST(AllocationLayout, ReusedColumnsKeepZeroAndSaturatedSizes) {
    Trace t;
    std::vector<StackId> stacks;
    for (uint32_t s = 0; s < 4; ++s) {
        const FrameId frame = t.internFrame({t.internString("layer" + std::to_string(s)),
                                             t.internString("/home/me/model.py"), s + 1});
        stacks.push_back(t.internStack(std::span(&frame, 1)));
    }
    std::mt19937_64 rng(31);
    std::vector<Event> live;
    int64_t time = 1000;
    uint64_t address = 0x10000;
    for (int i = 0; i < 6000; ++i) {
        Event e;
        e.time = time += 10;
        const bool alloc = live.size() < 50 || rng() % 2 == 0;
        if (alloc) {
            e.kind = EventKind::Alloc;
            // Three quarters of what a stack can hold at the bottom, for good:
            // an allocation of a quarter more, now and then, saturates it.
            const uint64_t pick = rng() % 100;
            e.size = i < 3 || pick == 1 ? (uint64_t(1) << 62) + rng() % 4096
                     : pick == 0        ? 0
                                        : uint64_t(256) << (rng() % 8);
            e.address = address += 1 << 20;
            e.stack = stacks[rng() % stacks.size()];
            live.push_back(e);
        } else {
            // Mostly the youngest, now and then any but the bottom three.
            const size_t k =
                rng() % 4 == 0 ? 3 + rng() % (live.size() - 3) : live.size() - 1 - rng() % 3;
            e = live[k];
            e.time = time;
            e.kind = EventKind::FreeCompleted;
            live.erase(live.begin() + ptrdiff_t(k));
        }
        t.events.push_back(e);
    }
    const AllocationFixture f(std::move(t));
    // The trace holds what it is meant to: a stack that saturates, and
    // allocations of no bytes.
    bool saturated = false;
    for (const LayoutColumn& c : f.layout(1, 3000).columns) saturated |= c.total == UINT64_MAX;
    EXPECT_TRUE(saturated);
    EXPECT_TRUE(std::any_of(f.tl->intervals.begin(), f.tl->intervals.end(),
                            [](const AllocationInterval& a) { return a.size == 0; }));
    for (const uint64_t band : {uint64_t(1), uint64_t(1000), uint64_t(1) << 20})
        for (const size_t columns : {size_t(150), size_t(3000)}) {
            SCOPED_TRACE("band " + std::to_string(band) + ", " + std::to_string(columns) +
                         " columns");
            expectSegmentsAsBuiltAfresh(f, f.layout(band, columns), band);
            if (HasFatalFailure()) return;
        }
}

TEST(AllocationLayout, EveryByteAccountedAndTheEnvelopeKept) {
    const AllocationFixture f(churn(3000, 6, 4));
    const AllocationLayout l = f.layout(2048, 200);
    for (const LayoutColumn& c : l.columns) {
        EXPECT_LE(c.x0, c.sample);
        EXPECT_LT(c.sample, c.x1);
        uint64_t y = 0, count = 0;
        for (uint32_t k = c.first; k < c.last; ++k) {
            // Each segment is its bottom (the top below it) and more.
            EXPECT_EQ(segmentBottom(l.segments, c.first, k), y);
            EXPECT_GT(l.segments[k].top, y);
            y = l.segments[k].top;
            count += l.segments[k].count;
        }
        EXPECT_EQ(y, c.total);
        EXPECT_EQ(int64_t(c.total), f.tl->live.valueAt(c.sample));
        EXPECT_EQ(count, f.tl->liveAt(c.sample).size());
    }
    for (size_t k = 1; k < l.columns.size(); ++k)
        EXPECT_EQ(l.columns[k].x0, l.columns[k - 1].x1);  // contiguous
    EXPECT_EQ(l.columns.front().x0, f.tl->start);
    EXPECT_EQ(l.columns.back().x1, f.tl->end + 1);
    // Each column shows its highest moment, so the peak is in the picture.
    EXPECT_EQ(int64_t(l.max_total), f.tl->peak.bytes);
}

TEST(AllocationLayout, ThinAllocationsMergePerSiteAtTheThreshold) {
    const AllocationFixture f(churn(3000, 6, 5));
    const uint64_t band = 4096;
    const AllocationLayout l = f.layout(band, 150);
    bool merged = false;
    for (const LayoutColumn& c : l.columns) {
        const std::vector<uint32_t> order = stackedAt(*f.tl, ViewMode::Allocation, c.sample);
        size_t next = 0;  // position in the stack
        for (uint32_t k = c.first; k < c.last; ++k) {
            const LayoutSegment& s = l.segments[k];
            const uint64_t height = s.top - segmentBottom(l.segments, c.first, k);
            if (s.interval >= 0) {
                EXPECT_GE(height, band);
                EXPECT_EQ(order[next], uint32_t(s.interval));
            } else {
                merged = merged || s.count > 1;
                // Only thin allocations, and the site is one of its members'.
                bool siteSeen = false;
                for (size_t m = next; m < next + s.count; ++m) {
                    EXPECT_LT(f.tl->intervals[order[m]].size, band);
                    siteSeen = siteSeen || f.sites.siteOf(order[m]) == s.site;
                }
                EXPECT_TRUE(siteSeen);
                // An aggregate thinner than the threshold only right under a
                // band of its own or at the top.
                if (height < band && k + 1 < c.last) {
                    EXPECT_GE(l.segments[k + 1].interval, 0);
                }
            }
            next += s.count;
        }
        EXPECT_EQ(next, order.size());
        // Bounded by pixels: about two segments per threshold of height.
        EXPECT_LE(c.last - c.first, 2 * c.total / band + 1);
    }
    EXPECT_TRUE(merged);
}

TEST(AllocationLayout, HitTestAnswersWhatIsDrawn) {
    const AllocationFixture f(churn(2000, 5, 6));
    const AllocationLayout l = f.layout(1024, 120);
    std::mt19937_64 rng(9);
    int hits = 0;
    for (int n = 0; n < 3000; ++n) {
        const LayoutColumn& c = l.columns[rng() % l.columns.size()];
        const int64_t x = c.x0 + int64_t(rng() % uint64_t(c.x1 - c.x0));
        const double y = double(rng() % (l.max_total + 100));
        const LayoutSegment* s = segmentAt(l, x, y);
        const auto hit = allocationAt(*f.tl, l, x, y);
        ASSERT_EQ(bool(s), bool(hit)) << "x " << x << " y " << y;
        if (!hit) {
            EXPECT_GE(y, double(c.total));
            continue;
        }
        ++hits;
        if (s->interval >= 0) {
            EXPECT_EQ(int64_t(*hit), s->interval);
        }
        // The allocation's place in the column's stack holds y, inside the segment.
        uint64_t bottom = 0;
        for (uint32_t i : stackedAt(*f.tl, ViewMode::Allocation, c.sample)) {
            if (i == *hit) break;
            bottom += f.tl->intervals[i].size;
        }
        const uint64_t top = bottom + f.tl->intervals[*hit].size;
        EXPECT_LE(double(bottom), y);
        EXPECT_LT(y, double(top));
        EXPECT_GE(bottom, segmentBottom(l.segments, c.first, uint32_t(s - l.segments.data())));
        EXPECT_LE(top, s->top);
        EXPECT_TRUE(liveAtX(f.tl->intervals[*hit], c.sample));
    }
    EXPECT_GT(hits, 100);
}

TEST(AllocationLayout, MostDrawnSitesByArea) {
    const AllocationFixture f(churn(2000, 5, 12));
    const AllocationLayout l = f.layout(1024, 100);
    std::vector<long double> area(f.sites.siteCount(), 0);
    for (const LayoutColumn& c : l.columns)
        for (uint32_t k = c.first; k < c.last; ++k)
            area[l.segments[k].site] +=
                (long double)(l.segments[k].top - segmentBottom(l.segments, c.first, k)) *
                (c.x1 - c.x0);
    const std::vector<uint32_t> top = mostDrawnSites(l, 3);
    ASSERT_EQ(top.size(), 3u);
    for (size_t k = 1; k < top.size(); ++k) EXPECT_GE(area[top[k - 1]], area[top[k]]);
    for (uint32_t s = 0; s < area.size(); ++s)
        if (std::find(top.begin(), top.end(), s) == top.end()) {
            EXPECT_LE(area[s], area[top.back()]);
        }
    EXPECT_TRUE(mostDrawnSites(AllocationLayout{}, 5).empty());
}

TEST(AllocationLayout, UnchangedColumnsShareTheirSegments) {
    // Zoomed far into a quiet stretch: one live set, one set of segments.
    const AllocationFixture f(churn(200, 3, 7));
    LayoutRequest r;
    r.lo = 1005;  // between the first two events
    r.hi = 1009;
    r.columns = 1000;
    const AllocationLayout l = layoutAllocations(*f.tl, f.index, r);
    EXPECT_EQ(l.columns.size(), 4u);  // no more columns than x values
    for (const LayoutColumn& c : l.columns) {
        EXPECT_EQ(c.first, l.columns.front().first);
        EXPECT_EQ(c.last, l.columns.front().last);
    }
    EXPECT_EQ(l.segments.size(), 1u);
}

TEST(AllocationLayout, ManyLiveAllocationsWidenTheColumns) {
    const AllocationFixture f(churn(3000, 4, 8));
    LayoutRequest r;
    r.lo = f.tl->start;
    r.hi = f.tl->end + 1;
    r.columns = 1000;
    r.max_work = 10 * f.tl->peak.live_intervals.size();
    const AllocationLayout l = layoutAllocations(*f.tl, f.index, r);
    EXPECT_GT(l.column_width, 1u);
    EXPECT_LE(l.columns.size(), 10u);
}

TEST(AllocationLayout, HeavyChurnWidensTheColumns) {
    // One allocation live at a time, 2000 started in the range: the starts,
    // not the live set, bound the work.
    Trace pairs;
    for (int i = 0; i < 2000; ++i) {
        Event alloc;
        alloc.time = 1000 + int64_t(i) * 10;
        alloc.kind = EventKind::Alloc;
        alloc.address = 0x10000;
        alloc.size = 256;
        Event free = alloc;
        free.time += 5;
        free.kind = EventKind::FreeCompleted;
        pairs.events.push_back(alloc);
        pairs.events.push_back(free);
    }
    const AllocationFixture f(std::move(pairs));
    LayoutRequest r;
    r.lo = f.tl->start;
    r.hi = f.tl->end + 1;
    r.columns = 1000;
    r.max_starts = f.tl->intervals.size() / 4;
    const AllocationLayout l = layoutAllocations(*f.tl, f.index, r);
    EXPECT_GE(l.column_width, 4u);
    EXPECT_LE(l.columns.size(), 250u);
    // A range that holds few starts keeps one column per pixel.
    r.hi = r.lo + 200;
    r.columns = 100;
    EXPECT_EQ(layoutAllocations(*f.tl, f.index, r).column_width, 1u);
}

TEST(AllocationLayout, BadRequestsAndEmptyTimelines) {
    const AllocationFixture f(churn(100, 2, 9));
    LayoutRequest r;
    r.lo = 50;
    r.hi = -50;  // reversed
    r.columns = 0;
    r.min_band_bytes = 0;
    const AllocationLayout l = layoutAllocations(*f.tl, f.index, r);
    EXPECT_LE(l.columns.size(), 1u);
    EXPECT_FALSE(allocationAt(*f.tl, l, 0, -1.0));
    EXPECT_FALSE(allocationAt(*f.tl, l, INT64_MIN, 0.0));
    r.lo = INT64_MAX - 1;
    r.hi = INT64_MAX;
    r.columns = 10;
    EXPECT_NO_THROW(layoutAllocations(*f.tl, f.index, r));
    // An index of another timeline: nothing drawn, nothing hit.
    const AllocationIndex none;
    r.lo = 0;
    r.hi = 100;
    const AllocationLayout other = layoutAllocations(*f.tl, none, r);
    EXPECT_TRUE(other.columns.empty());
    EXPECT_FALSE(allocationAt(*f.tl, other, 10, 0.0));
    const DeviceTimeline empty;
    r.lo = 0;
    r.hi = 100;
    const AllocationLayout e = layoutAllocations(empty, none, r);
    for (const LayoutColumn& c : e.columns) EXPECT_EQ(c.total, 0u);
    EXPECT_FALSE(allocationAt(empty, e, 10, 0.0));
}

}  // namespace
}  // namespace memscope
