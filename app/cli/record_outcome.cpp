#include "record_outcome.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>

#include "attach_windows.h"
#include "cli_common.h"
#include "memscope/base/file_io.h"
#include "memscope/base/text_escape.h"
#include "memscope/recording/recording_folder.h"
#include "memscope_cupti/record_env.h"
#include "record_apply.h"
#include "record_diagnosis.h"
#include "record_exit.h"

namespace memscope::cli {
namespace {

namespace fs = std::filesystem;
namespace env = memscope::cupti::env;

constexpr const char* kTag = "memscope-cli record";

// Merges each process's parts into its trace; the merge's warnings printed.
RecordingFinish finish(const fs::path& dir, int64_t not_before_ns = 0) {
    RecordingFinish done = finishRecording(dir.string(), registry(), {}, not_before_ns);
    for (const FinishedTrace& t : done.traces) {
        for (const LoadWarning& w : t.warnings)
            std::fprintf(stderr, "%s: warning: %s: %s\n", kTag, terminalText(t.path).c_str(),
                         terminalText(w.message).c_str());
        for (const std::string& kept : t.kept)
            std::fprintf(stderr, "%s: allocator history kept as %s\n", kTag, kept.c_str());
    }
    return done;
}

void printTraces(const fs::path& dir, const std::vector<fs::path>& files) {
    std::printf("memscope: %zu trace%s in %s\n", files.size(), files.size() == 1 ? "" : "s",
                dir.c_str());
    for (const fs::path& f : files) printRecordedTrace(f);
    std::printf("open them with: memscope %s   or: memscope-cli summary %s/*.memscope\n",
                dir.c_str(), dir.c_str());
    std::fflush(stdout);
}

// The one message for parts a merge could not finish: why, what is kept where,
// and how to finish.
void printUnfinished(const fs::path& dir, const RecordingFinish& done, size_t traces_written) {
    auto reason = [](const UnfinishedProcess& u) {
        const std::string process = "process " + std::to_string(u.pid);
        return u.pid < 0 || u.reason.starts_with(process) ? u.reason : process + ": " + u.reason;
    };
    bool no_space = false;
    std::string text = std::string(kTag) + ": the recording could not be finished";
    if (done.unfinished.size() == 1) {
        text += ": " + reason(done.unfinished.front());
    } else {
        text += " for " + std::to_string(done.unfinished.size()) + " processes:";
        for (const UnfinishedProcess& u : done.unfinished) text += "\n  " + reason(u);
    }
    for (const UnfinishedProcess& u : done.unfinished)
        no_space = no_space || u.reason.find(std::strerror(ENOSPC)) != std::string::npos;
    text += "\n  kept:";
    for (const UnfinishedProcess& u : done.unfinished)
        text += u.pid >= 0 ? "\n    the parts of process " + std::to_string(u.pid) + " in " + u.kept
                           : "\n    the remaining processes' parts in " + u.kept;
    if (traces_written > 0)
        text += "\n    " + std::to_string(traces_written) + " finished trace" +
                (traces_written == 1 ? "" : "s") + " in " + dir.string() + " (listed above)";
    text += std::string("\n  to finish it once ") +
            (no_space ? "there is room on the disk" : "that is fixed") +
            ": memscope-cli record --merge " + dir.string() + "\n";
    std::fputs(text.c_str(), stderr);
}

std::optional<int64_t> pidOfTraceName(const std::string& name) {
    const std::string_view prefix = env::kFilePrefix;
    if (!name.starts_with(prefix)) return std::nullopt;
    int64_t pid = 0;
    const char* begin = name.data() + prefix.size();
    auto [end, ec] = std::from_chars(begin, name.data() + name.size(), pid);
    if (ec != std::errc() || end == begin) return std::nullopt;
    return pid;
}

RecordingOutcome outcomeOf(const RecordedRun& run, const RecordingFinish& done,
                           const std::vector<fs::path>& files) {
    RecordingOutcome o;
    o.hook_folder = run.hook_folder;
    o.output_dir = run.dir.string();
    o.cpu_capture = run.cpu_capture;
    o.nothing_recorded = files.empty() && done.unfinished.empty();
    for (const FinishedTrace& t : done.traces) o.recorded.insert(t.pid);
    for (const UnfinishedProcess& u : done.unfinished) o.recorded.insert(u.pid);
    for (const fs::path& f : files)
        if (auto pid = pidOfTraceName(f.filename().string())) o.recorded.insert(*pid);
    return o;
}

void printNothingRecorded(const RecordedRun& run, const std::vector<Miss>& misses) {
    if (!misses.empty()) {
        std::fprintf(stderr, "%s: nothing was recorded; no trace written to %s\n", kTag,
                     run.dir.c_str());
        return;
    }
    std::string ran = listProcesses(run.processes, run.hook_folder);
    if (ran.empty()) ran = "\n  " + commandLine(run.command) + "   (it ended before it was seen)";
    std::fprintf(stderr,
                 "%s: nothing was recorded: no process of the command imported torch, and none "
                 "initialized CUDA or used NVTX; no trace written to %s. What ran:%s\n",
                 kTag, run.dir.c_str(), ran.c_str());
}

}  // namespace

int finishRecordedRun(const RecordedRun& run, int command_exit) {
    std::fflush(stdout);
    // Read before the merge removes the hook's files.
    const bool applied = run.apply_policy.empty() || reportApplied(run.dir, run.apply_policy);
    const RecordingFinish done = finish(run.dir, run.started_wall_ns);
    const std::vector<fs::path> files = newTraceFiles(run.dir, run.before);
    const RecordingOutcome outcome = outcomeOf(run, done, files);
    const std::vector<Miss> misses = findMisses(run.processes, outcome);

    if (!files.empty()) printTraces(run.dir, files);
    if (outcome.nothing_recorded) {
        // Leave no empty folder behind for a run that recorded nothing.
        std::error_code ec;
        if (run.created_dir) fs::remove(run.dir, ec);  // only removes it if empty
        printNothingRecorded(run, misses);
    }
    for (const Miss& m : misses)
        std::fprintf(stderr, "%s: %s\n", kTag, explainMiss(m, outcome).c_str());
    if (!done.unfinished.empty()) printUnfinished(run.dir, done, files.size());
    // The command's own exit code comes first; a failed merge is ours.
    if (command_exit != 0) return command_exit;
    if (!done.unfinished.empty()) return kRecordingFailed;
    return applied ? 0 : kApplyRefused;
}

int finishIdleRun(const RecordedRun& run, int command_exit) {
    std::fflush(stdout);
    const WindowFinish left = finishLeftWindows(run.dir, kTag);
    for (const std::string& e : left.errors) std::fprintf(stderr, "%s: %s\n", kTag, e.c_str());
    std::error_code ec;
    fs::remove(run.dir / ".memscope-control", ec);  // only when empty
    fs::remove(run.dir / kHookFolderName, ec);
    const std::vector<fs::path> files = newTraceFiles(run.dir, run.before);
    if (!files.empty()) {
        printTraces(run.dir, files);
    } else {
        std::fprintf(stderr,
                     "%s: --idle: no window was recorded; no trace written to %s (record one "
                     "while the job runs: memscope-cli attach %s --steps N)\n",
                     kTag, run.dir.c_str(), run.dir.c_str());
        if (run.created_dir) fs::remove(run.dir, ec);
    }
    if (command_exit != 0) return command_exit;
    return left.errors.empty() ? 0 : kRecordingFailed;
}

int mergeLeftParts(const fs::path& given) {
    std::error_code ec;
    const fs::path dir = fs::absolute(given, ec).lexically_normal();
    if (!fs::exists(dir, ec)) {
        std::fprintf(stderr, "%s --merge: %s does not exist\n", kTag, dir.c_str());
        return kMergeUsageError;
    }
    if (!fs::is_directory(dir, ec)) {
        std::fprintf(stderr, "%s --merge: %s is not a folder\n", kTag, dir.c_str());
        return kMergeUsageError;
    }
    // A hook folder that is a symlink or another user's is not read (nor
    // anything in it removed): said as such, not as "nothing to merge".
    const fs::path hooks = dir / kHookFolderName;
    if (fs::exists(fs::symlink_status(hooks, ec)))
        if (auto own = checkOwnFolder(hooks.string()); !own) {
            std::fprintf(stderr, "%s --merge: %s; nothing was merged or removed\n", kTag,
                         own.message().c_str());
            return kRecordingFailed;
        }
    // Windows of attach or memscope.start() left unmerged (those still being
    // written by a live process are left alone).
    const WindowFinish windows = finishLeftWindows(dir, kTag);
    for (const std::string& e : windows.errors)
        std::fprintf(stderr, "%s --merge: %s\n", kTag, e.c_str());
    if (windows.found && unmergedProcesses(dir.string()).empty()) {
        if (!windows.traces.empty()) printTraces(dir, windows.traces);
        return windows.errors.empty() ? 0 : kRecordingFailed;
    }
    if (unmergedProcesses(dir.string()).empty()) {
        std::fprintf(stderr,
                     "%s --merge: nothing to merge in %s: it holds no parts of a recording (%s/"
                     "PID); either they were merged already or this is not a folder that "
                     "`memscope-cli record` wrote to\n",
                     kTag, dir.c_str(), kHookFolderName);
        return kMergeUsageError;
    }
    if (auto writable = checkFolderWritable(dir.string()); !writable) {
        std::fprintf(stderr, "%s --merge: %s; the parts stay as they are\n", kTag,
                     terminalText(writable.message()).c_str());
        return kRecordingFailed;
    }
    const RecordingFinish done = finish(dir);
    std::vector<fs::path> files;
    for (const FinishedTrace& t : done.traces) files.push_back(t.path);
    std::sort(files.begin(), files.end());
    if (!files.empty()) printTraces(dir, files);
    if (!done.unfinished.empty()) {
        printUnfinished(dir, done, files.size());
        return kRecordingFailed;
    }
    if (files.empty())
        std::fprintf(stderr,
                     "%s --merge: the parts in %s held nothing to record; no trace written\n", kTag,
                     dir.c_str());
    return 0;
}

}  // namespace memscope::cli
