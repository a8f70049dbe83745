#pragma once
// How unevenly a multi-rank run's ranks use memory: the rank that runs out
// first (the highest peak), by how much, and in which phase. Over
// RankDigests, so that it costs nothing per rank beyond the digest.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "memscope/ranks/rank_digest.h"

namespace memscope {

struct RankImbalance {
    size_t ranks = 0;  // how many were compared
    // Indexes into the digests given, which may hold parts that were not compared.
    size_t highest = 0;  // index of the rank with the highest peak (the first of equals)
    size_t lowest = 0;   // index of the rank with the lowest peak
    int64_t max_bytes = 0;
    int64_t min_bytes = 0;
    double mean_bytes = 0;
    double maxOverMean() const { return mean_bytes > 0 ? double(max_bytes) / mean_bytes : 1.0; }
    int64_t maxMinusMin() const { return max_bytes - min_bytes; }
    // The highest peak over the lowest, minus one: 0.28 = "28% above".
    double aboveLowest() const {
        return min_bytes > 0 ? double(max_bytes) / double(min_bytes) - 1.0 : 0.0;
    }
};

// Over the parts that know their rank, where any does (a process beside the
// ranks, such as a launcher, is not compared); over all parts otherwise.
// Nullopt without parts.
std::optional<RankImbalance> rankImbalance(std::span<const RankDigest> ranks);

// The imbalance in words: "rank 1 peaks highest, 16.0 MiB in backward, 28%
// above rank 0 (12.5 MiB, the lowest); max/mean 1.12, max - min 3.50 MiB over
// 2 ranks". One rank, or ranks that peak alike, say so.
std::string imbalanceText(const RankImbalance& imbalance, std::span<const RankDigest> ranks);

}  // namespace memscope
