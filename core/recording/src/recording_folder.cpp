#include "memscope/recording/recording_folder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include "memscope/base/file_io.h"
#include "memscope/format/native_format.h"
#include "memscope/recording/hook_log.h"
#include "memscope/recording/recorded_range.h"

namespace memscope {
namespace fs = std::filesystem;
namespace {

std::optional<int64_t> pidOfFolder(const fs::path& folder) {
    const std::string name = folder.filename().string();
    int64_t pid = 0;
    auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (ec != std::errc() || end != name.data() + name.size() || pid <= 0) return std::nullopt;
    return pid;
}

// Whether a file in the output folder can be this run's own: a regular file
// (lstat: a symlink to another run's trace is not), this user's, and linked
// once (not a hard link to a trace kept elsewhere). Else why not.
std::optional<std::string> notOwnFile(const fs::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return std::string("it cannot be read");
    if (S_ISLNK(st.st_mode)) return std::string("it is a symlink");
    if (!S_ISREG(st.st_mode)) return std::string("it is not a regular file");
    if (st.st_uid != ::geteuid()) return std::string("it belongs to another user");
    if (st.st_nlink != 1) return std::string("it is a hard link to another file");
    return std::nullopt;
}

// The tracer's trace of this process, if it wrote one: memscope-<pid>.memscope
// or memscope-<pid>-rank…/-local….memscope. A file of that name that cannot
// be this run's (notOwnFile) is passed over, with a warning.
std::optional<fs::path> tracerFile(const fs::path& dir, int64_t pid, const TaskContext& ctx) {
    const std::string exact = "memscope-" + std::to_string(pid) + ".memscope";
    const std::string prefix = "memscope-" + std::to_string(pid) + "-";
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name != exact && !(name.starts_with(prefix) && name.ends_with(".memscope"))) continue;
        if (const auto why = notOwnFile(it->path())) {
            ctx.warn({WarningKind::Other,
                      it->path().string() + " was not merged as process " + std::to_string(pid) +
                          "'s trace: " + *why,
                      1});
            continue;
        }
        return it->path();
    }
    return std::nullopt;
}

