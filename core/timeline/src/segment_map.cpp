#include "memscope/timeline/segment_map.h"

#include <algorithm>
#include <array>

namespace memscope {

namespace {

// Segments per row: every row but the last holds this many.
size_t perRow(size_t segments, size_t rows) {
    rows = std::max<size_t>(rows, 1);
    return std::max<size_t>(1, (segments + rows - 1) / rows);
}

// Adds [offset, offset + len) of a row's bytes to its cells via `add(cell, bytes)`.
template <typename F>
void spread(uint64_t offset, uint64_t len, long double cellBytes, size_t cells, F&& add) {
    uint64_t pos = offset;
    const uint64_t end = offset + len;
    while (pos < end) {
        const size_t c = std::min(cells - 1, size_t((long double)pos / cellBytes));
        const uint64_t cellEnd =
            c + 1 == cells ? end : std::max(pos + 1, uint64_t((long double)(c + 1) * cellBytes));
        const uint64_t stop = std::min(end, cellEnd);
        add(c, stop - pos);
        pos = stop;
    }
}

}  // namespace

std::vector<SegmentMapRow> segmentMapRows(const AllocatorSnapshotAt& s, size_t rows, size_t cells) {
    std::vector<SegmentMapRow> out;
    cells = std::max<size_t>(cells, 1);
    const size_t n = s.segments.size();
    const size_t step = perRow(n, rows);
    for (size_t first = 0; first < n; first += step) {
        SegmentMapRow row;
        row.first = first;
        row.last = std::min(n, first + step);
        row.address_lo = s.segments[first].address;
        const ReplaySegment& lastSeg = s.segments[row.last - 1];
        row.address_hi = lastSeg.address + lastSeg.size;
        for (size_t k = row.first; k < row.last; ++k) row.bytes += s.segments[k].size;
        row.cells.resize(cells);
        std::vector<std::array<uint64_t, kCategoryCount>> byCategory(cells);
        const long double cellBytes =
            std::max<long double>(1, (long double)row.bytes / (long double)cells);
        uint64_t offset = 0;  // of the segment within the row
        for (size_t k = row.first; k < row.last; ++k) {
            const ReplaySegment& seg = s.segments[k];
            spread(offset, seg.size, cellBytes, cells,
                   [&](size_t c, uint64_t b) { row.cells[c].bytes += b; });
            for (const ReplayBlock& b : seg.blocks) {
                // Blocks lie inside their segment; a hostile one is clipped to it.
                if (b.address < seg.address || b.address - seg.address >= seg.size) continue;
                const uint64_t at = b.address - seg.address;
                const uint64_t len = std::min(b.size, seg.size - at);
                const bool pending = b.state == BlockState::ActivePendingFree;
                spread(offset + at, len, cellBytes, cells, [&](size_t c, uint64_t bytes) {
                    (pending ? row.cells[c].pending : row.cells[c].active) += bytes;
                    byCategory[c][std::min<size_t>(size_t(index(b.category)),
                                                   kCategoryCount - 1)] += bytes;
                });
                if (!pending) row.active += len;
            }
            offset += seg.size;
        }
        // Overlapping blocks (a damaged trace) cannot fill a cell past full.
        row.active = std::min(row.active, row.bytes);
        for (size_t c = 0; c < cells; ++c) {
            SegmentMapCell& cell = row.cells[c];
            cell.active = std::min(cell.active, cell.bytes);
            cell.pending = std::min(cell.pending, cell.bytes - cell.active);
            const auto& counts = byCategory[c];
            const auto most = std::max_element(counts.begin(), counts.end());
            if (*most > 0) row.cells[c].dominant = kAllCategories[size_t(most - counts.begin())];
        }
        out.push_back(std::move(row));
    }
    return out;
}

std::optional<AddressHit> findAddress(const AllocatorSnapshotAt& s, uint64_t address, size_t rows) {
    // Segments are by address: the last one starting at or before `address`.
    const auto it =
        std::upper_bound(s.segments.begin(), s.segments.end(), address,
                         [](uint64_t a, const ReplaySegment& seg) { return a < seg.address; });
    if (it == s.segments.begin()) return std::nullopt;
    const ReplaySegment& seg = *(it - 1);
    if (address - seg.address >= seg.size) return std::nullopt;
    AddressHit hit;
    hit.segment = size_t(it - 1 - s.segments.begin());
    hit.row = hit.segment / perRow(s.segments.size(), rows);
    for (size_t b = 0; b < seg.blocks.size(); ++b)
        if (address >= seg.blocks[b].address &&
            address - seg.blocks[b].address < seg.blocks[b].size)
            hit.block = b;
    return hit;
}

}  // namespace memscope
