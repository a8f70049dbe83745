// Times memscope's snapshot import against CPython's pickle.load on one file.
// Each side runs in its own process so that peak RSS is its own.
//   memscope-bench-snapshot FILE [--no-python]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "memscope/plugins/pytorch_snapshot.h"

namespace {

struct Run {
    double seconds = -1;
    double cpu_seconds = -1;  // user + system: what the import costs on a quiet machine
    double peak_rss_mb = -1;
    unsigned long long events = 0;
};

// Imports in a child process; the child writes "seconds events" to a pipe.
Run memscopeImport(const std::string& file) {
    int fds[2];
    if (pipe(fds) != 0) return {};
    const pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        const auto t0 = std::chrono::steady_clock::now();
        auto trace = memscope::pytorch_snapshot::importFile(file);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (!trace.ok()) {
            std::fprintf(stderr, "import failed: %s\n", trace.message().c_str());
            _exit(2);
        }
        char buf[64];
        const int n = std::snprintf(buf, sizeof buf, "%.6f %zu", s, trace->events.size());
        if (write(fds[1], buf, size_t(n)) != n) _exit(3);
        _exit(0);
    }
    close(fds[1]);
    char buf[64] = {};
    const ssize_t n = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    int status = 0;
    rusage ru{};
    wait4(pid, &status, 0, &ru);
    Run r;
    if (n > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        std::sscanf(buf, "%lf %llu", &r.seconds, &r.events);
        r.peak_rss_mb = double(ru.ru_maxrss) / 1024.0;
        r.cpu_seconds = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                        double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    }
    return r;
}

Run pythonLoad(const std::string& file) {
    const std::string cmd =
        "python3 -c \"import pickle,sys,time,resource\n"
        "t=time.perf_counter()\n"
        "with open(sys.argv[1],'rb') as f: d=pickle.load(f)\n"
        "s=time.perf_counter()-t\n"
        "r=resource.getrusage(resource.RUSAGE_SELF)\n"
        "print(s, r.ru_maxrss, r.ru_utime+r.ru_stime)\" '" + file + "'";
    std::FILE* p = popen(cmd.c_str(), "r");
    if (!p) return {};
    Run r;
    double rss_kb = -1;
    if (std::fscanf(p, "%lf %lf %lf", &r.seconds, &rss_kb, &r.cpu_seconds) != 3) r.seconds = -1;
    r.peak_rss_mb = rss_kb / 1024.0;
    pclose(p);
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s FILE [--no-python]\n", argv[0]);
        return 1;
    }
    const std::string file = argv[1];
    const bool python = !(argc > 2 && !std::strcmp(argv[2], "--no-python"));
    std::error_code ec;
    const double mb = double(std::filesystem::file_size(file, ec)) / (1024.0 * 1024.0);
    if (ec) {
        std::fprintf(stderr, "cannot stat %s\n", file.c_str());
        return 1;
    }
    const Run m = memscopeImport(file);
    if (m.seconds < 0) return 2;
    std::printf("file                 %s (%.1f MiB)\n", file.c_str(), mb);
    std::printf("memscope import      %.3f s wall, %.3f s CPU  %.1f MiB/s wall, %.1f MiB/s CPU  peak RSS %.1f MiB (%.2fx the file)  %llu events\n",
                m.seconds, m.cpu_seconds, mb / m.seconds, mb / m.cpu_seconds, m.peak_rss_mb, m.peak_rss_mb / mb, m.events);
    std::string speedTarget = "not measured (--no-python)";
    if (python) {
        const Run p = pythonLoad(file);
        if (p.seconds < 0) {
            std::printf("pickle.load         failed (python3 missing or out of memory)\n");
            speedTarget = "not measured (pickle.load failed)";
        } else {
            const double speedup = p.seconds / m.seconds;
            std::printf("CPython pickle.load  %.3f s wall, %.3f s CPU  %.1f MiB/s wall  peak RSS %.1f MiB\n", p.seconds,
                        p.cpu_seconds, mb / p.seconds, p.peak_rss_mb);
            std::printf("speed-up             %.2fx wall, %.2fx CPU\n", speedup, p.cpu_seconds / m.cpu_seconds);
            speedTarget = speedup >= 3 ? "yes" : p.cpu_seconds / m.cpu_seconds >= 3 ? "by CPU time (machine busy)" : "NO";
        }
    }
    std::printf("targets              >= 150 MiB/s: %s, >= 3x pickle.load: %s, RSS <= 1.5x file: %s\n",
                mb / m.seconds >= 150 ? "yes" : mb / m.cpu_seconds >= 150 ? "by CPU time (machine busy)" : "NO",
                speedTarget.c_str(), m.peak_rss_mb <= 1.5 * mb ? "yes" : "NO");
    return 0;
}
