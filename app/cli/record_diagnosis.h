#pragma once
// Why a process of the recorded command has no trace of its own, from what
// the process watch saw (process_watch.h) and what the recording holds: the
// lines `record` prints, each naming the cause and the fix.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "process_watch.h"

namespace memscope::cli {

struct RecordingOutcome {
    std::set<int64_t> recorded;  // processes with a trace of their own
    std::string hook_folder;     // what record put first on PYTHONPATH ("": no hook)
    std::string output_dir;
    bool nothing_recorded = false;  // no trace at all
    bool cpu_capture = false;       // record found the CPU capture library
};

enum class MissCause {
    Isolated,             // python -I
    IgnoreEnvironment,    // python -E
    NoSite,               // python -S
    EnvironmentCleared,   // no MEMSCOPE_HOOK=1
    PythonPathReset,      // PYTHONPATH without the hook folder
    HookRecordedNothing,  // the hook could load: torch imported, but nothing to record
    NotPython,            // LibTorch from C++: only CUDA would have been recorded
    NotExamined,          // its environment could not be read
};

struct Miss {
    WatchedProcess process;
    MissCause cause;
};

// The processes that loaded LibTorch and have no trace, with the reason; a
// process the hook could load in is only listed when nothing was recorded at
// all (a launcher or a helper that imports torch records nothing, rightly).
// Forks that did not exec (DataLoader workers) are their parent's business.
std::vector<Miss> findMisses(const std::vector<WatchedProcess>& processes,
                             const RecordingOutcome& outcome);

// Why a Python process cannot have the hook, if it cannot: flags first, then
// its environment. Also used for processes that did not load LibTorch.
std::optional<MissCause> hookBlocked(const WatchedProcess& p, const std::string& hook_folder);

// The message for one miss: the process, the cause, the fix.
std::string explainMiss(const Miss& miss, const RecordingOutcome& outcome);

// "  PID  command line" for the first `shown` processes that ran (not forks
// that did not exec), and how many more; a note where the hook was blocked.
std::string listProcesses(const std::vector<WatchedProcess>& processes,
                          const std::string& hook_folder, size_t shown = 5);

// A command line for a message: words joined, cut short when long.
std::string commandLine(const std::vector<std::string>& argv);

}  // namespace memscope::cli
