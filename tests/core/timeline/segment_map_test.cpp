// The allocator-state map at any number of segments: rows of segments with
// every reserved, active and pending byte in its cell, and the address search.
#include "memscope/timeline/segment_map.h"

#include <gtest/gtest.h>

namespace memscope {
namespace {

// `n` segments of 2 MiB, 1 MiB apart; each holds an active block of 512 KiB
// at its start and, in every third, a pending-free block of 256 KiB after it.
AllocatorSnapshotAt manySegments(size_t n) {
    AllocatorSnapshotAt s;
    for (size_t i = 0; i < n; ++i) {
        ReplaySegment seg;
        seg.address = 0x7f0000000000 + i * (3ull << 20);
        seg.size = 2ull << 20;
        seg.blocks.push_back({seg.address,
                              512 << 10,
                              BlockState::ActiveAllocated,
                              {},
                              i % 2 ? Category::Activation : Category::Parameter});
        if (i % 3 == 0)
            seg.blocks.push_back({seg.address + (512 << 10),
                                  256 << 10,
                                  BlockState::ActivePendingFree,
                                  {},
                                  Category::Temporary});
        s.reserved_bytes += seg.size;
        s.segments.push_back(std::move(seg));
    }
    return s;
}

TEST(SegmentMap, TwelveThousandSegmentsInReadableRows) {
    const AllocatorSnapshotAt s = manySegments(12000);
    const auto rows = segmentMapRows(s, 40, 300);
    ASSERT_EQ(rows.size(), 40u);
    uint64_t reserved = 0, active = 0, pending = 0;
    size_t next = 0;
    for (const SegmentMapRow& r : rows) {
        EXPECT_EQ(r.first, next);  // every segment in exactly one row, in address order
        next = r.last;
        EXPECT_EQ(r.address_lo, s.segments[r.first].address);
        EXPECT_EQ(r.address_hi, s.segments[r.last - 1].address + s.segments[r.last - 1].size);
        ASSERT_EQ(r.cells.size(), 300u);
        uint64_t rowBytes = 0;
        for (const SegmentMapCell& c : r.cells) {
            EXPECT_LE(c.active + c.pending, c.bytes);
            rowBytes += c.bytes;
            active += c.active;
            pending += c.pending;
        }
        EXPECT_EQ(rowBytes, r.bytes);
        reserved += r.bytes;
    }
    EXPECT_EQ(next, s.segments.size());
    EXPECT_EQ(reserved, s.reserved_bytes);
    EXPECT_EQ(active, 12000ull * (512 << 10));
    EXPECT_EQ(pending, 4000ull * (256 << 10));
    // A quarter of each segment is active: the first cells show it, by category.
    EXPECT_GT(rows[0].cells[0].active, 0u);
    EXPECT_EQ(rows[0].cells[0].dominant, Category::Parameter);
}

TEST(SegmentMap, FewSegmentsGetARowEach) {
    const AllocatorSnapshotAt s = manySegments(3);
    const auto rows = segmentMapRows(s, 40, 100);
    ASSERT_EQ(rows.size(), 3u);
    for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].last - rows[i].first, 1u);
    EXPECT_TRUE(segmentMapRows(AllocatorSnapshotAt{}, 10, 10).empty());
    EXPECT_EQ(segmentMapRows(s, 0, 0).size(), 1u);  // at least one row and one cell
}

TEST(SegmentMap, FindsTheSegmentBlockAndRowOfAnAddress) {
    const AllocatorSnapshotAt s = manySegments(12000);
    const uint64_t inBlock = s.segments[7777].address + 100;
    const auto hit = findAddress(s, inBlock, 40);
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->segment, 7777u);
    EXPECT_EQ(hit->block, std::optional<size_t>(0));
    const auto rows = segmentMapRows(s, 40, 10);
    EXPECT_GE(hit->segment, rows[hit->row].first);
    EXPECT_LT(hit->segment, rows[hit->row].last);
    // Inside the segment but in no block; between segments; before all.
    const auto free = findAddress(s, s.segments[5].address + (1ull << 20) + 5, 40);
    ASSERT_TRUE(free);
    EXPECT_FALSE(free->block);
    EXPECT_FALSE(findAddress(s, s.segments[5].address + (2ull << 20) + 5, 40));
    EXPECT_FALSE(findAddress(s, 0x1000, 40));
    EXPECT_FALSE(findAddress(AllocatorSnapshotAt{}, 0x1000, 40));
}

TEST(SegmentMap, HostileBlocksAreClipped) {
    AllocatorSnapshotAt s = manySegments(2);
    s.segments[0].blocks.push_back(
        {s.segments[0].address + 10, UINT64_MAX, BlockState::ActiveAllocated, {}, Category::Input});
    s.segments[1].blocks.push_back({0, 100, BlockState::ActiveAllocated, {}, Category::Input});
    const auto rows = segmentMapRows(s, 1, 50);
    for (const SegmentMapCell& c : rows[0].cells) EXPECT_LE(c.active + c.pending, c.bytes);
}

}  // namespace
}  // namespace memscope
