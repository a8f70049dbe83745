#pragma once
// The by-allocation picture of one visible range, as pure geometry: every live
// allocation is a band, stacked in allocation order (memory_viz's Active
// Memory Timeline), per pixel column.
//
// Level of detail: the range is cut into columns (one per pixel or a few), and
// each column shows the stack at one sample time, the moment of the column's
// highest live total, so the outline is the exact envelope. Inside a column an
// allocation at least `min_band_bytes` tall (about a pixel) is a segment of its
// own; runs of thinner ones merge into per-site aggregates. A column holds at
// most about two segments per pixel row, a column whose live set did not
// change reuses the previous one's, and the allocations that began within a
// column and outlive its sample are found through IntervalEnds without looking
// at the short-lived rest, so the cost of a frame is about the columns times
// the allocations live in them, never the whole trace.
//
// A view no finer than the device's layout pyramid (layout_pyramid.h, built
// at load when the index is built WithPyramid) is read from it instead, in
// time bounded by the pixels whatever the allocations.
//
// Drawing and the hit test share this layout (allocationAt below), so what is
// under the mouse is what is drawn there.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "memscope/timeline/interval_ends.h"
#include "memscope/timeline/timeline.h"
#include "memscope/view/allocation_sites.h"

namespace memscope {

struct LayoutPyramid;

// What the layout needs of a device beyond its timeline, built once when a
// trace is opened.
struct AllocationIndex {
    AllocationSites sites;
    IntervalEnds ends;
    // Each interval's size and start, packed: a layout reads them by the
    // hundred thousand, a whole interval each would cost a cache line each.
    std::vector<uint64_t> sizes;
    std::vector<int64_t> starts;
    // Every kStartBlock-th start: finds where a column's starts end with
    // few cache misses.
    static constexpr size_t kStartBlock = 64;
    std::vector<int64_t> start_blocks;
    // The whole device's layout at a fixed resolution (layout_pyramid.h),
    // for the views that are not finer than it; null: every layout sweeps.
    std::shared_ptr<const LayoutPyramid> pyramid;