// A trace that names another process, or was begun before the recording
// started (one an earlier process of the same pid left), is not this
// process's: why, or nothing.
std::optional<std::string> notThisProcess(const Trace& trace, int64_t pid, int64_t not_before_ns) {
    if (trace.metadata.pid > 0 && trace.metadata.pid != pid)
        return "it is process " + std::to_string(trace.metadata.pid) + "'s";
    if (not_before_ns > 0)
        if (const std::string* wall = trace.metadata.property("clock.wall_ns")) {
            int64_t begun = 0;
            const auto [end, err] =
                std::from_chars(wall->data(), wall->data() + wall->size(), begun);
            // A second of slack for the wall clock stepping.
            if (err == std::errc() && begun < not_before_ns - int64_t(1'000'000'000))
                return std::string(
                    "it was begun before this recording started (an earlier "
                    "process of the same pid left it)");
        }
    return std::nullopt;
}

// Version 2 hook files keep their phases in the append-only log: resolved into
// the steps users count, with the phases still open at exit. Also what part of
// the run was recorded.
Result<void> resolveLoggedPhases(const fs::path& folder, HookSidecar& hook,
                                 RecordedRangeSpec& range, const TaskContext& ctx) {
    std::vector<HookNvtxRange> nvtx_ranges;
    if (hook.log_file) {
        auto log = readHookLog((folder / *hook.log_file).string());
        if (!log) return log.error();
        if (log->damaged_lines > 0)
            ctx.warn({WarningKind::SkippedRecords,
                      std::to_string(log->damaged_lines) +
                          " lines of the hook's phase log were not readable and were left out",
                      log->damaged_lines});
        if (log->cut_short)
            ctx.warn({WarningKind::DamagedTail,
                      "the hook's phase log ends in a line cut short (the process died while "
                      "writing it); that line is left out",
                      1});
        hook.phases = resolveHookPhases(log->phases, hook.open_phases);
        nvtx_ranges = std::move(log->nvtx_ranges);
        if (log->bad_module_scopes > 0)
            ctx.warn({WarningKind::SkippedRecords,
                      std::to_string(log->bad_module_scopes) +
                          " module scopes of the hook's log were malformed and were left out",
                      log->bad_module_scopes});
        hook.modules = std::move(log->modules);
        hook.module_scopes = std::move(log->module_scopes);
        if (log->bad_tensor_roles > 0)
            ctx.warn({WarningKind::SkippedRecords,
                      std::to_string(log->bad_tensor_roles) +
                          " tensor roles of the hook's log were malformed and were left out",
                      log->bad_tensor_roles});
        hook.tensor_roles = std::move(log->tensor_roles);
        hook.ops = std::move(log->ops);
    } else if (!hook.open_phases.empty()) {
        hook.phases = resolveHookPhases({}, hook.open_phases);
    }
    range.steps = hook.capture_steps;
    range.nvtx = hook.capture_nvtx;
    if (range.nvtx)
        for (const HookNvtxRange& r : nvtx_ranges)
            if (r.name == *range.nvtx) {
                range.nvtx_hint = std::pair{r.start_ns, r.end_ns};
                break;
            }
    return {};
}

// How a process's parts are merged: for good at the end (the hook folder
// goes afterwards, untimed dumps are kept beside the trace), or as a live
// snapshot while the job runs (nothing moved, written to the live name).
enum class MergeMode : uint8_t { Final, Live };

// DIR/memscope-<pid>….live.memscope, the live snapshot of a trace's name.
fs::path liveFile(const fs::path& trace) {
    return trace.parent_path() / (trace.stem().string() + ".live.memscope");
}

Result<FinishedTrace> finishProcess(const fs::path& dir, const fs::path& folder, int64_t pid,
                                    const PluginRegistry& registry, const TaskContext& ctx,
                                    int64_t not_before_ns, bool& nothing_recorded,
                                    MergeMode mode = MergeMode::Final) {
    FinishedTrace done;
    done.pid = pid;
    TaskContext local = ctx;
    local.warnings = &done.warnings;

    auto hook = readHookSidecar((folder / "hook.json").string());
    if (!hook) return hook.error();
    RecordedRangeSpec range;
    if (auto resolved = resolveLoggedPhases(folder, *hook, range, local); !resolved)
        return resolved.error();
    auto tracer = tracerFile(dir, pid, local);
    nothing_recorded = !hook->recordedAnything();
    if (nothing_recorded) return done;
    // The tracer writes its own trace chunk by chunk: that one is followed.
    if (mode == MergeMode::Live && tracer) return done;

    RecordingParts parts;
    std::vector<HookHistoryDump> read_dumps;  // parallel to parts.histories
    for (const HookHistoryDump& h : hook->histories) {
        const std::string path = (folder / h.file).string();
        auto dump = registry.load(path, local);
        if (!dump) {
            // A dump cut short (the process was killed while writing it): the
            // other parts still make a trace; this one stays in the folder.
            local.warn({WarningKind::SkippedRecords,
                        "an allocator history dump could not be read and was left out (kept in " +
                            folder.string() + "): " + dump.message(),
                        1});
            done.parts_kept = true;
            continue;
        }
        parts.histories.push_back({std::move(*dump), h.cleared_before});
        read_dumps.push_back(h);
    }
    if (hook->cpu_events_file) {
        const fs::path log = folder / *hook->cpu_events_file;
        std::error_code ec;
        if (fs::exists(log, ec)) {
            auto cpu = readCaptureLogWithOps(log.string(), local);
            if (!cpu) return cpu.error();
            parts.cpu = std::move(cpu->allocations);
            parts.capture_ops = std::move(cpu->ops);
        }
    }
    if (tracer) {
        auto cupti = importNativeTrace(tracer->string(), local);
        if (!cupti) return cupti.error();
        if (const auto why = notThisProcess(*cupti, pid, not_before_ns)) {
            local.warn({WarningKind::Other,
                        tracer->string() + " was not merged as process " + std::to_string(pid) +
                            "'s trace: " + *why,
                        1});
            tracer.reset();
        } else {
            parts.cupti = std::move(*cupti);
        }
    }
    const int32_t rank = hook->rank, local_rank = hook->local_rank;
    parts.hook = std::move(*hook);

    std::vector<fs::path> untimed;  // histories the merge cannot place in time
    for (size_t i = 0; i < parts.histories.size(); ++i)
        if (parts.histories[i].trace.metadata.time_base != TimeBase::Nanoseconds)
            untimed.push_back(folder / read_dumps[i].file);
    auto merged = mergeRecording(std::move(parts), local, &done.stats);
    if (!merged) return makeError("process " + std::to_string(pid) + ": " + merged.message());
    if (!range.empty()) {
        // The whole trace stays when the range never began: the warning says why.
        if (auto cut = applyRecordedRange(*merged, range, local); !cut)
            local.warn({WarningKind::Other, cut.message() + "; the trace holds the whole run", 1});
    }
    const fs::path final_out = tracer ? *tracer : dir / recordedTraceName(pid, rank, local_rank);
    const fs::path out = mode == MergeMode::Live ? liveFile(final_out) : final_out;
    // Kept as snapshots of their own, named after the trace, before the hook
    // folder goes.
    for (size_t i = 0; mode == MergeMode::Final && i < untimed.size(); ++i) {
        const fs::path kept =
            dir / (out.stem().string() + "-history-" + std::to_string(i + 1) + ".pickle");
        std::error_code ec;
        fs::rename(untimed[i], kept, ec);
        if (ec) return makeError("cannot keep " + untimed[i].string() + ": " + ec.message());
        done.kept.push_back(kept.string());
    }
    auto written = writeFileReplacing(
        out.string(), [&](const std::string& tmp) { return writeNativeTrace(*merged, tmp); });
    if (!written) return written.error();
    done.path = out.string();
    return done;
}

// Every live snapshot of process `pid` in dir (memscope-<pid>[-rank…].live.memscope):
// gone once the process is finished, merged or not.
void removeLiveFiles(const fs::path& dir, int64_t pid) {
    const std::string prefix = "memscope-" + std::to_string(pid);
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        std::error_code ignored;
        if (name.starts_with(prefix) && name.ends_with(".live.memscope") &&
            (name[prefix.size()] == '-' || name[prefix.size()] == '.') &&
            it->is_regular_file(ignored) && !it->is_symlink(ignored))
            fs::remove(it->path(), ignored);
    }
}

// The hook folder's per-process folders, by pid.
std::vector<std::pair<int64_t, fs::path>> processFolders(const fs::path& hooks) {
    std::vector<std::pair<int64_t, fs::path>> folders;
    std::error_code ec;
    if (!checkOwnFolder(hooks.string())) return folders;  // not followed
    for (fs::directory_iterator it(hooks, ec), end; !ec && it != end; it.increment(ec)) {
        std::error_code ignored;
        if (!it->is_directory(ignored) || it->is_symlink(ignored)) continue;
        if (auto pid = pidOfFolder(it->path())) folders.emplace_back(*pid, it->path());
    }
    std::sort(folders.begin(), folders.end());
    return folders;
}

}  // namespace

