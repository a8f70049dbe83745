#pragma once
// Reads either memory-timeline JSON shape with a SAX handler into plain rows;
// which shape it was is known only once nested size lists appear.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "json_input.h"
#include "memscope/open/plugin.h"

namespace memscope::memory_timeline {

struct TimelineRows {
    // Raw export: [t_ns, action, bytes (signed), category] per row.
    std::vector<std::array<int64_t, 4>> raw;
    // Coalesced export: times in µs and, per time, sizes[1 + category].
    std::vector<int64_t> times;
    std::vector<std::vector<int64_t>> sizes;
    bool coalesced = false;
};

Result<TimelineRows> readRows(json_input::Source& src, const TaskContext& ctx);

}  // namespace memscope::memory_timeline
