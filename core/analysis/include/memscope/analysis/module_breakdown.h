#pragma once
// Which layer holds the memory: live bytes grouped by the module that
// allocated them (module_attribution.h), at the peak or at any time, and the
// per-module change of a comparison. The GUI's by-module tables, `summary`'s
// modules_at_peak and `compare`'s module deltas are these functions.

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "memscope/analysis/compare.h"
#include "memscope/model/module_attribution.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

// How modules are grouped into rows.
enum class ModuleGrouping : uint8_t {
    Layer = 0,  // layerOf(): "h.3" for everything inside block 3
    Depth = 1,  // the ancestor at `depth` (1 = the root's children)
    Exact = 2,  // the innermost module itself
};
struct ModuleGroupingSpec {
    ModuleGrouping by = ModuleGrouping::Layer;
    uint16_t depth = 1;  // for Depth
};

// The module an allocation interval belongs to: the innermost scope at its
// allocation; 0 for ghosts (alive before the trace) and outside every scope.
ModuleHit moduleOfInterval(const ModuleAttribution& attribution, const AllocationInterval& a);
// The row a module falls in under `spec` (0 stays 0).
ModuleId moduleGroup(const Trace& trace, ModuleId id, ModuleGroupingSpec spec);

inline constexpr std::string_view kOutsideModulesLabel = "(outside modules)";

struct ModuleBytes {
    ModuleId module;   // the group's module; 0 = allocations outside every module
    std::string path;  // modulePath(), or kOutsideModulesLabel
    int64_t bytes = 0;
    uint32_t count = 0;
    std::array<int64_t, kCategoryCount> by_category{};
    int64_t recomputed_bytes = 0;  // of `bytes`, allocated inside a recompute scope
    uint32_t largest = 0;          // the group's largest live interval (index into intervals)
};

struct ModuleBreakdown {
    ModuleSource source = ModuleSource::None;  // None: the trace has no modules
    int64_t total = 0;              // the sum of every row's bytes (= the live bytes given)
    std::vector<ModuleBytes> rows;  // most bytes first; the "outside" row included
};

// The given live intervals by module group.
ModuleBreakdown modulesOf(const Trace& trace, const ModuleAttribution& attribution,
                          const DeviceTimeline& timeline, std::span<const uint32_t> live,
                          ModuleGroupingSpec spec = {});
// At the device's peak (the intervals live right after the peak event).
ModuleBreakdown modulesAtPeak(const Trace& trace, const ModuleAttribution& attribution,
                              const DeviceTimeline& timeline, ModuleGroupingSpec spec = {});
// At time x.
ModuleBreakdown modulesAt(const Trace& trace, const ModuleAttribution& attribution,
                          const DeviceTimeline& timeline, int64_t x, ModuleGroupingSpec spec = {});

// One module row of a comparison, matched by path between the runs.
struct ModuleDelta {
    std::string path;
    int64_t baseline_bytes = 0;
    int64_t candidate_bytes = 0;
    int64_t delta = 0;  // candidate - baseline
    std::array<int64_t, kCategoryCount> delta_by_category{};
};

// Every path of either breakdown, largest |delta| first.
std::vector<ModuleDelta> compareModules(Baseline<ModuleBreakdown> baseline,
                                        Candidate<ModuleBreakdown> candidate);

// "h.0–h.11: −2.10 GiB activation": the changes in words, largest first, at
// most `top` lines. Numbered siblings next to each other ("h.0" … "h.11")
// whose change is led by the same category are one line.
std::vector<std::string> describeModuleChanges(std::span<const ModuleDelta> deltas, size_t top = 5);

}  // namespace memscope
