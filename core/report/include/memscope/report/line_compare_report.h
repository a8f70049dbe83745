#pragma once
// Bytes by source line across runs (memscope/analysis/line_compare.h) as
// `memscope-cli compare --by-line` prints it: text, and JSON
// (docs/JSON_REFERENCE.md).

#include <string>
#include <vector>

#include "memscope/analysis/line_compare.h"

namespace memscope {

// `names` parallel to the runs (their paths).
std::string linesComparedText(const LinesCompared& lines, const std::vector<std::string>& names);
// {"runs": [{"path", "peak_bytes"}], "lines": [{"label", "function", "file",
//  "line", "module", "bytes": [...], "counts": [...]}]}, bytes and counts
// parallel to "runs".
std::string linesComparedJson(const LinesCompared& lines, const std::vector<std::string>& names);

}  // namespace memscope
