#include "memscope/ranks/rank_identity.h"

#include <algorithm>
#include <filesystem>
#include <map>

namespace memscope {

bool countsAsRank(int32_t rank, bool any_ranked) {
    return !any_ranked || rank >= 0;
}

bool anyRanked(std::span<const int32_t> ranks) {
    return std::any_of(ranks.begin(), ranks.end(), [](int32_t r) { return r >= 0; });
}

std::vector<LoadWarning> duplicateRankWarnings(std::span<const int32_t> ranks,
                                               std::span<const std::string> paths) {
    std::map<int32_t, std::vector<size_t>> claims;
    for (size_t i = 0; i < ranks.size() && i < paths.size(); ++i)
        if (ranks[i] >= 0) claims[ranks[i]].push_back(i);
    std::vector<LoadWarning> out;
    for (const auto& [rank, files] : claims) {
        if (files.size() < 2) continue;
        std::string message = "rank " + std::to_string(rank) + " is claimed by " +
                              std::to_string(files.size()) + " files: ";
        for (size_t k = 0; k < files.size(); ++k)
            message += (k ? ", " : "") + std::filesystem::path(paths[files[k]]).filename().string();
        message += "; each is shown by its file";
        out.push_back({WarningKind::Other, std::move(message), files.size()});
    }
    return out;
}

void checkRankIdentity(RankRun& run) {
    std::vector<int32_t> ranks;
    std::vector<std::string> paths;
    for (const RankDigest& r : run.ranks) {
        ranks.push_back(r.rank);
        paths.push_back(r.path);
    }
    std::vector<LoadWarning> duplicates = duplicateRankWarnings(ranks, paths);
    if (duplicates.empty()) return;
    std::map<int32_t, size_t> claims;
    for (int32_t r : ranks)
        if (r >= 0) ++claims[r];
    for (RankDigest& r : run.ranks)
        if (r.rank >= 0 && claims[r.rank] > 1)
            r.name = "rank " + std::to_string(r.rank) + " (" +
                     std::filesystem::path(r.path).filename().string() + ")";
    run.warnings.insert(run.warnings.begin(), std::make_move_iterator(duplicates.begin()),
                        std::make_move_iterator(duplicates.end()));
}

}  // namespace memscope
