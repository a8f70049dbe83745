// memscope-bench-hostile [--small] [--cli PATH] [--timeout S] [--mem-mb M] [--no-cancel] [FOLDER]
// Generates the hostile corpus of issue 14 and runs `memscope-cli summary` on
// each case in a child with a time limit and an address-space cap, then prints
// case, file size, peak RSS, wall time and outcome. Then: the truncation race
// (a file cut while it loads, 20 runs at several delays; --small: 10 runs on
// a tenth of the events), a FIFO fed once, a convert onto an existing file that
// fails for lack of space, and the latency of cancel on the slow loads (in
// process). --small (the CI smoke test) writes the small corpus. Target: no
// case crashes or times out.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../../hostile/hostile_corpus.h"
#include "../common/bench_args.h"
#include "memscope/base/huge_page_malloc.h"
#include "memscope/builtin_plugins.h"
#include "memscope/format/native_format.h"
#include "memscope/plugins/pytorch_snapshot.h"

namespace fs = std::filesystem;
using namespace memscope;

namespace {

struct Outcome {
    double seconds = 0;
    long rss_mb = 0;
    std::string text;
    bool crashed = false;
};

std::string cli_path;
int timeout_s = 20;
long mem_mb = 2048;

std::string firstLine(const std::string& path) {
    std::ifstream in(path);
    std::string line, warning;
    std::string first;
    while (std::getline(in, line)) {
        if (first.empty()) first = line;
        if (warning.empty() && line.find("warning") != std::string::npos) warning = line;
    }
    return warning.empty() ? first : warning;
}

std::string shorten(std::string s, size_t n = 90) {
    for (const char* p : {"memscope-cli summary: ", "memscope-cli convert: "})
        if (s.rfind(p, 0) == 0) s = s.substr(std::strlen(p));
    if (const size_t slash = s.find("/hostile-corpus/"); slash != std::string::npos) {
        const size_t end = s.find(": ", slash);
        if (end != std::string::npos) s = s.substr(end + 2);
    }
    return s.size() > n ? s.substr(0, n) + "..." : s;
}

// Runs argv with the limits; `fsize` > 0 caps the size of files written.
Outcome runChild(const std::vector<std::string>& argv, long fsize = 0,
                 const std::function<void(pid_t)>& during = {}) {
    const std::string err = "/tmp/memscope-bench-hostile.err";
    const auto start = std::chrono::steady_clock::now();
    const pid_t pid = fork();
    if (pid == 0) {
        rlimit as{rlim_t(mem_mb) << 20, rlim_t(mem_mb) << 20};
        setrlimit(RLIMIT_AS, &as);
        if (fsize > 0) {
            rlimit fs_limit{rlim_t(fsize), rlim_t(fsize)};
            setrlimit(RLIMIT_FSIZE, &fs_limit);
            signal(SIGXFSZ, SIG_IGN);
        }
        const int out = open("/dev/null", O_WRONLY);
        const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        (void)out;
        dup2(e, 1);  // summary prints its warnings with the figures
        dup2(e, 2);
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execv(args[0], args.data());
        _exit(127);
    }
    if (during) during(pid);
    Outcome o;
    int status = 0;
    rusage ru{};
    bool timed_out = false;
    for (;;) {
        const pid_t r = wait4(pid, &status, WNOHANG, &ru);
        if (r == pid) break;
        if (std::chrono::steady_clock::now() - start > std::chrono::seconds(timeout_s)) {
            kill(pid, SIGKILL);
            wait4(pid, &status, 0, &ru);
            timed_out = true;
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    o.rss_mb = ru.ru_maxrss / 1024;
    const std::string line = shorten(firstLine(err));
    if (timed_out) {
        o.text = "TIMEOUT (killed after " + std::to_string(timeout_s) + " s)";
    } else if (WIFSIGNALED(status)) {
        o.crashed = true;
        o.text = std::string("CRASH (") + strsignal(WTERMSIG(status)) + ")";
    } else if (WEXITSTATUS(status) == 0) {
        o.text = line.find("warning") != std::string::npos ? "figures + " + line : "figures";
    } else {
        o.text = line.find("out of memory") != std::string::npos ||
                         line.find("bad_alloc") != std::string::npos
                     ? "OOM at the cap: " + line
                     : "error: " + line;
    }
    return o;
}

std::string human(uint64_t bytes) {
    char b[32];
    if (bytes >= (1u << 20))
        std::snprintf(b, sizeof b, "%.1f MB", double(bytes) / (1 << 20));
    else
        std::snprintf(b, sizeof b, "%.1f KB", double(bytes) / 1024);
    return b;
}

void row(const std::string& name, uint64_t size, const Outcome& o) {
    std::printf("| %-30s | %9s | %6ld MB | %7.2f s | %s |\n", name.c_str(), human(size).c_str(),
                o.rss_mb, o.seconds, o.text.c_str());
    std::fflush(stdout);
}

// --small: one run per delay on a tenth of the events (the smoke test).
void race(const std::string& folder, bool full) {
    std::printf("\nTruncation race: the file is cut to half while `summary` loads it\n");
    const std::string native = folder + "/race.memscope";
    const std::string pickle = folder + "/race.pickle";
    int crashes = 0, runs = 0;
    for (const std::string& path : {native, pickle}) {
        for (int delay_ms : {2, 10, 30, 60, 120}) {
            for (int rep = 0; rep < (full ? 2 : 1); ++rep) {
                hostile::writeNativeEvents(native, full ? 3'000'000 : 300'000, 65536);
                if (path == pickle) {
                    auto src = importNativeTrace(native);
                    if (src) (void)pytorch_snapshot::exportFile(*src, pickle);
                }
                const uint64_t size = fs::file_size(path);
                const Outcome o = runChild({cli_path, "summary", path}, 0, [&](pid_t) {
                    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
                    truncate(path.c_str(), off_t(size / 2));
                });
                ++runs;
                crashes += o.crashed;
                if (rep == 0)
                    std::printf("  %-8s %4d ms: %s\n", path == native ? "native" : "pickle",
                                delay_ms, o.text.c_str());
            }
        }
    }
    std::printf("  %d runs, %d crashed\n", runs, crashes);
}

void fifo(const std::string& folder) {
    const std::string path = folder + "/trace.fifo";
    unlink(path.c_str());
    mkfifo(path.c_str(), 0644);
    const Outcome o = runChild({cli_path, "summary", path}, 0, [&](pid_t) {
        if (fork() == 0) {  // the writer: feeds the FIFO once
            alarm(unsigned(timeout_s) + 2);
            const int fd = open(path.c_str(), O_WRONLY);
            const std::string text = hostile::kinetoJson("1700000000000000", "1024");
            if (fd >= 0) (void)!write(fd, text.data(), text.size());
            _exit(0);
        }
    });
    row("fifo_fed_once", 0, o);
}

void failedOverwrite(const std::string& folder) {
    const std::string in = folder + "/overwrite-in.memscope";
    hostile::writeNativeEvents(in, 400'000, 65536);
    const std::string out = folder + "/out/overwrite-out.pickle";
    fs::create_directories(folder + "/out");
    hostile::writeFile(out, "the old file");
    const Outcome o = runChild({cli_path, "convert", in, out}, 256 << 10);
    std::ifstream f(out);
    std::string old((std::istreambuf_iterator<char>(f)), {});
    size_t others = 0;
    for (const auto& e : fs::directory_iterator(folder + "/out")) others += e.path() != out;
    Outcome shown = o;
    shown.text = o.text + (old == "the old file" ? "; old OUT intact" : "; OLD OUT DESTROYED") +
                 (others ? "; PARTIAL FILE LEFT" : "; no partial file");
    row("convert_onto_full_disk", fs::file_size(in), shown);
}

// Cancels each slow load half way through (its uncancelled time measured
// first), so that the latency is measured inside the load whatever the
// machine's speed.
void cancelLatency(const std::vector<hostile::Case>& cases) {
    std::printf("\nCancel latency (in process: cancel half way through the load)\n");
    const PluginRegistry& reg = processRegistry();
    for (const auto& c : cases) {
        if (c.klass != "cancel" && c.klass != "quadratic" && c.name != "json_big_string") continue;
        const auto t0 = std::chrono::steady_clock::now();
        (void)reg.load(c.path);
        const auto whole = std::chrono::steady_clock::now() - t0;
        std::atomic<bool> cancel{false};
        TaskContext ctx;
        ctx.cancel = &cancel;
        std::atomic<bool> done{false};
        std::chrono::steady_clock::time_point finished;
        std::string outcome;
        std::thread t([&] {
            auto r = reg.load(c.path, ctx);
            outcome = r ? "finished" : r.message().substr(0, 60);
            finished = std::chrono::steady_clock::now();
            done = true;
        });
        std::this_thread::sleep_for(whole / 2);
        const auto asked = std::chrono::steady_clock::now();
        cancel = true;
        t.join();
        const double ms = done && finished > asked
                              ? std::chrono::duration<double, std::milli>(finished - asked).count()
                              : 0;
        std::printf("  %-30s load %7.1f ms, %6.1f ms after cancel (%s)\n", c.name.c_str(),
                    std::chrono::duration<double, std::milli>(whole).count(), ms, outcome.c_str());
    }
}

}  // namespace

int main(int argc, char** argv) {
    // As the front ends run (huge_page_malloc.h), so that the figures are theirs.
    memscope::useHugePageMalloc(argv);
    bool full = true;
    std::string folder = "/tmp/hostile-corpus";
    cli_path = (fs::path(argv[0]).parent_path() / "memscope-cli").string();
    bool cancel = true;
    static const char kUsage[] =
        "usage: memscope-bench-hostile [FOLDER] [--small] [--cli PATH] [--timeout S] "
        "[--mem-mb MB] [--no-cancel]";
    static const char kHelp[] =
        "Writes the hostile corpus to FOLDER (default /tmp/hostile-corpus), runs "
        "`memscope-cli summary` on each case under the limits and prints case, size, peak "
        "RSS, time and outcome; then the FIFO, failed-overwrite and shrinking-file cases "
        "and the cancel latency of each load.\n"
        "  --small        the small corpus (seconds; the CI smoke test)\n"
        "  --cli PATH     memscope-cli (default: beside this binary)\n"
        "  --timeout S    per case, 1..3600 s (default 20)\n"
        "  --mem-mb MB    address-space cap per case, 64..1048576 (default 2048)\n"
        "  --no-cancel    leave the cancel latency out\n"
        "Target: every case ends in an error or a warning, never a crash or a timeout.\n";
    bench::Args args(argc, argv, kUsage, kHelp);
    while (args.more()) {
        if (args.flag("--small")) {
            full = false;
            continue;
        }
        if (args.option("--cli", cli_path)) continue;
        if (args.option("--timeout", timeout_s, 1, 3600)) continue;
        if (args.option("--mem-mb", mem_mb, 64L, 1048576L)) continue;
        if (args.flag("--no-cancel")) {
            cancel = false;
            continue;
        }
        if (args.positional(folder)) continue;
        args.unknown();
    }
    std::printf("generating the corpus in %s (%s)...\n", folder.c_str(), full ? "full" : "small");
    const auto cases = hostile::writeCorpus(folder, full);
    std::printf("cli: %s, per case: %d s, %ld MB address space\n\n", cli_path.c_str(), timeout_s,
                mem_mb);
    std::printf("| %-30s | %9s | %9s | %9s | outcome |\n|---|---|---|---|---|\n", "case", "size",
                "peak RSS", "time");
    for (const auto& c : cases)
        row(c.name, fs::file_size(c.path), runChild({cli_path, "summary", c.path}));
    fifo(folder);
    failedOverwrite(folder);
    race(folder, full);
    if (cancel) cancelLatency(cases);
    return 0;
}
