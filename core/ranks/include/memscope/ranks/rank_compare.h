#pragma once
// Two multi-rank runs compared rank by rank (a change to the job: a new
// sharding, a bigger batch on some ranks): each rank's peak in both, its
// delta, and the delta of the worst rank, which is what runs out of memory
// first. Ranks are matched by their rank number, else by position.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memscope/ranks/rank_run.h"

namespace memscope {

struct RankDelta {
    std::string name;  // "rank 3"
    int32_t rank = -1;
    std::optional<int64_t> base_bytes;   // absent: the rank is not in the baseline
    std::optional<int64_t> other_bytes;  // absent: not in the other run
    std::optional<int64_t> delta() const {
        if (!base_bytes || !other_bytes) return std::nullopt;
        return *other_bytes - *base_bytes;
    }
};

struct RankComparison {
    std::string base_name, other_name;
    std::string base_path, other_path;
    std::vector<RankDelta> ranks;  // in rank order
    // The worst (highest-peak) rank of each run and the change between them.
    std::string base_worst, other_worst;
    int64_t base_worst_bytes = 0, other_worst_bytes = 0;
    int64_t worstDelta() const { return other_worst_bytes - base_worst_bytes; }
};

// Over the compared ranks of each (comparedRanks: a launcher is no rank).
RankComparison compareRanks(const RankRun& base, const RankRun& other);

}  // namespace memscope
