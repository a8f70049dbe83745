#pragma once
// The last stage of `memscope-cli record`: turn what the processes of a
// recorded command left in the output folder into one trace per process.
//
//   DIR/memscope-<pid>[-rank<R>][-local<L>].memscope   the CUPTI tracer's trace
//   DIR/.memscope-hook/<pid>/hook.json                 the Python hook's phases
//   DIR/.memscope-hook/<pid>/history-NNNN.pickle       allocator history dumps
//   DIR/.memscope-hook/<pid>/cpu-events.bin            CPU allocation log
//   DIR/memscope-<pid>….live.memscope                   record --live's snapshot so far
//
// Each process's parts are merged (recording_merge.h) into its .memscope file
// (written beside, then renamed over the tracer's), and its hook folder is
// removed once the merged trace is safely written. A process whose parts
// cannot be merged keeps them, and the error says so.

#include <string>
#include <vector>

#include "memscope/base/task_context.h"
#include "memscope/open/plugin_registry.h"
#include "memscope/recording/recording_merge.h"

namespace memscope {

inline constexpr const char* kHookFolderName = ".memscope-hook";

struct FinishedTrace {
    std::string path;
    int64_t pid = -1;
    MergeStats stats;
    std::vector<LoadWarning> warnings;
    std::vector<std::string> kept;  // untimed history dumps kept as snapshots beside it
    bool parts_kept = false;        // a part could not be read: the hook folder stays
};

// A process whose parts could not be merged: they stay where they are, for a
// later finishRecording (`memscope-cli record --merge DIR`).
struct UnfinishedProcess {
    int64_t pid = -1;    // -1: the rest, after a cancel
    std::string reason;  // why, naming the file
    std::string kept;    // the folder its parts stay in
};

struct RecordingFinish {
    std::vector<FinishedTrace> traces;  // merged and written
    std::vector<std::string> errors;    // one line per process that failed (reason, where kept)
    std::vector<UnfinishedProcess> unfinished;  // the same failures, as values
    std::vector<int64_t> recorded_nothing;      // processes whose hook ran and found nothing
};

// The name a process's trace gets: memscope-<pid>[-rank<R>][-local<L>].memscope.
std::string recordedTraceName(int64_t pid, int32_t rank, int32_t local_rank);

// The processes whose parts wait in dir's hook folder to be merged, by pid
// (none when the hook folder is not a real folder of this user's).
std::vector<int64_t> unmergedProcesses(const std::string& dir);

// Whether files can be created in `dir` (a file is made and removed there):
// the error names the folder and the reason (a read-only file system, no
// permission, no space).
Result<void> checkFolderWritable(const std::string& dir);

// `registry` must hold the PyTorch snapshot importer (history dumps).
//
// Only what this user made is read or removed: DIR/.memscope-hook and its pid
// folders must be real folders of this user's (a symlink is refused, not
// followed), and a tracer's trace is merged only when it is a regular file of
// this user's, linked once, naming this pid, and (with `not_before_ns`, the
// wall-clock time a live recording started) begun after the recording began.
// Any other is passed over with a warning.
RecordingFinish finishRecording(const std::string& dir, const PluginRegistry& registry,
                                const TaskContext& ctx = {}, int64_t not_before_ns = 0);

// While the job runs (`record --live`): each process's parts merged as they
// are so far, written beside as DIR/memscope-<pid>….live.memscope (replaced
// each time, through a temporary file, so a reader sees a whole trace), for
// `memscope --follow DIR`. Nothing is moved or removed; finishRecording
// replaces each live file by the process's trace. A process whose CUPTI
// tracer writes a trace of its own (followable as it grows) is left to it,
// as is one that has not written its hook.json yet. The live files written.
std::vector<std::string> snapshotRecording(const std::string& dir, const PluginRegistry& registry,
                                           int64_t not_before_ns = 0, const TaskContext& ctx = {});
// "memscope-12.live.memscope" for "memscope-12.memscope".
std::string liveTraceName(const std::string& trace_name);

}  // namespace memscope
