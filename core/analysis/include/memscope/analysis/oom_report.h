#pragma once
// Why an allocation failed: for each out-of-memory event of a trace (what
// PyTorch records before `_dump_snapshot` on OOM), the request, what the
// device and the allocator's cache had free then, what was alive by category
// and by site, and a verdict in words: fragmentation (the cache held enough
// free bytes, but no block that large) or the memory really full. A snapshot
// that holds only its end state (no OOM event, e.g. one dumped by an OOM
// handler in older PyTorch) gets the same report of its end, without a request.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memscope/analysis/peak_explainer.h"
#include "memscope/base/task_context.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

enum class OomVerdict : uint8_t {
    // The cache held at least the request free (reserved − allocated), but no
    // free block as large: freed blocks were scattered between live ones.
    Fragmentation = 0,
    // The cache held less than the request free, and the device could not give
    // more: what was reserved was in use.
    MemoryFull = 1,
    // A free block as large as the request was cached, yet the allocator did
    // not use it (another stream or pool, or the small-block pool).
    FreeBlockElsewhere = 2,
    // No request is known (an end state without an OOM event).
    Unknown = 3,
};

struct OomReport {
    int16_t device = 0;
    uint64_t trace_event =
        kNoEvent;              // the Oom event (index into Trace::events); kNoEvent = end state
    int64_t event_index = -1;  // device-local index of that event; -1 for an end state
    int64_t time = 0;          // Event::time of the moment
    int64_t since_start = 0;   // time - the device timeline's start (Event::time units)
    std::optional<uint64_t> requested_bytes;    // the Oom event's size
    std::optional<uint64_t> device_free_bytes;  // the snapshot's device_free, when recorded
    uint64_t reserved_bytes = 0;                // the allocator's segments then
    uint64_t allocated_bytes = 0;     // blocks not yet reusable then (allocated or pending free)
    int64_t active_bytes = 0;         // live bytes then (the timeline's, as memory_viz counts them)
    uint64_t largest_free_block = 0;  // the largest inactive span inside one segment
    OomVerdict verdict = OomVerdict::Unknown;
    // What was live then, by category, and whether each was recorded or inferred.
    std::array<int64_t, kCategoryCount> by_category{};
    std::array<CategorySources, kCategoryCount> category_sources{};
    std::vector<SiteAtPeak> sites;  // most bytes first
    PhaseId phase;                  // the innermost phase active then; 0 = none
    bool phase_inferred = false;
    std::string note;  // what the allocator replay could not know

    bool endState() const { return trace_event == kNoEvent; }
    // Reserved bytes no block held: what the cache could have served from.
    uint64_t cachedFreeBytes() const {
        return reserved_bytes > allocated_bytes ? reserved_bytes - allocated_bytes : 0;
    }
};

// One report per Oom event of the device, in time order; for a device whose
// trace holds only an end state (no alloc or free events, no Oom), one report
// of that end state. Each costs one allocator replay (O(device events)), so
// at most `max_reports` are made: a hostile trace of a million OOMs must not
// cost a million replays.
inline constexpr size_t kMaxOomReports = 16;
Result<std::vector<OomReport>> oomReports(const Trace& trace, const DeviceTimeline& timeline,
                                          size_t top_sites = 5, size_t max_reports = kMaxOomReports,
                                          const TaskContext& ctx = {});

// The verdict as the report's first sentence, with its figures:
// "fragmentation: the cache held 6.00 GiB free, but its largest free block
// was 1.00 GiB, less than the 4.94 GiB asked for".
std::string describeVerdict(const OomReport& report);

// The whole report as lines of text (no trailing newline, no indent), the
// same for `memscope-cli summary` and the GUI's banner.
std::vector<std::string> oomReportLines(const Trace& trace, const OomReport& report);

// "fragmentation", "memory full", "free block elsewhere", "unknown".
std::string_view toString(OomVerdict verdict);

}  // namespace memscope