    enum class Detail { SweepOnly, WithPyramid };
    // With `cancel` set during the pyramid's build, the index has no pyramid.
    static AllocationIndex build(const Trace& trace, const DeviceTimeline& timeline,
                                 Detail detail = Detail::SweepOnly,
                                 const std::atomic<bool>* cancel = nullptr);
    size_t memoryBytes() const;
};

struct LayoutRequest {
    int64_t lo = 0;  // run-x range [lo, hi)
    int64_t hi = 1;
    size_t columns = 1000;        // at most; fewer when the range has fewer x values
    uint64_t min_band_bytes = 1;  // an allocation this tall or taller is its own segment
    // Bounds the work of one layout: with many allocations live at once,
    // columns get wider (fewer of them) so that columns x live stays near it.
    // 3 million keeps the worst frame of a 1 GB snapshot (9,600 allocations
    // live at its peak) under 16 ms on 2 cores; 5 million did not.
    size_t max_work = 3'000'000;
    // Likewise for the allocations that start in the range: with heavy churn
    // a column visits about all that began in it and live at its sample (a
    // 10-million-event trace zoomed out: 3 million).
    size_t max_starts = 1'000'000;
    // Columns on a grid of whole multiples of their width (a width rounded up
    // to 4 significant bits) rather than an even cut of [lo, hi): a pan keeps
    // the grid, so the next layout can take over the columns both ranges
    // hold (layoutAllocations' `previous`). Off: exactly `columns` even
    // columns, as the layout pyramid's tasks need them.
    bool grid = false;
};

// The band height a view asks for when a pixel row holds `bytes_per_row`:
// that rounded up to whole bytes, then down to 3 significant bits: a band is
// at least 4/5 of a row, and a scale that moves a few percent keeps it.
uint64_t bandBytesForRow(double bytes_per_row);

// A column's segments stack from 0 without gaps, bottom first, so a segment
// keeps only its top: its bottom is the top of the one below it
// (segmentBottom). At 24 bytes rather than 32, the layout pyramid of the 1 GB
// churn snapshot (3.3 million segments) holds 26 MB less, every byte of it
// written at load.
struct LayoutSegment {
    uint64_t top = 0;                          // bytes; the segment is [its bottom, top)
    uint32_t site = AllocationSites::kNoSite;  // an aggregate: the site of its largest member
    uint32_t count = 0;                        // allocations in it
    int64_t interval = -1;                     // its allocation; -1 = an aggregate
};
static_assert(sizeof(LayoutSegment) == 24, "LayoutSegment layout changed: check memory budgets");

struct LayoutColumn {
    int64_t x0 = 0;  // run-x [x0, x1)
    int64_t x1 = 0;
    int64_t sample = 0;  // the time whose stack the column shows
    uint32_t first = 0;  // segments [first, last), bottom first
    uint32_t last = 0;
    uint64_t total = 0;  // live bytes at the sample (the top of the last segment)
};

struct AllocationLayout {
    std::vector<LayoutColumn> columns;  // ascending, contiguous
    // The segments the columns index: the layout's own (a sweep), or a
    // pyramid's read in place (shared_segments set), so a frame read from
    // the pyramid copies no segment.
    std::vector<LayoutSegment> segments;
    std::shared_ptr<const std::vector<LayoutSegment>> shared_segments;
    std::span<const LayoutSegment> drawnSegments() const {
        return shared_segments ? std::span<const LayoutSegment>(*shared_segments)
                               : std::span<const LayoutSegment>(segments);
    }
    uint64_t max_total = 0;
    size_t column_width = 1;  // request columns per layout column (>1: coarsened)
    size_t work = 0;          // allocations visited: what a frame cost
    // A sweep on a grid (LayoutRequest::grid): run-x per column, the band
    // height and the index it was built from (compared, never read
    // through), which a later layout checks before it takes columns over;
    // 0 = not on a grid.
    int64_t grid_step = 0;
    uint64_t min_band_bytes = 0;
    const AllocationIndex* source = nullptr;
    size_t source_intervals = 0;
    size_t reused_columns = 0;  // taken over from `previous`, not swept
};

// Memory that one swept layout hands to the next. A view that lays out frame
// after frame keeps one and gives it each layout it stops drawing, so the
// segments of a frame go into pages that an earlier frame wrote. Fresh pages
// cost their first touch: on a VM whose balloon hands idle memory back to the
// host, 0.3 to 0.9 GB/s, so a zoomed-in pan of the 1 GB churn snapshot spent
// 10 of its 15 ms writing 9 MB of segments into new memory.
class LayoutBuffers {
public:
    // Room for a layout's own segments: the largest held, or none.
    std::vector<LayoutSegment> take();
    // Keeps `layout`'s own segments as room, and at most kRooms rooms, the
    // largest. A pan keeps the layout drawn while the next is built, so a
    // view sweeping frame after frame uses two buffers; two rooms keep both
    // across a frame read from the pyramid, which has no segments of its own.
    void recycle(AllocationLayout&& layout);
    // A sweep's second piece, written on another thread and joined after.
    std::vector<LayoutSegment>& piece() { return piece_; }
    size_t memoryBytes() const;

private:
    static constexpr size_t kRooms = 2;
    std::vector<std::vector<LayoutSegment>> rooms_;
    std::vector<LayoutSegment> piece_;
};

// With `previous` a grid layout of the same timeline, index, scale and band
// height (the last frame's, during a pan), the whole columns both ranges hold
// are copied from it and only the rest is swept: the same layout as without
// it, at the cost of the columns that came into view. With `buffers`, a
// sweep writes into their room (and leaves them what it no longer needs):
// the same layout as without them.
AllocationLayout layoutAllocations(const DeviceTimeline& timeline, const AllocationIndex& index,
                                   const LayoutRequest& request,
                                   const AllocationLayout* previous = nullptr,
                                   LayoutBuffers* buffers = nullptr);

// The sites that cover the most of the picture (bytes times run-x), largest
// first, at most `count`: what a legend names.
std::vector<uint32_t> mostDrawnSites(const AllocationLayout& layout, size_t count);

// The column holding run-x `x`, the segment at height `bytes` in it.
const LayoutColumn* columnAt(const AllocationLayout& layout, int64_t x);
const LayoutSegment* segmentAt(const AllocationLayout& layout, int64_t x, double bytes);

// The bottom of `segments[i]`, the segment at `i` of the column whose
// segments begin at `first`.
inline uint64_t segmentBottom(std::span<const LayoutSegment> segments, uint32_t first, uint32_t i) {
    return i > first ? segments[i - 1].top : 0;
}

// The allocation drawn at (x, bytes): a segment's own allocation, or inside an
// aggregate the allocation the column's stack holds at that height.
std::optional<uint32_t> allocationAt(const DeviceTimeline& timeline, const AllocationLayout& layout,
                                     int64_t x, double bytes);

}  // namespace memscope
