#pragma once
// Multi-rank runs as the CLI prints them.
//
// A multi-rank run in JSON, as `memscope-cli summary --json FOLDER` prints it:
// {"path", "name", "ranks": [{"rank", "name", "path", "pid", "device",
//  "peak_bytes", "peak_since_start_us", "peak_phase", "peak_step",
//  "peak_reserved_bytes", "categories_at_peak", "peaks_by_phase", "steps", "digest"}],
//  "imbalance": {"ranks", "highest", "lowest", "max_bytes", "min_bytes",
//  "mean_bytes", "max_over_mean", "max_minus_min_bytes", "above_lowest",
//  "phase", "text"}, "failures": [{"path", "message"}]}
// "highest" and "lowest" are the ranks' names ("rank 1"); absent values are null.

#include <string>

#include "memscope/ranks/rank_compare.h"
#include "memscope/ranks/rank_run.h"

namespace memscope {

std::string rankRunToJson(const RankRun& run);

// The rank comparison (rank_compare.h) as `memscope-cli compare FOLDER FOLDER`
// prints it.
std::string rankComparisonText(const RankComparison& c);
// {"base", "other", "ranks": [{"rank", "name", "base_bytes", "other_bytes",
//  "delta_bytes"}], "worst": {"base", "base_bytes", "other", "other_bytes", "delta_bytes"}}
std::string rankComparisonJson(const RankComparison& c);

}  // namespace memscope
