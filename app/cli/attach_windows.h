#pragma once
// The recordings that attach windows leave in a job's output folder:
//
//   DIR/.memscope-attach/<window>/.memscope-hook/<pid>/   one process's parts
//
// Finishing a window merges each process's parts (finishRecording, as record
// does) and moves the traces into DIR as memscope-<pid>[-rankR][-localL]-<window>.memscope.
// attach finishes its window when it ends; `record --idle` finishes any left
// when the job ends (attach killed, a window open at the job's exit). A lock
// file keeps the two from merging the same window at once.

#include <filesystem>
#include <string>
#include <vector>

namespace memscope::cli {

inline constexpr const char* kAttachFolderName = ".memscope-attach";

struct WindowFinish {
    std::vector<std::filesystem::path> traces;  // moved into DIR
    std::vector<std::string> errors;            // one line each (parts kept where)
    bool found = false;                         // the window's folder existed
};

// Merges window `id` of `dir`; prints the merge's warnings on stderr, tagged.
WindowFinish finishAttachWindow(const std::filesystem::path& dir, const std::string& id,
                                const char* tag);

// Every window folder left in dir (a window still being written by a live
// process is left alone: `busy` pids).
WindowFinish finishLeftWindows(const std::filesystem::path& dir, const char* tag);

}  // namespace memscope::cli
