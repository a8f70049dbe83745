// memscope-cli attach TARGET [--steps N | --seconds S]
// memscope-cli detach TARGET
// memscope-cli top TARGET [--once]
// TARGET: the output folder of a job started with `record --idle` (or made
// attachable with memscope_hook.attachable()), or the pid of one of its
// processes. They talk to the hook's control sockets (control_client.h);
// attach merges the window's traces into the folder when it ends
// (attach_windows.h).
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "attach_windows.h"
#include "cli_common.h"
#include "commands.h"
#include "control_client.h"
#include "memscope/base/units.h"
#include "memscope/recording/recording_folder.h"
#include "record_report.h"

namespace memscope::cli {
namespace {

namespace fs = std::filesystem;

std::atomic<int> g_interrupted{0};

extern "C" void onInterrupt(int sig) {
    g_interrupted.store(sig);
}

void catchInterrupts() {
    struct sigaction sa {};
    sa.sa_handler = onInterrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}

void sleepMs(int ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

std::string windowId() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char text[32];
    std::strftime(text, sizeof(text), "%Y%m%d-%H%M%S", &tm);
    return std::string("attach-") + text + "-" + std::to_string(::getpid());
}

std::string secondsText(double seconds) {
    char text[32];
    std::snprintf(text, sizeof(text), "%g s", seconds);
    return text;
}

std::string processLabel(const JobProcess& p) {
    std::string out = "process " + std::to_string(p.pid);
    if (p.status.rank >= 0) out += " (rank " + std::to_string(p.status.rank) + ")";
    return out;
}

// A traced window's trace name: the process's own, then the window.
fs::path windowTraceName(const fs::path& merged, const std::string& id) {
    return merged.stem().string() + "-" + id + ".memscope";
}

struct AttachOptions {
    std::string target;
    int64_t steps = 0;
    double seconds = 0;
};

int runAttach(const AttachOptions& o) {
    constexpr const char* kTag = "memscope-cli attach";
    auto job = findJob(o.target);
    if (!job) {
        std::fprintf(stderr, "%s: %s\n", kTag, job.message().c_str());
        return 2;
    }
    const fs::path dir = job->front().status.output_dir;
    const std::string id = windowId();
    std::string request = R"({"cmd":"start","window":")" + id + "\"";
    if (o.steps > 0) request += ",\"steps\":" + std::to_string(o.steps);
    // The ranks of a job each open the window at their own next step, and
    // they need not be in the same step when asked: every one gets the same
    // first step, two past the furthest along, so that their windows hold
    // the same steps.
    std::optional<int64_t> from_step;
    if (o.steps > 0 && job->size() > 1) {
        int64_t furthest = 0;
        for (const JobProcess& p : *job)
            furthest = std::max(furthest, p.status.step.value_or(p.status.steps_done));
        from_step = furthest + 2;
        request += ",\"from_step\":" + std::to_string(*from_step);
    }
    if (o.seconds > 0) {
        char text[64];
        std::snprintf(text, sizeof(text), ",\"seconds\":%.17g", o.seconds);
        request += text;
    }
    request += "}";
    catchInterrupts();
    std::vector<JobProcess> started;
    for (const JobProcess& p : *job) {
        auto reply = controlRequest(p.socket, request);
        Result<void> ok = reply ? replyOk(*reply) : Result<void>(reply.error());
        if (!ok) {
            std::fprintf(stderr, "%s: %s: %s\n", kTag, processLabel(p).c_str(),
                         ok.message().c_str());
            continue;
        }
        started.push_back(p);
    }
    if (started.empty()) {
        std::fprintf(stderr, "%s: no process of the job started recording\n", kTag);
        return 1;
    }
    std::string what = o.steps > 0 ? "for " + std::to_string(o.steps) + " step" +
                                         (o.steps == 1 ? "" : "s") +
                                         (from_step ? " from step " + std::to_string(*from_step)
                                                    : std::string(" from the next step's start"))
                       : o.seconds > 0 ? "for " + secondsText(o.seconds)
                                       : "until memscope-cli detach or Ctrl-C";
    std::fprintf(stderr, "%s: recording %zu process%s of %s %s (window %s)\n", kTag, started.size(),
                 started.size() == 1 ? "" : "es", dir.c_str(), what.c_str(), id.c_str());

