#pragma once
// Why a peak is as high as it is: the allocation sites that hold the most
// bytes then (by their user frame, see frames.h), and, in a comparison, what
// each category changed against the baseline.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "memscope/analysis/allocation_op.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

struct SiteAtPeak {
    std::optional<FrameId> site;  // nullopt: allocations without a stack (or only noise frames)
    std::string label;            // "softmax  (model.py:419)", or "(no stack)"
    int64_t bytes = 0;
    uint32_t count = 0;
    Category category = Category::Unknown;  // the category holding most of the bytes
    uint32_t largest = 0;  // the site's largest live interval (index into intervals)
    // The op holding most of the site's bytes (allocation_op.h); none in a
    // trace without ops, or where none of its allocations has one.
    std::optional<AllocationOp> op{};
};

// The sites of the given live intervals, most bytes first, at most `top`.
std::vector<SiteAtPeak> sitesOf(const Trace& trace, const DeviceTimeline& timeline,
                                std::span<const uint32_t> live, size_t top);

// At the device's peak (exact: the intervals live right after the peak event).
std::vector<SiteAtPeak> sitesAtPeak(const Trace& trace, const DeviceTimeline& timeline, size_t top);

// At time x (the intervals live at x; for a phase's or a step's peak).
std::vector<SiteAtPeak> sitesAt(const Trace& trace, const DeviceTimeline& timeline, int64_t x,
                                size_t top);

// "−3.60 GiB activation, +200 MiB temporary (recompute)": the categories
// whose bytes at the peak changed, largest change first, at most `top`; "no
// change" if none. With `recomputed` (the run's bytes at its peak born inside
// recompute phases, by category), a rise made mostly of recomputed bytes says
// "(recompute)".
std::string describeChange(const std::array<int64_t, kCategoryCount>& delta_by_category,
                           size_t top = 3,
                           const std::array<int64_t, kCategoryCount>* recomputed = nullptr);

// Bytes live at x, by category, that were allocated inside a recompute phase
// (recorded, or inferred where backward replays forward).
std::array<int64_t, kCategoryCount> recomputedBytesAt(const Trace& trace,
                                                      const DeviceTimeline& timeline, int64_t x);

}  // namespace memscope
