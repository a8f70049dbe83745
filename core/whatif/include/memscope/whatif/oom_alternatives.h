#pragma once
// What would have fit: for an out-of-memory event, the trace replayed through
// the caching-allocator model up to the failing request under alternatives,
// each said in words with how much it would have left to spare:
// - other allocator settings (expandable segments, a max_split_size_mb);
// - emptying the cache (which the allocator already does before it fails);
// - the cheapest checkpointing policy the what-if finds that serves it.
// The device's capacity is what the allocator had reserved then plus what
// the device still had free (the OOM event's device_free); every answer is a
// prediction, and the report says so.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memscope/analysis/oom_report.h"
#include "memscope/base/result.h"
#include "memscope/base/task_context.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

enum class OomAlternativeKind : uint8_t { Settings, EmptyCache, Policy };

struct OomAlternative {
    OomAlternativeKind kind = OomAlternativeKind::Settings;
    std::string name;  // "expandable_segments:True", "empty_cache", "block"
    bool served = false;
    uint64_t spare_bytes = 0;  // capacity − reserved after serving it (when served)
    std::string detail;        // why not, or what it costs (a policy's step time)
};

struct OomAlternatives {
    uint64_t device_capacity = 0;
    bool capacity_from_device_free = false;  // else taken as the reserved bytes then
    // The model under the recorded settings fails the request too (it agrees
    // with what happened); false = the model would have served it, so the
    // alternatives below are less sure.
    bool model_agrees = false;
    std::vector<OomAlternative> alternatives;
    // When no setting serves it: why, in words ("the device was full: …").
    std::string settings_verdict;
};

// For a report with a request (not an end state). Costs a replay per setting
// and a what-if of the default policies where the trace has a layer chain.
Result<OomAlternatives> oomAlternatives(const Trace& trace, const Timeline& timeline,
                                        const OomReport& report, const TaskContext& ctx = {});

// The alternatives in words, one line each, the first saying what was assumed.
std::vector<std::string> oomAlternativeLines(const OomAlternatives& alternatives);

}  // namespace memscope
