#pragma once
// Rank identity across the files of one multi-rank run, checked in one place
// (issue 64, class 5): two files that claim one rank are both kept, named
// apart and warned about, never merged or dropped silently; a part that does
// not know its rank (a MemoryViz page, a launcher) is never ranked beside
// the ranks by any front end.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "memscope/base/task_context.h"
#include "memscope/ranks/rank_run.h"

namespace memscope {

// Whether a part counts as a rank of its run: it knows its rank, or no part
// of the run does (a folder of runs without ranks is compared by position).
// `any_ranked`: whether any part of the run knows its rank.
bool countsAsRank(int32_t rank, bool any_ranked);
bool anyRanked(std::span<const int32_t> ranks);

// One warning per rank that several files claim: "rank 0 is claimed by 2
// files: a.memscope, b.memscope; each is shown by its file".
// `ranks` and `paths` are parallel.
std::vector<LoadWarning> duplicateRankWarnings(std::span<const int32_t> ranks,
                                               std::span<const std::string> paths);

// The check openRanks makes: ranks claimed twice are named apart by their
// files ("rank 0 (a.memscope)") and the run's warnings say so.
void checkRankIdentity(RankRun& run);

}  // namespace memscope
