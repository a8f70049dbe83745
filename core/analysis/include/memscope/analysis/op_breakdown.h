#pragma once
// Which op made the memory: live bytes grouped by the op that allocated them
// (allocation_op.h), at the peak. `summary`'s "top ops at the peak" and its
// JSON `ops_at_peak` are this function, as module_breakdown.h is for layers.

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "memscope/model/op_attribution.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

inline constexpr std::string_view kOutsideOpsLabel = "(no op)";

struct OpShare {
    StringId name;      // "aten::addmm"; 0 = allocations outside every op
    std::string label;  // the name, or kOutsideOpsLabel
    int64_t bytes = 0;
    uint32_t count = 0;
    std::array<int64_t, kCategoryCount> by_category{};
};

struct OpBreakdown {
    OpSource source = OpSource::None;  // None: the trace says nothing of ops
    int64_t total = 0;                 // the sum of every row's bytes (= the live bytes given)
    std::vector<OpShare> rows;         // most bytes first; the "(no op)" row included
};

// The given live intervals by the op that made them.
OpBreakdown opsOf(const Trace& trace, const OpAttribution& ops, const DeviceTimeline& timeline,
                  std::span<const uint32_t> live);
// At the device's peak (the intervals live right after the peak event).
OpBreakdown opsAtPeak(const Trace& trace, const OpAttribution& ops, const DeviceTimeline& timeline);

}  // namespace memscope
