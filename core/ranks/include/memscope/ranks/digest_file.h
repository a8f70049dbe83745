#pragma once
// Writing a rank's digest file (digest_trace.h) within its size bound: the
// file holds at most kDigestMaxBytes whatever the input, by keeping fewer
// allocations one by one (the rest summed per category) until it fits.

#include <cstdint>
#include <string>

#include "memscope/base/result.h"
#include "memscope/open/open_run.h"
#include "memscope/ranks/digest_trace.h"

namespace memscope {

inline constexpr uint64_t kDigestMaxBytes = 1u << 20;

struct DigestWritten {
    uint64_t bytes = 0;      // the file's size
    size_t allocations = 0;  // kept with their stacks
    size_t summed = 0;       // summed into per-category remainders
    RankDigest digest;
};

// Writes the digest of `opened` (a full trace with its timeline) to `out`,
// atomically (the old file stays until the new one is complete).
Result<DigestWritten> writeDigest(const OpenedTrace& opened, const std::string& out);

}  // namespace memscope
