#pragma once
// The allocation-set diff (memscope/analysis/allocation_diff.h) as
// `memscope-cli compare --allocations` prints it: text, and JSON
// (docs/JSON_REFERENCE.md).

#include <cstddef>
#include <string>

#include "memscope/analysis/allocation_diff.h"

namespace memscope {

// `a` and `b` name the runs (their paths).
std::string allocationDiffText(const AllocationDiff& diff, const std::string& a,
                               const std::string& b, size_t top = 20);
// {"moment", "a": {"path", "device", "live_bytes"}, "b": {...}, "only_a_bytes",
//  "only_b_bytes", "both_bytes", "only_a_count", "only_b_count", "both_count",
//  "groups": [{"site", "frames", "only_a_bytes", "only_b_bytes", "both_bytes",
//  "only_a_count", "only_b_count", "both_count"}]}
std::string allocationDiffJson(const AllocationDiff& diff, const std::string& a,
                               const std::string& b);

}  // namespace memscope
