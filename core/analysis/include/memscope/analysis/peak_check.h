#pragma once
// The memory gate a training repository puts in CI (`memscope-cli check`):
// the peaks of a trace, per device and optionally within one training phase,
// held against an absolute limit or against a baseline run's peak plus a
// growth allowance.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memscope/base/result.h"
#include "memscope/model/phases.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

struct CheckedPeak {
    int16_t device = 0;
    std::optional<TrainingPhase> phase;  // nullopt = the whole run
    int64_t bytes = 0;
};

// The peaks to check: every device of the timeline, or only `device`; the
// whole run's peak, or the phase's. An error names what is missing (a device
// the trace does not have, a phase it never entered).
Result<std::vector<CheckedPeak>> peaksToCheck(const Timeline& timeline,
                                              std::optional<int16_t> device,
                                              std::optional<TrainingPhase> phase);
// The same for an opened trace: a digest (Trace::digest) keeps its run's
// per-phase peaks, not the phases themselves, so a phase's peak is the
// digest's figure for its device.
Result<std::vector<CheckedPeak>> peaksToCheck(const Trace& trace, const Timeline& timeline,
                                              std::optional<int16_t> device,
                                              std::optional<TrainingPhase> phase);

// A baseline's peak plus `percent` (may be negative), rounded down.
int64_t growthLimit(int64_t baseline_bytes, double percent);

struct CheckVerdict {
    bool over = false;
    std::string
        message;  // "device 0, forward: peak 1.50 GiB is 12.0 MiB (0.8%) over the limit 1.49 GiB"
};

CheckVerdict judge(const CheckedPeak& peak, int64_t limit);

// "device 0" / "device -1 (host)", with ", forward" for a phase.
std::string describe(const CheckedPeak& peak);

}  // namespace memscope
