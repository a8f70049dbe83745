// memscope-bench-native: writes a generated trace in the native format, reads
// it back, and prints the figures the format is held to (docs/FORMAT.md):
// bytes per event, write and read events per second, peak RSS.
//   memscope-bench-native [--events N] [--seed S] [--devices D] [--file PATH] [--keep]
// Defaults: 10 M events on 2 devices. Targets (issue 29): read >= 60 M
// events/s at <= 8 bytes per event.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "../common/bench_args.h"
#include "../common/malloc_mode.h"
#include "memscope/base/huge_page_malloc.h"
#include "memscope/format/native_format.h"
#include "trace_generator.h"

using namespace memscope;
using Clock = std::chrono::steady_clock;

namespace {

double secondsSince(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// CPU seconds of the whole process (all threads): on a busy machine wall time
// says little, and the reader uses several threads.
double cpuSeconds() {
    timespec t{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

double loadAverage() {
    double load = 0;
    std::ifstream("/proc/loadavg") >> load;
    return load;
}

// VmHWM or VmRSS from /proc/self/status, in MiB.
double statusMiB(const char* key) {
    std::ifstream in("/proc/self/status");
    std::string line;
    const size_t n = std::strlen(key);
    while (std::getline(in, line))
        if (line.compare(0, n, key) == 0) return std::atof(line.c_str() + n + 1) / 1024.0;
    return 0;
}

// Resets VmHWM to the current RSS (Linux >= 4.0), so that a phase's own peak shows.
void resetPeak() {
    std::ofstream("/proc/self/clear_refs") << "5";
}

bool sameEvents(const std::vector<Event>& a, const std::vector<Event>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        const Event& x = a[i];
        const Event& y = b[i];
        if (x.time != y.time || x.address != y.address || x.size != y.size || x.stack != y.stack ||
            x.phase != y.phase || x.stream != y.stream || x.device != y.device ||
            x.kind != y.kind || x.category != y.category)
            return false;
    }
    return true;
}

// One read of an existing native trace (the shapes benchmark converts each
// generated snapshot and reads it in alternating runs).
int readOnce(const std::string& path) {
    const auto start = Clock::now();
    const double cpu_start = cpuSeconds();
    Result<Trace> loaded = readNativeTrace(path);
    const double s = secondsSince(start), cpu = cpuSeconds() - cpu_start;
    if (!loaded) {
        std::fprintf(stderr, "read failed: %s\n", loaded.message().c_str());
        return 1;
    }
    const double n = double(loaded->events.size());
    std::printf("events:                %zu\n", loaded->events.size());
    std::printf("read:                  %.3f s, %.1f M events/s (%.2f s CPU, all threads)\n", s,
                n / s / 1e6, cpu);
    std::printf("peak RSS:              %.0f MiB\n", statusMiB("VmHWM:"));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    // As the front ends run (huge_page_malloc.h), so that the figures are theirs.
    memscope::useHugePageMalloc(argv);
    bench::GeneratorOptions options;
    std::string path = (std::filesystem::temp_directory_path() /
                        ("memscope-bench-" + std::to_string(::getpid()) + ".memscope"))
                           .string();
    bool keep = false;
    std::string read_only;
    static const char kUsage[] =
        "usage: memscope-bench-native [--events N] [--seed S] [--devices D] [--file PATH] "
        "[--keep] | --read PATH";
    static const char kHelp[] =
        "Generates a trace (memscope_trace_generator), writes it in the native format, reads it\n"
        "back (best of 3) and through the background writer, and prints bytes per event, write\n"
        "and read events per second and peak RSS.\n"
        "  --events N    events to generate, 1..10000000000 (default 10000000)\n"
        "  --seed S      generator seed (default 1)\n"
        "  --devices D   devices, 1..64 (default 2)\n"
        "  --file PATH   where to write (default a temporary file, removed unless --keep)\n"
        "  --keep        keep the file\n"
        "  --read PATH   only read the native trace PATH once (written by memscope-cli convert\n"
        "                from any trace) and print its read time and events per second\n"
        "Targets (issue 29): read >= 60 M events/s, <= 8 bytes per event.\n";
    bench::Args args(argc, argv, kUsage, kHelp);
    while (args.more()) {
        if (args.option("--events", options.events, uint64_t(1), uint64_t(10'000'000'000ull)))
            continue;
        if (args.option("--seed", options.seed, uint64_t(0), UINT64_MAX)) continue;
        if (args.option("--devices", options.devices, 1, 64)) continue;
        if (args.option("--file", path)) continue;
        if (args.flag("--keep")) {
            keep = true;
            continue;
        }
        if (args.option("--read", read_only)) continue;
        args.unknown();
    }
    if (!read_only.empty()) return readOnce(read_only);

    auto start = Clock::now();
    const Trace trace = bench::generateTrace(options);
    const double generate_s = secondsSince(start);
    const double n = double(trace.events.size());
    std::printf("events:                %zu (%zu stacks, %zu frames, %zu phases, %d devices)\n",
                trace.events.size(), trace.stackCount() - 1, trace.frames().size(),
                trace.phases.size(), options.devices);
    std::printf("generate:              %.2f s\n", generate_s);

    start = Clock::now();
    double cpu_start = cpuSeconds();
    if (auto r = writeNativeTrace(trace, path); !r) {
        std::fprintf(stderr, "write failed: %s\n", r.message().c_str());
        return 1;
    }
    const double write_s = secondsSince(start);
    const double write_cpu = cpuSeconds() - cpu_start;
    const auto bytes = std::filesystem::file_size(path);
    std::printf("write:                 %.2f s, %.1f M events/s (%.2f s CPU)\n", write_s,
                n / write_s / 1e6, write_cpu);
    std::printf("file bytes:            %ju\n", uintmax_t(bytes));
    std::printf("bytes per event:       %.2f\n", double(bytes) / n);

    const double rss_before_read = statusMiB("VmRSS:");
    const double peak_before_read = statusMiB("VmHWM:");
    resetPeak();
    double best_read_s = 1e9;
    double best_read_cpu = 1e9;
    Result<Trace> loaded = makeError("not read");
    for (int round = 0; round < 3; ++round) {
        loaded = makeError("not read");  // free the previous round's trace first
        start = Clock::now();
        cpu_start = cpuSeconds();
        loaded = readNativeTrace(path);
        best_read_s = std::min(best_read_s, secondsSince(start));
        best_read_cpu = std::min(best_read_cpu, cpuSeconds() - cpu_start);
        if (!loaded) {
            std::fprintf(stderr, "read failed: %s\n", loaded.message().c_str());
            return 1;
        }
    }
    const double read_peak = statusMiB("VmHWM:") - rss_before_read;
    std::printf(
        "read:                  %.2f s, %.1f M events/s (best of 3; %.2f s CPU, all threads)\n",
        best_read_s, n / best_read_s / 1e6, best_read_cpu);
    std::printf("read memory:           %.0f MiB above the %.0f MiB before it\n", read_peak,
                rss_before_read);
    if (!sameEvents(trace.events, loaded->events)) {
        std::fprintf(stderr, "read back different events\n");
        return 1;
    }
    loaded = makeError("released");

    // The tracer's path: one producer thread, the background writer behind it.
    const std::string bg_path = path + ".bg";
    start = Clock::now();
    {
        auto w = BackgroundTraceWriter::create(bg_path, trace.metadata);
        if (!w) {
            std::fprintf(stderr, "background writer failed: %s\n", w.message().c_str());
            return 1;
        }
        // The tables first, as a tracer interns them before the events that use them.
        for (uint32_t i = 1; i < trace.strings.size(); ++i)
            (*w)->internString(trace.string(StringId(i)));
        for (const Frame& f : trace.frames()) (*w)->internFrame(f);
        for (uint32_t i = 1; i < trace.stackCount(); ++i)
            (*w)->internStack(trace.stack(StackId(i)));
        for (size_t i = 1; i < trace.streams.size(); ++i) (*w)->internStream(trace.streams[i]);
        for (const Phase& p : trace.phases) (*w)->addPhase(p);
        for (const Event& e : trace.events) (*w)->append(e);
        if (auto r = (*w)->close(); !r) {
            std::fprintf(stderr, "background writer failed: %s\n", r.message().c_str());
            return 1;
        }
    }
    const double bg_s = secondsSince(start);
    std::printf("background writer:     %.2f s, %.1f M events/s (append to closed file)\n", bg_s,
                n / bg_s / 1e6);
    std::filesystem::remove(bg_path);

    std::printf("peak RSS:              %.0f MiB (VmHWM of the whole run)\n",
                std::max(peak_before_read, statusMiB("VmHWM:")));
    std::printf("malloc:                %s\n", bench::mallocMode());
    std::printf("machine:               %u hardware threads, load average %.1f\n",
                std::thread::hardware_concurrency(), loadAverage());
    if (!keep) std::filesystem::remove(path);
    return 0;
}
