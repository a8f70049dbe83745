#pragma once
// The recorded ops in a merged trace: the capture library's (at::RecordFunction,
// cpu-events.bin) or the hook's dispatch mode's (log.jsonl), their names
// interned into the trace's strings, into Trace::ops with source Recorded.

#include <cstddef>

#include "memscope/model/trace.h"
#include "memscope/recording/capture_log.h"

namespace memscope {

struct RecordedOpsStats {
    size_t scopes = 0;
    size_t unknown_name = 0;  // scopes naming an op the log never named: left out
};

// Adds the scopes of named ops, sorted by start (an enclosing scope before
// the ones it holds); exact duplicates are one. Nothing happens without scopes.
RecordedOpsStats addRecordedOps(Trace& trace, const CapturedOps& ops);

}  // namespace memscope
