#pragma once
// A multi-rank run as the per-rank table, the imbalance and the Ranks view
// see it: one RankDigest per rank that could be read, and the ranks that
// could not, with why (open_ranks.h fills it from a folder).

#include <string>
#include <vector>

#include "memscope/base/task_context.h"
#include "memscope/ranks/rank_digest.h"

namespace memscope {

struct RankFailure {
    std::string path;
    std::string message;  // names the file and what is wrong with it
};

struct RankRun {
    std::string path;  // the folder, as given
    // The script the ranks ran ("train.py", from their recorded names), else
    // the folder's name.
    std::string name;
    std::vector<RankDigest> ranks;  // in rank order (sortRanks)
    std::vector<RankFailure> failures;
    std::vector<LoadWarning> warnings;  // every rank's, prefixed by its name
};

}  // namespace memscope
