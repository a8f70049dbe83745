#pragma once
// One rank of a distributed job reduced to what the per-rank table, the
// imbalance and the Ranks view need: its peak (device, bytes, time, training
// phase, composition), its reserved peak, its per-phase peaks, its steps and
// an envelope of live bytes at a fixed resolution. A few kilobytes whatever
// the trace's size, so that a folder of a thousand ranks fits in memory while
// only the ranks the user opens keep their full timeline.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memscope/model/phases.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

// Columns of RankDigest::envelope: finer than any screen row of ranks needs.
inline constexpr size_t kRankEnvelopeColumns = 2048;

struct RankDigest {
    std::string path;   // the file it was reduced from
    std::string name;   // "rank 3", or the run's name when the trace has no rank
    int32_t rank = -1;  // -1: the trace does not say
    int64_t pid = -1;

    int16_t device = 0;                       // the device whose peak is the rank's peak
    int64_t peak_bytes = 0;                   // live bytes at that peak
    int64_t peak_time = 0;                    // Event::time of the peak
    std::optional<TrainingPhase> peak_phase;  // the training phase holding the peak
    int32_t peak_step = -1;                   // ordinal of the peak's step, -1 none
    std::optional<uint64_t> peak_reserved_bytes;
    std::array<int64_t, kCategoryCount> categories_at_peak{};
    std::array<std::optional<int64_t>, kTrainingPhaseCount> peaks_by_phase;

    // The device's time range, and where its steps start (for alignment by
    // step: ranks' clocks need not agree, their steps do).
    int64_t start = 0;
    int64_t end = 0;
    TimeBase time_base = TimeBase::Nanoseconds;
    std::vector<int64_t> step_starts;
    // Max live bytes in each of kRankEnvelopeColumns equal slices of
    // [start, end] (empty when the device has no events). Its maximum is the
    // peak: the envelope keeps every column's true maximum.
    std::vector<int64_t> envelope;
    // Read from a digest file (digest_trace.h), not reduced from a full trace:
    // the full timeline is elsewhere, on the machine that made the digest.
    bool from_digest = false;
};

// Reduces one opened trace; `path` and the run name (for a trace without a
// rank) come from the caller.
RankDigest digestRank(const Trace& trace, const Timeline& timeline, const std::string& path,
                      const std::string& run_name);

// The rank order of a multi-rank run: ranks ascending, traces without a rank
// after them by path.
void sortRanks(std::vector<RankDigest>& ranks);

// The script the ranks of a run ran, from their recorded names ("train.py
// rank 1" -> "train.py") where they agree; "" where none says or they differ.
std::string scriptOfRanks(const std::vector<std::string>& names);

// The parts of a multi-rank run that are compared: those that know their
// rank, where any does (a launcher beside the ranks is not one); all otherwise.
std::vector<const RankDigest*> comparedRanks(const std::vector<RankDigest>& ranks);

// The name a part of a multi-rank run is shown by: "rank 3"; without a rank,
// `fallback` (the run's or file's name).
std::string rankName(int32_t rank, const std::string& fallback);

}  // namespace memscope
