#pragma once
// Finds allocations by address (an address inside the block, "0x..." or
// decimal) or by stack text (a substring of any frame's function or file,
// case-insensitive). Runs off the GUI thread; frames are matched once, then
// stacks, then intervals, so the text is never compared per allocation.

#include <QString>
#include <atomic>
#include <vector>

#include "memscope/timeline.h"
#include "memscope/trace.h"

namespace memscope::gui {

struct SearchResult {
    std::vector<uint32_t> intervals;  // largest first
    size_t total_matches = 0;         // before the limit
};

SearchResult searchAllocations(const Trace& trace, const DeviceTimeline& tl, const QString& query, size_t limit,
                               const std::atomic<bool>* cancel = nullptr);

}  // namespace memscope::gui
