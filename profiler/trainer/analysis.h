#pragma once
// Figures derived from a recorded trace through core's Timeline: the peak and
// its composition for the report, and the per-block activation accounting the
// theory tests and the benchmark compare against the formulas.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "config.h"
#include "memscope/model/phases.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

namespace memscope::trainer {

struct LoadedTrace {
    std::shared_ptr<const Trace> trace;
    std::shared_ptr<const Timeline> timeline;
    const DeviceTimeline* device = nullptr;  // device 0: the run's memory
};
Result<LoadedTrace> loadTrace(const std::string& path);

struct PeakInfo {
    int64_t bytes = 0;
    int64_t time_us = 0;  // since the first event
    std::string phase;    // innermost phase's name, "" if none
    PhaseKind kind = PhaseKind::Range;
    int step = -1;
    std::array<int64_t, kCategoryCount> by_category{};
};
PeakInfo peakOf(const LoadedTrace& t);
// The device whose peak is the highest (device 0 on a CPU run), as
// `memscope-cli summary` reports it; device 0 among equal ones.
const DeviceTimeline& highestPeakDevice(const LoadedTrace& t);

// Phases are found with core's findPhase and phaseWithin (memscope/phases.h).

// Activation bytes alive when step's forward ends, by the forward block that
// allocated them (-1: outside any block: embedding, head, loss).
std::map<int, int64_t> activationByBlockAtForwardEnd(const LoadedTrace& t, int step);
// Bytes of `category` alive at time x.
int64_t liveAt(const LoadedTrace& t, Category category, int64_t x);
// The largest live value of `category` over the trace.
int64_t maxLive(const LoadedTrace& t, Category category);
// Live bytes of `category` at the end of a phase (by its end time).
int64_t liveAtEnd(const LoadedTrace& t, PhaseId phase, Category category);

// Bytes per gpt layer predicted by Korthikanti et al. for a recomputation
// (core's gptLayerBytes, activation_theory.h: none, selective, block), in the
// model's element size. 0 for the other recomputations (sqrt, segments,
// save), which the paper has no per-layer formula for.
double gptLayerFormula(const ModelConfig& m, Recompute recompute);

}  // namespace memscope::trainer
