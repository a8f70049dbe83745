#pragma once
// What `record` does and says once the command has ended: each process's
// parts merged into its trace, the traces summarized, and, where something
// is missing, one message that says what and why: parts kept by a merge that
// failed (and `record --merge DIR` to finish it), processes that imported
// torch but were not recorded, or which processes ran when none did.

#include <filesystem>
#include <string>
#include <vector>

#include "process_watch.h"
#include "record_report.h"

namespace memscope::cli {

struct RecordedRun {
    std::filesystem::path dir;  // absolute
    bool created_dir = false;   // by this run: removed again when it stays empty
    std::vector<std::string> command;
    std::string hook_folder;  // on the command's PYTHONPATH ("": no Python hook)
    bool cpu_capture = false;
    std::vector<WatchedProcess> processes;  // what the process watch saw
    DirectoryState before;                  // the trace files before the run
    int64_t started_wall_ns = 0;            // when the run began (wall clock)
    std::string apply_policy;               // record --apply POLICY ("": none)
};

// Finishes the recording and reports it; returns record's exit code: the
// command's own, else kRecordingFailed when a merge failed, else 0.
int finishRecordedRun(const RecordedRun& run, int command_exit);

// The same for `record --idle`: the windows attach left unmerged (attach
// killed, a job that exited mid-window) are merged; what the windows wrote is
// listed. Returns the command's exit code, else kRecordingFailed when a merge
// failed, else 0.
int finishIdleRun(const RecordedRun& run, int command_exit);

// `record --merge DIR`: finishes what a run left unmerged in DIR. 0 when all
// of it was merged, kRecordingFailed when something could not be,
// kMergeUsageError when DIR is missing or holds nothing to merge.
int mergeLeftParts(const std::filesystem::path& dir);

}  // namespace memscope::cli
