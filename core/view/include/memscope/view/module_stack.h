#pragma once
// What "stack by module" draws: the live bytes of each module group over
// time, one step series per group, built once per (device, grouping) from
// core's attribution (moduleOfInterval, moduleGroup). A frame then draws
// from StepSeries::levelOfDetail, like the category bands, and never walks
// the intervals. At any x each group's value is the bytes of core's
// modulesAt(x) row for it, and the groups add up to the live curve (both
// tested in tst_gui_modules).
//
// Only core's numbers are summed here; no rule of its own decides which
// module an allocation belongs to.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memscope/analysis/module_breakdown.h"
#include "memscope/timeline/step_series.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

// Groups drawn as bands of their own; the rest share one "other modules" band.
inline constexpr size_t kMaxModuleBands = 12;

struct ModuleStackGroup {
    ModuleId module;        // the group's module; 0 = outside every module (or "other")
    std::string path;       // modulePath(), kOutsideModulesLabel or "other modules"
    bool other = false;     // the groups past the cap, together
    uint32_t members = 1;   // groups folded into it ("other": several)
    int64_t max_bytes = 0;  // the group's own peak over the whole trace
    StepSeries live;
};

struct ModuleStack {
    ModuleSource source = ModuleSource::None;
    ModuleGroupingSpec spec;
    // Bottom first: outside every module, the groups in model order (the
    // order their modules were first seen), then "other".
    std::vector<ModuleStackGroup> groups;
    // Per interval of the timeline: its band (index into groups) and its
    // group's module (before the cap folded it into "other").
    std::vector<uint32_t> band_of;
    std::vector<ModuleId> group_of;

    bool empty() const { return groups.empty(); }
};

ModuleStack buildModuleStack(const Trace& trace, const ModuleAttribution& attribution,
                             const DeviceTimeline& timeline, ModuleGroupingSpec spec,
                             size_t max_bands = kMaxModuleBands);

// The live allocations at x stacked as the bands are (band bottom first,
// inside a band in order of start), and the one drawn at height y.
std::vector<uint32_t> moduleStackedAt(const DeviceTimeline& timeline, const ModuleStack& stack,
                                      int64_t x);
std::optional<uint32_t> moduleAllocationAt(const DeviceTimeline& timeline, const ModuleStack& stack,
                                           int64_t x, double y);

// Every interval whose group is `group` (a ModuleBytes::module of the same
// grouping), in order of start.
std::vector<uint32_t> intervalsOfGroup(const ModuleStack& stack, ModuleId group);

}  // namespace memscope