    // Wait until every process has ended the window (or ended). A process
    // that never ran a step (a launcher that imported torch) keeps its
    // window waiting for a step forever: once another process has ended its
    // window and none is recording, its window is dropped.
    std::vector<bool> finished(started.size(), false);
    std::vector<bool> idle_waiting(started.size(), false);
    bool said_steps = false;
    bool stop_sent = false;
    for (;;) {
        if (g_interrupted.load() != 0 && !stop_sent) {
            stop_sent = true;
            std::fprintf(stderr, "%s: stopping the window\n", kTag);
            for (size_t i = 0; i < started.size(); ++i)
                if (!finished[i]) (void)controlRequest(started[i].socket, R"({"cmd":"stop"})");
        }
        bool all = true;
        for (size_t i = 0; i < started.size(); ++i) {
            if (finished[i]) continue;
            auto reply = controlRequest(started[i].socket, R"({"cmd":"status"})", 3000);
            auto status = reply ? parseStatus(*reply) : Result<ControlStatus>(reply.error());
            if (!status) {
                if (!processAlive(started[i].pid)) {
                    finished[i] = true;  // it exited: its hook finished the window at exit
                    std::fprintf(stderr, "%s: %s ended during the window\n", kTag,
                                 processLabel(started[i]).c_str());
                    continue;
                }
                // Busy (a flush) or gone without exiting yet: ask again.
                all = false;
                continue;
            }
            if (status->window != id) {
                finished[i] = true;
                continue;
            }
            if (!said_steps && status->window_first_step && status->window_last_step) {
                said_steps = true;
                std::fprintf(stderr, "%s: recording steps %lld-%lld\n", kTag,
                             static_cast<long long>(*status->window_first_step),
                             static_cast<long long>(*status->window_last_step));
            }
            idle_waiting[i] = status->window_state == "armed" && status->steps_done == 0 &&
                              !status->step.has_value();
            all = false;
        }
        if (all) break;
        bool one_ended = false, one_recording = false;
        for (size_t i = 0; i < started.size(); ++i) {
            one_ended = one_ended || finished[i];
            one_recording = one_recording || (!finished[i] && !idle_waiting[i]);
        }
        if (one_ended && !one_recording) {
            for (size_t i = 0; i < started.size(); ++i)
                if (!finished[i]) {
                    (void)controlRequest(started[i].socket, R"({"cmd":"stop"})");
                    finished[i] = true;
                }
            break;
        }
        sleepMs(100);
    }
    WindowFinish done = finishAttachWindow(dir, id, kTag);
    if (!done.found) {
        // The job ended with the window open, and `record --idle` merged it
        // first (it holds the lock while it does): its traces are in dir.
        std::error_code ec;
        const std::string suffix = "-" + id + ".memscope";
        for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
            if (it->path().filename().string().ends_with(suffix)) {
                done.found = true;
                done.traces.push_back(it->path());
            }
        std::sort(done.traces.begin(), done.traces.end());
    }
    if (!done.found || (done.traces.empty() && done.errors.empty())) {
        std::fprintf(stderr,
                     "%s: nothing was recorded in window %s (the job ended or the window was "
                     "stopped before its first step)\n",
                     kTag, id.c_str());
        return 1;
    }
    if (!done.traces.empty()) {
        std::printf("memscope: %zu trace%s in %s\n", done.traces.size(),
                    done.traces.size() == 1 ? "" : "s", dir.c_str());
        for (const fs::path& f : done.traces) printRecordedTrace(f);
        std::fflush(stdout);
    }
    for (const std::string& e : done.errors) std::fprintf(stderr, "%s: %s\n", kTag, e.c_str());
    return done.errors.empty() ? 0 : 1;
}

int runDetach(const std::string& target) {
    constexpr const char* kTag = "memscope-cli detach";
    auto job = findJob(target);
    if (!job) {
        std::fprintf(stderr, "%s: %s\n", kTag, job.message().c_str());
        return 2;
    }
    int stopped = 0, failed = 0;
    for (const JobProcess& p : *job) {
        auto reply = controlRequest(p.socket, R"({"cmd":"stop"})");
        Result<void> ok = reply ? replyOk(*reply) : Result<void>(reply.error());
        if (!ok) {
            ++failed;
            std::fprintf(stderr, "%s: %s: %s\n", kTag, processLabel(p).c_str(),
                         ok.message().c_str());
        } else if (reply->find("\"stopped\":null") == std::string::npos) {
            ++stopped;
        }
    }
    std::fprintf(stderr, "%s: %d window%s stopped in %zu process%s%s\n", kTag, stopped,
                 stopped == 1 ? "" : "s", job->size(), job->size() == 1 ? "" : "es",
                 stopped == 0 ? " (none was open)" : " (attach merges them)");
    return failed == 0 ? 0 : 1;
}

std::string bytesOr(const std::optional<int64_t>& v) {
    return v ? formatBytes(*v) : std::string("-");
}

void printFrame(const std::vector<JobProcess>& job) {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char when[32];
    std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
    std::printf("memscope top: %s  %s  %zu process%s\n", job.front().status.output_dir.c_str(),
                when, job.size(), job.size() == 1 ? "" : "es");
    std::printf("%-8s %-5s %-7s %-10s %-11s %-11s %-10s %s\n", "PID", "RANK", "STEP", "PHASE",
                "LIVE", "RESERVED", "TENSORS", "WINDOW");
    for (const JobProcess& p : job) {
        const ControlStatus& s = p.status;
        const bool cuda = s.cuda_live.has_value();
        // GPU: PyTorch's own counters; CPU only: the capture library's count
        // of the c10 CPU allocations alive (no cache: reserved is live).
        const std::string live = cuda ? bytesOr(s.cuda_live) : bytesOr(s.cpu_live);
        const std::string reserved = cuda ? bytesOr(s.cuda_reserved) : bytesOr(s.cpu_live);
        const std::string tensors = s.cpu_tensors ? std::to_string(*s.cpu_tensors) : "-";
        // Between steps: the last step that ended, and the phase says so.
        const std::string step = s.step             ? std::to_string(*s.step)
                                 : s.steps_done > 0 ? std::to_string(s.steps_done - 1)
                                                    : "-";
        const std::string phase = !s.phase.empty()   ? s.phase
                                  : s.step           ? "step"
                                  : s.steps_done > 0 ? "after-step"
                                                     : "-";
        std::printf("%-8d %-5s %-7s %-10s %-11s %-11s %-10s %s\n", int(p.pid),
                    s.rank >= 0 ? std::to_string(s.rank).c_str() : "-", step.c_str(), phase.c_str(),
                    live.c_str(), reserved.c_str(), tensors.c_str(),
                    s.window.empty() ? "-" : (s.window + " (" + s.window_state + ")").c_str());
        std::string categories, modules;
        auto categories_sorted = s.categories;
        std::sort(categories_sorted.begin(), categories_sorted.end(),
                  [](const auto& a, const auto& b) { return a.second > b.second; });
        int64_t known = 0;
        for (const auto& [name, bytes] : categories_sorted) {
            known += bytes;
            if (bytes > 0) categories += "  " + name + " " + formatBytes(bytes);
        }
        const std::optional<int64_t> live_bytes = cuda ? s.cuda_live : s.cpu_live;
        if (live_bytes && *live_bytes > known)
            categories += "  other " + formatBytes(*live_bytes - known);
        for (const auto& [name, bytes] : s.modules)
            modules += "  " + name + " " + formatBytes(bytes);
        if (!categories.empty()) std::printf("         categories:%s\n", categories.c_str());
        if (!modules.empty()) std::printf("         modules:%s\n", modules.c_str());
    }
    const bool any_cuda =
        std::any_of(job.begin(), job.end(), [](const JobProcess& p) { return p.status.cuda_live; });
    std::printf("live: %s\n",
                any_cuda ? "torch.cuda.memory_allocated / memory_reserved (current device)"
                         : "CPU tensors alive (c10 allocator reports, counted in the process; "
                           "CPU memory has no cache: reserved = live)");
    std::printf(
        "categories: the parameters, gradients and optimizer state of the models and optimizers "
        "the hook saw run; other: the rest of live (activations, temporaries, inputs)\n"
        "modules: the model's top-level modules by those bytes; allocations by module are in a "
        "window's trace (memscope-cli attach)\n");
    std::fflush(stdout);
}

int runTop(const std::string& target, bool once, double interval) {
    constexpr const char* kTag = "memscope-cli top";
    catchInterrupts();
    const bool tty = ::isatty(STDOUT_FILENO) != 0;
    for (int frame = 0;; ++frame) {
        auto job = findJob(target, /*categories=*/true);
        if (!job) {
            if (frame > 0) {
                std::fprintf(stderr, "%s: the job ended\n", kTag);
                return 0;
            }
            std::fprintf(stderr, "%s: %s\n", kTag, job.message().c_str());
            return 2;
        }
        if (tty && !once) std::printf("\033[H\033[2J");
        printFrame(*job);
        if (once) return 0;
        for (int waited = 0; waited < int(interval * 1000); waited += 50) {
            if (g_interrupted.load() != 0) return 0;
            sleepMs(50);
        }
    }
}

// Takes an exclusive lock on `file` (created); -1 when it cannot be made.
int lockFile(const fs::path& file) {
    const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return -1;
    while (::flock(fd, LOCK_EX) != 0)
        if (errno != EINTR) {
            ::close(fd);
            return -1;
        }
    return fd;
}

// A window whose process is alive and has not written its hook.json complete:
// still recording (attach merges it when it ends).
bool windowBeingWritten(const fs::path& root) {
    std::error_code ec;
    for (fs::directory_iterator it(root / kHookFolderName, ec), end; !ec && it != end;
         it.increment(ec)) {
        int64_t pid = 0;
        const std::string name = it->path().filename().string();
        auto [p, err] = std::from_chars(name.data(), name.data() + name.size(), pid);
        if (err != std::errc() || pid <= 0 || pid > INT32_MAX || !processAlive(pid_t(pid)))
            continue;
        std::ifstream in(it->path() / "hook.json");
        const std::string text((std::istreambuf_iterator<char>(in)), {});
        if (text.find("\"complete\": true") == std::string::npos) return true;
    }
    return false;
}

}  // namespace

