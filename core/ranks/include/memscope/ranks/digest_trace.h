#pragma once
// A rank's digest as a trace of its own: what `memscope-cli digest` writes
// where a job's traces are, so that a thousand ranks' digests, not their
// traces, travel to the desktop. It is a native trace whose events are the
// allocations alive at the rank's peak (the largest with their stacks and
// categories, the rest summed per category), born at the peak's time, and
// whose properties carry the rest of the RankDigest (the envelope, the
// per-phase peaks, the steps). Marked as a digest (property "digest"), so
// that it is never taken for the full trace: opened alone it shows the
// composition at the peak; in a folder it is a rank like any other.

#include <cstddef>
#include <optional>
#include <string>

#include "memscope/ranks/rank_digest.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

// The version of the digest properties this build writes and reads.
inline constexpr int kDigestVersion = 1;

struct DigestLimits {
    size_t allocations = 2000;  // kept one by one with their stacks; the rest summed
    size_t stack_depth = 48;    // frames kept per stack, innermost first
    size_t steps = 4096;        // step starts kept (the count is always kept)
};

// The digest trace of `trace` (whose timeline is `timeline` and digest `d`).
Trace digestTrace(const Trace& trace, const Timeline& timeline, const RankDigest& d,
                  const DigestLimits& limits = {});

// Puts back, as inferred, the categories the digest's source had inferred
// (its "digest.inferred" property); the open path calls it on a digest in
// place of inferring them again from events that no longer have phases.
void applyDigestInferences(Trace& digest);

// Whether a trace is a digest (its "digest" property).
bool isDigest(const Trace& trace);

// A digest trace's RankDigest, read back from its properties; an error names
// what is missing or malformed (a digest of a newer version, a cut envelope).
Result<RankDigest> rankDigestOf(const Trace& digest, const std::string& path);

}  // namespace memscope
