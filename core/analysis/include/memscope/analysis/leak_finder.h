#pragma once
// What leaks: memory that grows step after step. Per device, the live bytes
// at each step's end (steps recorded, or inferred: inference.h), the growth
// per step fitted over the steady steps, and the allocations that survive
// their step and pile up, grouped by module (layer) and site.
//
// The rules, so that what is not a leak stays out:
// - steps memscope inferred (by repetition) that look like the layers of
//   one pass, not a loop's iterations, are not judged (the note says why):
//   the median step keeps more than 60% of the bytes it allocates, or more
//   than 25% while less than 5% of all the steps' bytes is freed by a later
//   step (a loop hands inputs, caches and gradients on; layers do not);
// - the last of the steps memscope inferred ends where the trace does, not
//   where the loop turns: it is left out of the fit;
// - warm-up: the first step (the first two from six steps on), and the
//   steps right after it while their change of live bytes still differs from the
//   later steps' usual change (the median of the second half's; by more than
//   the threshold below or 10%), three steps kept to fit, are left out of the
//   fit and of the groups: parameters, optimizer state and caches born there
//   and kept are not growth;
// - the fit: least squares of the live bytes at the end of each steady step;
//   the run grows when the slope is at least kMinGrowthBytesPerStep and
//   1/1000 of the device's peak per step, and the second half of the steady
//   steps still rises by half the slope or more (a cache that reaches a
//   plateau does not);
// - a group: allocations born in a steady step (the last step left out: what
//   it made may be freed by a next step the trace lacks) and still alive at
//   the end of the last step, born in at least half of those steps and in two
//   or more; its bytes and count per step are the survivors' over those steps.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memscope/analysis/peak_check.h"
#include "memscope/model/module_attribution.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

inline constexpr int64_t kMinGrowthBytesPerStep = 1024;
// The fewest steps a fit needs: a warm-up step and three steady ones.
inline constexpr int kMinStepsForGrowth = 4;

struct StepEnd {
    int32_t step = -1;  // the step as the trace numbers it (its ordinal when unknown)
    int64_t time = 0;   // the step's end (Event::time units)
    int64_t live_bytes = 0;
};

struct LeakGroup {
    std::string module;  // the layer that allocated them ("head", "blocks.3"),
                         // "(outside modules)"; "" when the trace has no modules
    std::string site;    // the site frame's text ("forward (model.py:40)"), "(no stack)"
    std::vector<std::string> frames;  // the largest survivor's stack, outermost first
    double bytes_per_step = 0;
    double count_per_step = 0;
    int32_t first_step = -1;  // the first step with a survivor (warm-up included)
    int64_t bytes = 0;        // the group's survivors alive at the end of the last step
    uint32_t count = 0;
    std::vector<uint32_t>
        intervals;  // those survivors: DeviceTimeline::intervals indices, ascending
};

struct DeviceGrowth {
    int16_t device = 0;
    std::vector<StepEnd> step_ends;  // one per step, in order
    int32_t steady_from = 0;         // index into step_ends of the fit's first step
    int32_t steady_to = 0;  // and of its last (the last inferred step is left out: see the rules)
    std::optional<double> fitted_bytes_per_step;  // nullopt: too few steps
    bool grows = false;
    double growth_bytes_per_step = 0;  // the fit when it grows, else 0
    std::vector<LeakGroup> groups;     // when it grows; most bytes per step first
    std::string note;                  // why there is no fit ("2 steps: ..."), else ""
};

struct LeakReport {
    bool steps_inferred = false;  // the steps were inferred, not recorded
    std::vector<DeviceGrowth> devices;
};

LeakReport findLeaks(const Trace& trace, const Timeline& timeline,
                     const ModuleAttribution& modules);
// One device's.
DeviceGrowth deviceGrowth(const Trace& trace, const DeviceTimeline& timeline,
                          const ModuleAttribution& modules);

// "grows 2.50 MiB per step: head 2.00 MiB, blocks.3 512 KiB" (the groups by
// module, at most `top`), "no growth", or the note.
std::string growthText(const DeviceGrowth& growth, size_t top = 3);

// `check --max-growth-per-step`: over when the growth per step exceeds
// `limit` bytes. "device 0: grows 2.50 MiB per step: head 2.00 MiB, over the
// limit 1.00 MiB per step" / "device 0: no growth (limit 1.00 MiB per step)".
// An error (the note) when there are too few steps to fit.
Result<CheckVerdict> judgeGrowth(const DeviceGrowth& growth, int64_t limit);

}  // namespace memscope