WindowFinish finishAttachWindow(const fs::path& dir, const std::string& id, const char* tag) {
    WindowFinish out;
    const fs::path attach = dir / kAttachFolderName;
    const fs::path root = attach / id;
    std::error_code ec;
    if (!fs::is_directory(root, ec)) return out;
    const int lock = lockFile(attach / (id + ".lock"));
    if (!fs::is_directory(root, ec)) {  // finished by the other side meanwhile
        if (lock >= 0) ::close(lock);
        return out;
    }
    out.found = true;
    RecordingFinish done = finishRecording(root.string(), registry());
    for (const FinishedTrace& t : done.traces) {
        for (const LoadWarning& w : t.warnings)
            std::fprintf(stderr, "%s: warning: %s: %s\n", tag, t.path.c_str(), w.message.c_str());
        const fs::path target = dir / windowTraceName(t.path, id);
        std::error_code moved;
        fs::rename(t.path, target, moved);
        if (moved) {
            out.errors.push_back("cannot move " + t.path + " to " + target.string() + ": " +
                                 moved.message());
            continue;
        }
        out.traces.push_back(target);
        for (const std::string& kept : t.kept) {
            const fs::path to =
                dir / (target.stem().string() + "-" + fs::path(kept).filename().string());
            fs::rename(kept, to, moved);
        }
    }
    for (const std::string& e : done.errors)
        out.errors.push_back(e + "; finish it with: memscope-cli record --merge " + root.string());
    if (done.errors.empty()) fs::remove_all(root, ec);
    fs::remove(attach / (id + ".lock"), ec);
    if (lock >= 0) ::close(lock);
    fs::remove(attach, ec);  // only when empty
    std::sort(out.traces.begin(), out.traces.end());
    return out;
}

