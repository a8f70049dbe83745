#include "memscope/ranks/rank_heatmap.h"

#include <algorithm>

namespace memscope {

size_t RankHeatMap::columnOf(int64_t t) const {
    if (columns == 0 || duration <= 0) return 0;
    const double f = double(std::clamp<int64_t>(t, 0, duration)) / double(duration);
    return std::min(columns - 1, size_t(f * double(columns)));
}

RankHeatMap rankHeatMap(std::span<const RankDigest> ranks, size_t columns) {
    RankHeatMap m;
    m.rows = ranks.size();
    m.columns = std::max<size_t>(columns, 1);
    m.by_step = !ranks.empty() && std::all_of(ranks.begin(), ranks.end(), [](const RankDigest& r) {
        return !r.step_starts.empty();
    });
    for (const RankDigest& r : ranks) {
        m.origins.push_back(m.by_step ? std::max(r.start, r.step_starts.front()) : r.start);
        m.duration = std::max(m.duration, r.end - m.origins.back());
    }
    m.cells.assign(m.rows * m.columns, -1);
    for (size_t row = 0; row < ranks.size(); ++row) {
        const RankDigest& r = ranks[row];
        const size_t n = r.envelope.size();
        const int64_t span = std::max<int64_t>(r.end - r.start, 0);
        const int64_t shift = m.origins[row] - r.start;  // the time before the origin
        for (size_t k = 0; k < n; ++k) {
            // Envelope column k covers [k, k + 1) * span / n of the rank's own
            // time; it lands in every heat column it overlaps.
            const int64_t from = int64_t(double(span) * double(k) / double(n)) - shift;
            const int64_t to = int64_t(double(span) * double(k + 1) / double(n)) - shift;
            if (shift > 0 && to <= 0) continue;  // before the rank's first step
            const size_t c0 = m.columnOf(from);
            const size_t c1 = std::max(c0, m.columnOf(std::max(from, to - 1)));
            for (size_t c = c0; c <= c1; ++c) {
                int64_t& cell = m.cells[row * m.columns + c];
                cell = std::max(cell, r.envelope[k]);
            }
            m.max_bytes = std::max(m.max_bytes, r.envelope[k]);
        }
    }
    return m;
}

int stepAt(const RankDigest& rank, int64_t x) {
    const auto it = std::upper_bound(rank.step_starts.begin(), rank.step_starts.end(), x);
    return it == rank.step_starts.begin() ? -1 : int(it - rank.step_starts.begin()) - 1;
}

}  // namespace memscope
