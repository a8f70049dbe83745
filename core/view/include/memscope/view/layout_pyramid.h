#pragma once
// The by-allocation layout of a whole device, computed once at load and read
// back at any zoom that is not finer than it: a multi-resolution index.
//
// The finest level cuts the device's run-x range into a fixed number of
// columns (a power of two, as many as a load-time work budget allows) and
// stores each column's layout: its sample (the moment of its highest live
// total), its total and its segments, bands at least `min_band_bytes` tall of
// their own. Each coarser level keeps, per aligned pair of the level below,
// the column with the higher total, so a range of finest columns gives up its
// highest column in O(log N) looks.
//
// A frame then costs O(pixels x log N) plus copying the segments it draws,
// whatever the number of allocations: each pixel column shows the stored
// column with the highest total among those it overlaps. The peak stays
// exact (the column holding the peak moment has it as its sample, and no
// column is higher), and the hit test reads the same layout it draws.
//
// A request finer than the finest level, or asking for thinner own bands
// than stored, is not served here (layoutFromPyramid returns nothing) and
// falls back to the sweep of layoutAllocations.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "memscope/view/allocation_layout.h"

namespace memscope {

struct PyramidOptions {
    // Finest columns: the largest power of two with columns x peak-live
    // allocations <= work_budget, clamped to [min_columns, max_columns].
    size_t work_budget = 64'000'000;
    size_t min_columns = 1024;
    size_t max_columns = 8192;
    // Own bands from this fraction of the peak up: about a pixel of a plot
    // 768 rows tall that shows the peak. Views asking for bands down to 1.5
    // times thinner are served (the difference is under a pixel).
    uint64_t rows = 768;
    // Threads building the finest level (0 = the machine's hardware threads).
    unsigned threads = 0;
    const std::atomic<bool>* cancel = nullptr;
};

struct LayoutPyramid {
    int64_t lo = 0;  // run-x covered by the finest level, [lo, hi)
    int64_t hi = 0;
    uint64_t min_band_bytes = 1;
    // The finest level: columns over [lo, hi); they and the tail index
    // `segments`, which the layouts read from here share.
    std::vector<LayoutColumn> columns;
    std::shared_ptr<const std::vector<LayoutSegment>> segments;
    // The stack for every x >= hi (what is live at the device's last event).
    LayoutColumn tail;
    // levels[k][j]: the finest column with the highest total among
    // [j * 2^(k+1), (j + 1) * 2^(k+1)).
    std::vector<std::vector<uint32_t>> levels;
    double build_seconds = 0;

    bool empty() const { return columns.empty() || !segments; }
    size_t memoryBytes() const;
};

// The pyramid of one device; empty when the device has no allocation or the
// build was cancelled.
LayoutPyramid buildLayoutPyramid(const DeviceTimeline& timeline, const AllocationIndex& index,
                                 const PyramidOptions& options = {});

// The layout of `request` read from the pyramid; nothing when the request is
// finer than the pyramid (in x or in band height) or another timeline's. A
// finest column may span up to `max_column_px` pixel columns: as coarse as
// the sweep would have drawn the range within its work budget.
std::optional<AllocationLayout> layoutFromPyramid(const DeviceTimeline& timeline,
                                                  const LayoutPyramid& pyramid,
                                                  const LayoutRequest& request,
                                                  double max_column_px = 1.0);

// The most segments one column of `timeline` can hold with own bands at
// least `min_band_bytes` tall: the room the pyramid projects for its
// segments as it builds never goes past that many per column.
size_t maxSegmentsPerPyramidColumn(const DeviceTimeline& timeline, uint64_t min_band_bytes);

// Of the finest columns [first, last], the one with the highest total (the
// first of equals).
uint32_t highestColumn(const LayoutPyramid& pyramid, uint32_t first, uint32_t last);

}  // namespace memscope
