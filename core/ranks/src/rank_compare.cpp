#include "memscope/ranks/rank_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace memscope {
RankComparison compareRanks(const RankRun& base, const RankRun& other) {
    RankComparison c;
    c.base_name = base.name;
    c.other_name = other.name;
    c.base_path = base.path;
    c.other_path = other.path;
    const auto a = comparedRanks(base.ranks), b = comparedRanks(other.ranks);
    // By rank number where both know their ranks, else by position.
    const bool by_rank =
        std::all_of(a.begin(), a.end(), [](const RankDigest* r) { return r->rank >= 0; }) &&
        std::all_of(b.begin(), b.end(), [](const RankDigest* r) { return r->rank >= 0; });
    // A rank two files claim (rank_identity.h) is two rows, the first file
    // of each side against the first of the other: never one kept silently.
    std::map<std::pair<int64_t, size_t>, RankDelta> rows;
    auto add = [&](const std::vector<const RankDigest*>& side, bool is_base) {
        std::map<int64_t, size_t> seen;
        for (size_t i = 0; i < side.size(); ++i) {
            const RankDigest& r = *side[i];
            const int64_t key = by_rank ? r.rank : int64_t(i);
            RankDelta& row = rows[{key, seen[key]++}];
            if (row.name.empty()) row.name = by_rank ? r.name : "part " + std::to_string(i);
            row.rank = by_rank ? r.rank : -1;
            (is_base ? row.base_bytes : row.other_bytes) = r.peak_bytes;
            std::string& worst = is_base ? c.base_worst : c.other_worst;
            int64_t& worst_bytes = is_base ? c.base_worst_bytes : c.other_worst_bytes;
            if (worst.empty() || r.peak_bytes > worst_bytes) {
                worst = r.name;
                worst_bytes = r.peak_bytes;
            }
        }
    };
    add(a, true);
    add(b, false);
    for (auto& [key, row] : rows) c.ranks.push_back(std::move(row));
    return c;
}

}  // namespace memscope
