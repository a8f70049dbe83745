#include "memscope/ranks/rank_imbalance.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "memscope/base/units.h"

namespace memscope {

std::optional<RankImbalance> rankImbalance(std::span<const RankDigest> ranks) {
    // Where some parts know their rank, the others are processes beside the
    // ranks (a launcher that imported torch), not ranks to compare.
    const bool any_ranked =
        std::any_of(ranks.begin(), ranks.end(), [](const RankDigest& r) { return r.rank >= 0; });
    std::optional<RankImbalance> out;
    double sum = 0;
    for (size_t i = 0; i < ranks.size(); ++i) {
        if (any_ranked && ranks[i].rank < 0) continue;
        const int64_t b = ranks[i].peak_bytes;
        if (!out) {
            out = RankImbalance{};
            out->highest = out->lowest = i;
        }
        ++out->ranks;
        sum += double(b);
        if (b > ranks[out->highest].peak_bytes) out->highest = i;
        if (b < ranks[out->lowest].peak_bytes) out->lowest = i;
    }
    if (!out) return out;
    out->max_bytes = ranks[out->highest].peak_bytes;
    out->min_bytes = ranks[out->lowest].peak_bytes;
    out->mean_bytes = sum / double(out->ranks);
    return out;
}

std::string imbalanceText(const RankImbalance& m, std::span<const RankDigest> ranks) {
    if (m.highest >= ranks.size() || m.lowest >= ranks.size()) return {};
    const RankDigest& hi = ranks[m.highest];
    const RankDigest& lo = ranks[m.lowest];
    std::string phase;
    if (hi.peak_phase) phase = " in " + std::string(toString(*hi.peak_phase));
    if (m.ranks == 1)
        return hi.name + " peaks at " + formatBytes(hi.peak_bytes) + phase + " (one rank)";
    if (m.max_bytes == m.min_bytes)
        return "all " + std::to_string(m.ranks) + " ranks peak at " + formatBytes(hi.peak_bytes);
    char above[32], ratio[32];
    std::snprintf(above, sizeof above, "%.0f%%", std::round(100.0 * m.aboveLowest()));
    std::snprintf(ratio, sizeof ratio, "%.2f", m.maxOverMean());
    return hi.name + " peaks highest, " + formatBytes(hi.peak_bytes) + phase + ", " + above +
           " above " + lo.name + " (" + formatBytes(lo.peak_bytes) + ", the lowest); max/mean " +
           ratio + ", max - min " + formatBytes(m.maxMinusMin()) + " over " +
           std::to_string(m.ranks) + " ranks";
}

}  // namespace memscope
