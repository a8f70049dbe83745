#pragma once
// The allocator-state map at any number of segments: segments (by address)
// grouped into rows, each row summarized per cell of bytes (how much of the
// cell is reserved, active, pending free, and its dominant category), and the
// segment or block holding an address. With 12,000 segments a view draws a
// row per group and zooms into one group on request; with few segments a row
// holds one segment or a few.

#include <cstdint>
#include <optional>
#include <vector>

#include "memscope/timeline/allocator_replay.h"

namespace memscope {

struct SegmentMapCell {
    uint64_t bytes = 0;                     // reserved bytes the cell covers
    uint64_t active = 0;                    // of them, held by allocated blocks
    uint64_t pending = 0;                   // of them, held by blocks freed but not yet reusable
    Category dominant = Category::Unknown;  // the category holding most of `active`
};

struct SegmentMapRow {
    size_t first = 0;  // segments [first, last) of the snapshot
    size_t last = 0;
    uint64_t address_lo = 0;  // the first segment's address
    uint64_t address_hi = 0;  // the end of the last segment
    uint64_t bytes = 0;       // reserved
    uint64_t active = 0;
    std::vector<SegmentMapCell> cells;  // equal shares of the row's bytes, in address order
};

// At most `rows` rows of about equal segment counts, `cells` cells each
// (both at least 1). Costs O(segments + blocks + rows * cells).
std::vector<SegmentMapRow> segmentMapRows(const AllocatorSnapshotAt& snapshot, size_t rows,
                                          size_t cells);

struct AddressHit {
    size_t segment = 0;
    std::optional<size_t> block;  // index into that segment's blocks
    size_t row = 0;               // the row of segmentMapRows(snapshot, rows, ...) holding it
};

// The segment (and block) holding `address`, and its row at `rows` rows.
std::optional<AddressHit> findAddress(const AllocatorSnapshotAt& snapshot, uint64_t address,
                                      size_t rows);

}  // namespace memscope
