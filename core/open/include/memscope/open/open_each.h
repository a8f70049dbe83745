#pragma once
// Many traces opened one by one on a few threads, each handed to the caller
// and dropped: what a folder of hundreds of ranks needs, where keeping every
// rank's full timeline would take hundreds of times one rank's memory. The
// caller reduces each opened trace to what it keeps (a RankDigest, a row of a
// table) inside `consume`; at most `threads` traces are in memory at once.

#include <functional>
#include <string>
#include <vector>

#include "memscope/base/task_context.h"
#include "memscope/open/open_run.h"

namespace memscope {

struct OpenEachOptions {
    OpenOptions open;
    unsigned threads = 0;  // 0: every hardware thread
};

// Opens every path with openTrace and calls consume(index, result) on the
// worker that opened it, concurrently for different indexes. A file that
// cannot be read reaches consume as its error (naming the file), and the
// others still open. Progress is over the sum of the files' sizes; once
// ctx's cancel is set, the files not yet started reach consume as "cancelled".
void openEach(const std::vector<std::string>& paths, const PluginRegistry& registry,
              const TaskContext& ctx, const OpenEachOptions& options,
              const std::function<void(size_t index, Result<OpenedTrace> opened)>& consume);

}  // namespace memscope