WindowFinish finishLeftWindows(const fs::path& dir, const char* tag) {
    WindowFinish out;
    std::vector<std::string> ids;
    std::error_code ec;
    for (fs::directory_iterator it(dir / kAttachFolderName, ec), end; !ec && it != end;
         it.increment(ec))
        if (it->is_directory(ec) && !windowBeingWritten(it->path()))
            ids.push_back(it->path().filename().string());
    std::sort(ids.begin(), ids.end());
    for (const std::string& id : ids) {
        WindowFinish one = finishAttachWindow(dir, id, tag);
        out.found = out.found || one.found;
        out.traces.insert(out.traces.end(), one.traces.begin(), one.traces.end());
        out.errors.insert(out.errors.end(), one.errors.begin(), one.errors.end());
    }
    return out;
}

Command addAttach(CLI::App& parent) {
    auto o = std::make_shared<AttachOptions>();
    CLI::App* app = parent.add_subcommand(
        "attach", "record a window of a running job (started with record --idle)");
    app->add_option("target", o->target,
                    "the job's output folder, or the pid of one of its "
                    "processes")
        ->required();
    auto* steps =
        app->add_option("--steps", o->steps, "record N whole steps, from the next step's start")
            ->check(CLI::Range(int64_t(1), int64_t(1000000)));
    app->add_option("--seconds", o->seconds, "record for S seconds")
        ->check(CLI::Range(0.001, 7 * 86400.0))
        ->excludes(steps);
    app->footer(
        "Without --steps or --seconds it records until `memscope-cli detach TARGET` or Ctrl-C.\n"
        "Every process of the job records the window; each writes one trace into the job's\n"
        "folder, memscope-PID[-rankR][-localL]-WINDOW.memscope, merged when the window ends.\n"
        "Exit codes: 0 when traces were written, 1 when nothing was recorded or a merge failed,\n"
        "2 when no attachable job was found.");
    return {app, [o] { return runAttach(*o); }, {}};
}

Command addDetach(CLI::App& parent) {
    auto target = std::make_shared<std::string>();
    CLI::App* app = parent.add_subcommand("detach", "end the window attach opened in a job");
    app->add_option("target", *target, "the job's output folder, or a pid")->required();
    return {app, [target] { return runDetach(*target); }, {}};
}

Command addTop(CLI::App& parent) {
    auto target = std::make_shared<std::string>();
    auto once = std::make_shared<bool>(false);
    auto interval = std::make_shared<double>(1.0);
    CLI::App* app = parent.add_subcommand(
        "top", "a running job's memory, live: step, phase, live and reserved bytes per process");
    app->add_option("target", *target, "the job's output folder, or a pid")->required();
    app->add_flag("--once", *once, "print one frame and exit");
    app->add_option("--interval", *interval, "seconds between frames (default 1)")
        ->check(CLI::Range(0.1, 3600.0));
    return {app, [=] { return runTop(*target, *once, *interval); }, {}};
}

}  // namespace memscope::cli
