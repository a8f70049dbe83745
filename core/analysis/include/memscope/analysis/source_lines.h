#pragma once
// Bytes by source line (`summary --by-line`): the user's source lines that
// hold the most bytes at the peak. An allocation's line is its innermost
// user frame (frames.h: Python code outside installed packages), not the
// library or noise frames under it; its module is the layer that made it
// (module_attribution.h). Allocations with no user frame make one last row,
// so that the rows add up to the peak.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "memscope/model/module_attribution.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

inline constexpr std::string_view kNoUserLineLabel = "(no user frame)";

struct LineBytes {
    std::string file;  // as recorded; "" for the no-user-frame row
    uint32_t line = 0;
    std::string function;  // the frame's function
    std::string label;     // "forward  (/home/me/model.py:30)", or kNoUserLineLabel
    std::string module;    // the layer holding most of the line's bytes; "" without modules
    int64_t bytes = 0;
    uint32_t count = 0;
    // Its allocations alive at the peak (DeviceTimeline::intervals), so that
    // a view can point at them; they add up to `bytes`.
    std::vector<uint32_t> intervals;
};

struct LinesAtPeak {
    int64_t total = 0;            // the peak's live bytes (= the sum of every row)
    std::vector<LineBytes> rows;  // most bytes first, at most `top`, then the no-user-frame row
    int64_t rest_bytes = 0;       // lines beyond `top`
    size_t rest_count = 0;
};

LinesAtPeak linesAtPeak(const Trace& trace, const ModuleAttribution& modules,
                        const DeviceTimeline& timeline, size_t top);

}  // namespace memscope
