#pragma once
// The Ranks view's heat map: one row per rank, one column per slice of time,
// each cell the most live bytes of that rank in that slice, from the ranks'
// envelopes. Ranks' clocks need not agree, so each row's time starts at its
// own origin: its first step where every rank has steps (the ranks aligned
// by step), else its first event. The cells keep the envelope's maxima: a
// rank's row peaks at its peak (unless the peak came before its first step).

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "memscope/ranks/rank_digest.h"

namespace memscope {

struct RankHeatMap {
    size_t rows = 0;
    size_t columns = 0;
    int64_t duration = 0;          // the longest rank's span from its origin (Event::time units)
    bool by_step = false;          // the origins are the ranks' first steps
    std::vector<int64_t> origins;  // per row, the Event::time of t = 0
    std::vector<int64_t> cells;    // rows x columns, row-major; -1 where the rank had ended
    int64_t max_bytes = 0;

    int64_t at(size_t row, size_t column) const { return cells[row * columns + column]; }
    // The column holding time t since a row's origin.
    size_t columnOf(int64_t t) const;
};

RankHeatMap rankHeatMap(std::span<const RankDigest> ranks, size_t columns);

// The ordinal of the step of `rank` in force at Event::time x, -1 before
// its first step or without steps.
int stepAt(const RankDigest& rank, int64_t x);

}  // namespace memscope
