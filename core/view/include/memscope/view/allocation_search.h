#pragma once
// Finds allocations by address (an address inside the block, "0x..." or
// decimal) or by stack text (a substring of any frame's function or file,
// ASCII case-insensitive). Frames are matched once, then stacks, then
// intervals, so the text is never compared per allocation. Cancellable.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

struct SearchResult {
    std::vector<uint32_t> intervals;  // largest first (ties: lower index)
    size_t total_matches = 0;         // before the limit
};

SearchResult searchAllocations(const Trace& trace, const DeviceTimeline& timeline,
                               std::string_view query, size_t limit,
                               const std::atomic<bool>* cancel = nullptr);

// The allocations live when `interval` was allocated that lie nearest to it
// by address, up to `each_side` below and as many above, in address order
// (what the inspector lists beside an allocation: what a fragmented segment
// held around it). Empty for an index out of range.
std::vector<uint32_t> neighboursByAddress(const DeviceTimeline& timeline, uint32_t interval,
                                          size_t each_side = 3);

}  // namespace memscope