std::vector<int64_t> unmergedProcesses(const std::string& dir) {
    std::vector<int64_t> pids;
    for (const auto& [pid, folder] : processFolders(fs::path(dir) / kHookFolderName))
        pids.push_back(pid);
    return pids;
}

Result<void> checkFolderWritable(const std::string& dir) {
    std::string probe = (fs::path(dir) / ".memscope-write-test-XXXXXX").string();
    const int fd = ::mkstemp(probe.data());
    if (fd < 0) return makeError("cannot write to the folder " + dir + ": " + std::strerror(errno));
    // A byte too: a full file system still lets an empty file be made.
    const char byte = 0;
    const bool wrote = ::write(fd, &byte, 1) == 1 && ::fsync(fd) == 0;
    const int err = errno;
    ::close(fd);
    ::unlink(probe.c_str());
    if (!wrote) return makeError("cannot write to the folder " + dir + ": " + std::strerror(err));
    return {};
}

std::string recordedTraceName(int64_t pid, int32_t rank, int32_t local_rank) {
    std::string name = "memscope-" + std::to_string(pid);
    if (rank >= 0) name += "-rank" + std::to_string(rank);
    if (local_rank >= 0) name += "-local" + std::to_string(local_rank);
    return name + ".memscope";
}

std::string liveTraceName(const std::string& trace_name) {
    return liveFile(fs::path(trace_name)).filename().string();
}

