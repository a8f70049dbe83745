#pragma once
// A folder of per-rank traces opened as a multi-rank run in bounded memory:
// every rank is opened on a pool of worker threads, reduced to its RankDigest
// and dropped, so that memory grows with the digests (kilobytes) and not with
// the ranks' traces. A rank that cannot be read is reported and the others
// open. The full timeline of a rank is opened again (openRun, openTrace) only
// for the ranks the user looks into.

#include <string>
#include <vector>

#include "memscope/base/task_context.h"
#include "memscope/open/open_run.h"
#include "memscope/open/plugin_registry.h"
#include "memscope/ranks/rank_run.h"

namespace memscope {

// The traces of `folder` (traceFilesIn), each opened and reduced on `threads`
// workers (0: every hardware thread). Errors: not a folder, no trace in it,
// cancelled, or no rank readable at all (the first failure's message).
Result<RankRun> openRanks(const std::string& folder, const PluginRegistry& registry,
                          const TaskContext& ctx = {}, unsigned threads = 0);

// The ranks of a folder opened whole (openRun): each part reduced to its
// digest, the run named by the script its ranks ran where they agree. Empty
// (no ranks) unless `run` is a folder of at least two parts with timelines.
RankRun ranksOfRun(const OpenedRun& run);

}  // namespace memscope
