#pragma once
// Bytes by source line across runs (the GUI compare view's "lines" tab):
// each run's linesAtPeak rows matched by function, file name and line, so
// that a line has one row with every run's bytes and count side by side.
// The file is compared by its basename, as allocation_diff.h matches sites,
// so that two checkouts of one script match. A run's lines beyond its `top`
// make an "(other lines)" row (its count unknown: 0), so that every run's
// column adds up to its peak.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memscope/analysis/source_lines.h"

namespace memscope {

inline constexpr std::string_view kOtherLinesLabel = "(other lines)";
// The lines per run (linesAtPeak's `top`) that the compare view's lines tab
// and `compare --by-line` keep before summing the rest: one number for both.
inline constexpr size_t kCompareLinesTop = 100;

struct LineAcrossRuns {
    std::string label;     // "forward  (model.py:30)", kNoUserLineLabel or kOtherLinesLabel
    std::string function;  // "" for the last two
    std::string file;      // the basename
    uint32_t line = 0;
    // Parallel to the runs: bytes and count at each run's peak (0 where the
    // run lacks the line), and the allocations (DeviceTimeline::intervals).
    std::vector<int64_t> bytes;
    std::vector<uint32_t> counts;
    std::vector<std::vector<uint32_t>> intervals;
    // The module holding the most bytes of the line in the first run that has it.
    std::string module;
};

struct LinesCompared {
    std::vector<int64_t> totals;  // each run's peak (LinesAtPeak::total)
    // Most bytes in any run first, then "(other lines)", then "(no user frame)".
    std::vector<LineAcrossRuns> rows;
};

LinesCompared compareLines(const std::vector<const LinesAtPeak*>& runs);

}  // namespace memscope