std::vector<std::string> snapshotRecording(const std::string& dir_text,
                                           const PluginRegistry& registry, int64_t not_before_ns,
                                           const TaskContext& ctx) {
    std::vector<std::string> written;
    const fs::path dir(dir_text);
    const fs::path hooks = dir / kHookFolderName;
    if (!checkOwnFolder(hooks.string())) return written;
    for (const auto& [pid, folder] : processFolders(hooks)) {
        if (ctx.cancelled() || !checkOwnFolder(folder.string())) continue;
        // A process that has not written its hook.json yet (before its first
        // step) has nothing to show.
        std::error_code ec;
        if (!fs::is_regular_file(folder / "hook.json", ec)) continue;
        bool nothing = false;
        TaskContext quiet;  // a snapshot's warnings (a log line cut mid-write) are expected
        quiet.cancel = ctx.cancel;
        auto done = finishProcess(dir, folder, pid, registry, quiet, not_before_ns, nothing,
                                  MergeMode::Live);
        if (done && !done->path.empty()) written.push_back(done->path);
    }
    return written;
}

RecordingFinish finishRecording(const std::string& dir_text, const PluginRegistry& registry,
                                const TaskContext& ctx, int64_t not_before_ns) {
    RecordingFinish result;
    const fs::path dir(dir_text);
    const fs::path hooks = dir / kHookFolderName;
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(hooks, ec))) return result;
    // Only a folder this user made is read, and only in it is anything
    // removed: a symlink planted there would point the merge at another
    // folder, and its removals too.
    if (auto own = checkOwnFolder(hooks.string()); !own) {
        result.errors.push_back(own.message() + "; nothing in it was merged or removed");
        result.unfinished.push_back({-1, own.message(), hooks.string()});
        return result;
    }

    for (const auto& [pid, folder] : processFolders(hooks)) {
        if (auto own = checkOwnFolder(folder.string()); !own) {
            result.errors.push_back(own.message() + "; not merged, nothing removed");
            result.unfinished.push_back({pid, own.message(), folder.string()});
            continue;
        }
        if (ctx.cancelled()) {
            result.errors.push_back("cancelled; the remaining processes' parts are kept in " +
                                    hooks.string());
            result.unfinished.push_back({-1, "cancelled", hooks.string()});
            break;
        }
        bool nothing = false;
        auto done = finishProcess(dir, folder, pid, registry, ctx, not_before_ns, nothing);
        removeLiveFiles(dir, pid);
        if (!done) {
            result.errors.push_back(done.message() + " (its parts are kept in " + folder.string() +
                                    ")");
            result.unfinished.push_back({pid, done.message(), folder.string()});
            continue;
        }
        std::error_code removed;
        if (!done->parts_kept) fs::remove_all(folder, removed);
        if (nothing)
            result.recorded_nothing.push_back(pid);
        else
            result.traces.push_back(std::move(*done));
    }
    fs::remove(hooks, ec);  // only when empty
    return result;
}

}  // namespace memscope
