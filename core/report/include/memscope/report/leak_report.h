#pragma once
// The leak finder (memscope/analysis/leak_finder.h) as `memscope-cli leaks`
// prints it: text for a person, JSON (docs/JSON_REFERENCE.md).

#include <string>

#include "memscope/analysis/leak_finder.h"

namespace memscope {

std::string leaksText(const LeakReport& report);
// {"steps_inferred", "devices": {"0": {"steps", "steady_from_step",
//  "live_bytes_at_step_end": [{"step", "live_bytes"}], "fitted_bytes_per_step",
//  "grows", "growth_bytes_per_step", "note", "groups": [{"module", "site",
//  "frames", "bytes_per_step", "count_per_step", "first_step", "bytes",
//  "count"}]}}}
std::string leaksJson(const LeakReport& report);

}  // namespace memscope
