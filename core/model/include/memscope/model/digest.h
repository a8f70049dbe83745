#pragma once
// A rank's digest, typed: what a digest trace (memscope/ranks/digest_trace.h)
// carries besides its events, the allocations alive at the rank's peak. Its
// own section of the native format (chunk 16, docs/FORMAT.md), so that the
// open path tells a digest from a full trace, and a digest's fields are
// numbers with types, not text to parse.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memscope/model/training_phase.h"
#include "memscope/model/types.h"

namespace memscope {

class Trace;

// The version of the digest section this build writes; a reader refuses a
// newer one.
inline constexpr uint32_t kDigestVersion = 2;

// A category that the digest's source had inferred for an allocation alive
// at its peak, kept apart from the event's recorded (Unknown) category so
// that it opens as inferred again.
struct DigestInference {
    uint64_t event = 0;  // index into the digest trace's events
    Category category = Category::Unknown;
    CategoryRule rule = CategoryRule::Recorded;
    friend bool operator==(const DigestInference&, const DigestInference&) = default;
};

struct DigestSection {
    uint32_t version = kDigestVersion;
    std::string source;  // the full trace's path, where the digest was made
    int16_t device = 0;  // the device whose peak is the rank's peak
    int64_t start = 0;   // the device's time range in the source
    int64_t end = 0;
    int64_t peak_bytes = 0;
    int64_t peak_time = 0;
    std::optional<TrainingPhase> peak_phase;
    int32_t peak_step = -1;  // ordinal of the peak's step, -1 none
    std::optional<uint64_t> peak_reserved_bytes;
    std::array<std::optional<int64_t>, kTrainingPhaseCount> peaks_by_phase{};
    uint64_t steps = 0;                // the source's step count, even past those kept
    std::vector<int64_t> step_starts;  // the first DigestLimits::steps of them
    std::vector<int64_t> envelope;     // max live bytes per column, or empty
    std::vector<DigestInference> inferred;
    uint64_t allocations = 0;         // kept one by one, with their stacks
    uint64_t summed_allocations = 0;  // summed per category into the rest
    friend bool operator==(const DigestSection&, const DigestSection&) = default;
};

// Puts the digest's inferred categories back into trace.inferred_categories
// (as inferred, with their rules); entries that name no event or an event
// whose category was recorded are skipped. The open path calls it on a digest
// in place of inferring again from events that no longer have phases.
void applyDigestInferences(Trace& trace);

// Where a digest's figures contradict themselves or the rest of its file (its
// events, the allocations alive at the peak), the first contradiction, named
// by its figure (e.g. "the digest's peak of -5 bytes is out of range"); empty
// when they agree or the trace has no digest
// (or one newer than this build reads). The native reader refuses a digest
// that has one, so that every front end sees the same verdict.
std::string digestContradiction(const Trace& trace);

}  // namespace memscope
