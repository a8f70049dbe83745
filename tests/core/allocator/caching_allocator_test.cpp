// The caching-allocator model, rule by rule, on request sequences whose answer
// follows from PyTorch's CUDACachingAllocator.cpp.
#include "memscope/allocator/caching_allocator.h"

#include <gtest/gtest.h>

namespace memscope {
namespace {

constexpr uint64_t MiB = 1024 * 1024;

AllocatorSettings conf(const char* text) {
    auto s = applyAllocatorConf({}, text);
    EXPECT_TRUE(s.ok()) << s.message();
    return *s;
}

TEST(CachingAllocatorModel, SmallRequestsShareTwoMiBSegments) {
    CachingAllocatorModel m({});
    const auto a = m.allocate(1000, 0);
    ASSERT_TRUE(a);
    EXPECT_EQ(m.blockSize(*a), 1024u);  // rounded to 512 B
    EXPECT_EQ(m.reservedBytes(), 2 * MiB);
    for (int i = 0; i < 150; ++i) ASSERT_TRUE(m.allocate(10000, 0));
    EXPECT_EQ(m.segmentAllocs(), 1u);  // 150 x 10 KB (in 10 KiB blocks) fit the one segment
    ASSERT_TRUE(m.allocate(MiB, 0));   // 1 MiB is still small, but the 547 KiB left
    EXPECT_EQ(m.segmentAllocs(), 2u);  // cannot hold it: a second 2 MiB segment
}

TEST(CachingAllocatorModel, LargeRequestsGetTwentyMiBOrRoundedSegments) {
    CachingAllocatorModel m({});
    ASSERT_TRUE(m.allocate(MiB + 1, 0));
    EXPECT_EQ(m.reservedBytes(), 20 * MiB);  // below 10 MiB: a 20 MiB segment
    ASSERT_TRUE(m.allocate(8 * MiB, 0));     // the rest of it
    EXPECT_EQ(m.segmentAllocs(), 1u);
    ASSERT_TRUE(m.allocate(11 * MiB + 1, 0));
    EXPECT_EQ(m.reservedBytes(), 20 * MiB + 12 * MiB);  // 10 MiB and up: rounded to 2 MiB
}

TEST(CachingAllocatorModel, PoolsArePerStream) {
    CachingAllocatorModel m({});
    const auto a = m.allocate(4 * MiB, 0);
    m.free(*a);
    ASSERT_TRUE(m.allocate(4 * MiB, 7));  // stream 7 cannot use stream 0's free block
    EXPECT_EQ(m.segmentAllocs(), 2u);
    ASSERT_TRUE(m.allocate(4 * MiB, 0));  // stream 0 can
    EXPECT_EQ(m.segmentAllocs(), 2u);
}

TEST(CachingAllocatorModel, BestFitTakesTheSmallestFreeBlockThatFits) {
    CachingAllocatorModel m({});
    const auto big = m.allocate(40 * MiB, 0);    // its own 40 MiB segment
    const auto small = m.allocate(12 * MiB, 0);  // its own 12 MiB segment
    const uint64_t small_at = m.blockAddress(*small);
    m.free(*big);
    m.free(*small);
    const auto c = m.allocate(11 * MiB, 0);
    EXPECT_EQ(m.blockAddress(*c), small_at);  // 12 MiB, not 40 MiB
    EXPECT_EQ(m.segmentAllocs(), 2u);
}

TEST(CachingAllocatorModel, SplitsOnlyWhenTheRestIsWorthKeeping) {
    CachingAllocatorModel m({});
    // Large pool: a rest of 1 MiB or less stays with the block.
    const auto a = m.allocate(19 * MiB + MiB / 2, 0);
    EXPECT_EQ(m.blockSize(*a), 20 * MiB);
    // A rest above 1 MiB is split off and serves the next request.
    const auto b = m.allocate(8 * MiB, 0);
    EXPECT_EQ(m.blockSize(*b), 8 * MiB);
    ASSERT_TRUE(m.allocate(12 * MiB, 0));  // the 12 MiB rest of b's segment
    EXPECT_EQ(m.segmentAllocs(), 2u);
    // Small pool: any rest of 512 B or more is split.
    ASSERT_TRUE(m.allocate(MiB, 1));
    EXPECT_EQ(m.segmentAllocs(), 3u);
    const auto s = m.allocate(MiB - 512, 1);
    EXPECT_EQ(m.blockSize(*s), MiB - 512);
    ASSERT_TRUE(m.allocate(512, 1));  // the last 512 B
    EXPECT_EQ(m.segmentAllocs(), 3u);
    EXPECT_EQ(m.largestFreeBlock(), 0u);
}

TEST(CachingAllocatorModel, FreedBlocksMergeWithFreeNeighbours) {
    CachingAllocatorModel m({});
    const auto a = m.allocate(6 * MiB, 0);
    const auto b = m.allocate(6 * MiB, 0);
    const auto c = m.allocate(6 * MiB, 0);  // 18 of the 20 MiB segment, 2 MiB left free
    EXPECT_EQ(m.largestFreeBlock(), 2 * MiB);
    m.free(*a);
    m.free(*c);
    EXPECT_EQ(m.largestFreeBlock(), 8 * MiB);  // c merged with the 2 MiB after it
    m.free(*b);
    EXPECT_EQ(m.largestFreeBlock(), 20 * MiB);  // all one block again
    ASSERT_TRUE(m.allocate(19 * MiB, 0));
    EXPECT_EQ(m.segmentAllocs(), 1u);
}

TEST(CachingAllocatorModel, MaxSplitSizeKeepsOversizeBlocksWhole) {
    CachingAllocatorModel m(conf("max_split_size_mb:64"));
    const auto big = m.allocate(100 * MiB, 0);
    m.free(*big);
    // A request below the limit never takes an oversize block...
    ASSERT_TRUE(m.allocate(30 * MiB, 0));
    EXPECT_EQ(m.segmentAllocs(), 2u);
    // ... an oversize request takes one at most 20 MiB larger, and unsplit.
    const auto b = m.allocate(90 * MiB, 0);
    EXPECT_EQ(m.segmentAllocs(), 2u);
    EXPECT_EQ(m.blockSize(*b), 100 * MiB);
    m.free(*b);
    ASSERT_TRUE(m.allocate(70 * MiB, 0));  // 100 >= 70 + 20: a new segment
    EXPECT_EQ(m.segmentAllocs(), 3u);

    // Without the setting the 100 MiB block is split for the 30 MiB request.
    CachingAllocatorModel d({});
    d.free(*d.allocate(100 * MiB, 0));
    ASSERT_TRUE(d.allocate(30 * MiB, 0));
    EXPECT_EQ(d.segmentAllocs(), 1u);
}

TEST(CachingAllocatorModel, FailedCudaMallocFreesCachedSegmentsAndRetries) {
    CachingAllocatorModel m({}, 64 * MiB);
    const auto a = m.allocate(40 * MiB, 0);
    m.free(*a);  // cached, a whole segment
    // 50 MiB does not fit the cached 40 MiB, and 40 + 50 > 64: the cache is
    // released and the request retried.
    const auto b = m.allocate(50 * MiB, 0);
    ASSERT_TRUE(b);
    EXPECT_EQ(m.segmentFrees(), 1u);
    EXPECT_EQ(m.reservedBytes(), 50 * MiB);
    // Nothing cached to release: the request fails and nothing changes.
    EXPECT_FALSE(m.allocate(20 * MiB, 0));
    EXPECT_TRUE(m.failedLast());
    EXPECT_EQ(m.reservedBytes(), 50 * MiB);
}

TEST(CachingAllocatorModel, MaxSplitReleasesOversizeBlocksFirst) {
    CachingAllocatorModel m(conf("max_split_size_mb:32"), 120 * MiB);
    const auto a = m.allocate(60 * MiB, 0);
    const auto keep = m.allocate(2 * MiB, 0);  // a live 20 MiB segment
    m.free(*a);
    ASSERT_TRUE(m.allocate(90 * MiB, 0));  // 60 freed (oversize), then 90 made
    EXPECT_EQ(m.segmentFrees(), 1u);
    EXPECT_EQ(m.reservedBytes(), 20 * MiB + 90 * MiB);
    (void)keep;
}

TEST(CachingAllocatorModel, GarbageCollectionFreesOldCachedBlocksUnderACap) {
    CachingAllocatorModel m(conf("garbage_collection_threshold:0.5"), 100 * MiB);
    const auto a = m.allocate(30 * MiB, 0);
    const auto b = m.allocate(30 * MiB, 0);
    m.free(*a);
    m.free(*b);
    // 60 MiB reserved > 50: before the next segment, cached blocks are freed.
    ASSERT_TRUE(m.allocate(35 * MiB, 0));
    EXPECT_EQ(m.segmentFrees(), 2u);  // both as old as the average
    EXPECT_EQ(m.reservedBytes(), 36 * MiB);

    CachingAllocatorModel no_gc({}, 100 * MiB);
    const auto c = no_gc.allocate(30 * MiB, 0);
    const auto d = no_gc.allocate(30 * MiB, 0);
    no_gc.free(*c);
    no_gc.free(*d);
    ASSERT_TRUE(no_gc.allocate(35 * MiB, 0));  // 35 rounds to a 36 MiB segment
    EXPECT_EQ(no_gc.segmentFrees(), 0u);
    EXPECT_EQ(no_gc.reservedBytes(), 96 * MiB);
}

TEST(CachingAllocatorModel, ExpandableSegmentsMapPagesAndUnmapFreeOnes) {
    CachingAllocatorModel m(conf("expandable_segments:True"));
    const auto a = m.allocate(30 * MiB, 0);
    EXPECT_EQ(m.reservedBytes(), 40 * MiB);  // two 20 MiB pages
    EXPECT_EQ(m.segmentMaps(), 1u);
    EXPECT_EQ(m.segmentAllocs(), 0u);
    const auto b = m.allocate(30 * MiB, 0);  // 10 MiB mapped free, 20 more mapped
    EXPECT_EQ(m.reservedBytes(), 60 * MiB);
    EXPECT_EQ(m.blockAddress(*b), m.blockAddress(*a) + 30 * MiB);  // one growing range
    m.free(*b);
    m.emptyCache();  // pages wholly free: [40, 60) MiB of the range
    EXPECT_EQ(m.reservedBytes(), 40 * MiB);
    EXPECT_EQ(m.segmentUnmaps(), 1u);
    ASSERT_TRUE(m.allocate(25 * MiB, 0));  // the free 10 MiB and a page mapped again
    EXPECT_EQ(m.reservedBytes(), 60 * MiB);
    const auto views = m.segments();
    ASSERT_EQ(views.size(), 1u);
    EXPECT_TRUE(views[0].expandable);
    EXPECT_EQ(views[0].size, 60 * MiB);
}

TEST(CachingAllocatorModel, ExpandableSegmentsWasteLessThanRoundedSegments) {
    // Twelve 11 MiB tensors: 12 MiB segments each (144 MiB), or 7 pages of 20
    // MiB in one range (140 MiB); the device allows 141 MiB.
    auto fits = [](const char* settings) {
        CachingAllocatorModel m(conf(settings), 141 * MiB);
        for (int i = 0; i < 12; ++i)
            if (!m.allocate(11 * MiB, 0)) return false;
        return true;
    };
    EXPECT_FALSE(fits(""));
    EXPECT_TRUE(fits("expandable_segments:True"));
}

TEST(CachingAllocatorModel, HolesSmallerThanAPageStayMapped) {
    // 9 MiB blocks, every other one freed: neither setting can unmap a 9 MiB
    // hole (pages are 20 MiB), so a 40 MiB request fails under 130 MiB both ways.
    auto fits = [](const char* settings) {
        CachingAllocatorModel m(conf(settings), 130 * MiB);
        std::vector<CachingAllocatorModel::BlockId> ids;
        for (int i = 0; i < 12; ++i) ids.push_back(*m.allocate(9 * MiB, 0));
        for (int i = 0; i < 12; i += 2) m.free(ids[size_t(i)]);
        return m.allocate(40 * MiB, 0).has_value();
    };
    EXPECT_FALSE(fits(""));
    EXPECT_FALSE(fits("expandable_segments:True"));
}

TEST(CachingAllocatorModel, SeededWarmCacheServesFromItsGaps) {
    CachingAllocatorModel m({});
    const SeedBlock live[] = {{0x1000000 + 4 * MiB, 6 * MiB, 1}};
    const auto ids = m.seedSegment(0x1000000, 20 * MiB, 0, false, false, live);
    ASSERT_TRUE(ids[0]);
    EXPECT_EQ(m.reservedBytes(), 20 * MiB);
    EXPECT_EQ(m.allocatedBytes(), 6 * MiB);
    const auto a = m.allocate(4 * MiB, 0);  // the 4 MiB gap before the live block
    EXPECT_EQ(m.blockAddress(*a), 0x1000000u);
    EXPECT_EQ(m.segmentAllocs(), 0u);
    // Overlapping or outside blocks are dropped, not trusted.
    const SeedBlock bad[] = {
        {0x9000000, 4 * MiB, 2}, {0x9000000 + MiB, 4 * MiB, 3}, {0x9000000 + 30 * MiB, MiB, 4}};
    const auto kept = m.seedSegment(0x9000000, 20 * MiB, 0, false, false, bad);
    EXPECT_TRUE(kept[0]);
    EXPECT_FALSE(kept[1]);
    EXPECT_FALSE(kept[2]);
}

}  // namespace
}  // namespace memscope
