#pragma once
// A rank's digest as a trace of its own: what `memscope-cli digest` writes
// where a job's traces are, so that a thousand ranks' digests, not their
// traces, travel to the desktop. It is a native trace whose events are the
// allocations alive at the rank's peak (the largest with their stacks and
// categories, the rest summed per category), born at the peak's time, and
// whose typed section (Trace::digest, memscope/model/digest.h) carries the
// rest of the RankDigest (the envelope, the per-phase peaks, the steps), so
// that it is never taken for the full trace: opened alone it shows the
// composition at the peak; in a folder it is a rank like any other.

#include <cstddef>
#include <optional>
#include <string>

#include "memscope/model/trace.h"
#include "memscope/ranks/rank_digest.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

struct DigestLimits {
    size_t allocations = 2000;  // kept one by one with their stacks; the rest summed
    size_t stack_depth = 48;    // frames kept per stack, innermost first
    size_t steps = 4096;        // step starts kept (the count is always kept)
};

// The digest trace of `trace` (whose timeline is `timeline` and digest `d`).
Trace digestTrace(const Trace& trace, const Timeline& timeline, const RankDigest& d,
                  const DigestLimits& limits = {});

// A digest trace's RankDigest, read back from its section; an error names
// what is missing or malformed (no section, an envelope cut short).
Result<RankDigest> rankDigestOf(const Trace& digest, const std::string& path);

}  // namespace memscope
