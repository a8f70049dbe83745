// Times the caching-allocator model's replay of a file's requests against
// opening the file the way the CLI and GUI do (import, timeline, inference),
// in alternating runs, and prints min–median–max of each, the ratio, and the
// model's figures beside the recorded ones.
//   memscope-bench-allocator FILE [--runs N]
// Target (issue 60): replaying a 1 GB snapshot's events takes at most the
// time of opening it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "../common/bench_args.h"
#include "../common/malloc_mode.h"
#include "memscope/allocator/allocator_model_replay.h"
#include "memscope/base/huge_page_malloc.h"
#include "memscope/builtin_plugins.h"
#include "memscope/open/open_run.h"

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Spread {
    double min = 0, median = 0, max = 0;
};
Spread spread(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return {v.front(), v[v.size() / 2], v.back()};
}

}  // namespace

int main(int argc, char** argv) {
    memscope::useHugePageMalloc(argv);
    static const char kUsage[] = "usage: memscope-bench-allocator FILE [--runs N]";
    static const char kHelp[] =
        "Opens FILE as the CLI does, then replays every CUDA device's requests through the\n"
        "caching-allocator model (as recorded, and under expandable_segments:True), N times\n"
        "each in alternating order (default 3), and prints min-median-max seconds of each,\n"
        "the replay's share of the open, and the model's figures beside the recorded ones.\n"
        "Target (issue 60): the replay takes at most the open's time.\n";
    memscope::bench::Args args(argc, argv, kUsage, kHelp);
    std::string file;
    double runs = 3;
    while (args.more()) {
        if (args.option("--runs", runs, 1, 50)) continue;
        if (file.empty() && args.positional(file)) continue;
        args.unknown();
    }
    if (file.empty()) args.fail("missing FILE (a snapshot or trace to open)");

    std::vector<double> opens, replays, expandable;
    std::string figures;
    uint64_t events = 0;
    for (int r = 0; r < int(runs); ++r) {
        const auto t0 = Clock::now();
        auto run = memscope::openRun(file, memscope::processRegistry());
        if (!run) {
            std::fprintf(stderr, "memscope-bench-allocator: %s\n", run.message().c_str());
            return 1;
        }
        opens.push_back(since(t0));
        // The two replays in alternating order, so that neither always runs warm.
        for (int k = 0; k < 2; ++k) {
            const bool expand = (k + r) % 2 == 1;
            memscope::AllocatorModelOptions o;
            if (expand) o.settings = *memscope::applyAllocatorConf({}, "expandable_segments:True");
            const auto t1 = Clock::now();
            std::string text;
            for (const memscope::OpenedTrace& part : run->parts)
                for (const memscope::DeviceTimeline& tl : part.timeline->devices()) {
                    if (!memscope::hasCachingAllocator(*part.trace, tl.device)) continue;
                    auto m = memscope::replayAllocatorModel(*part.trace, tl, o);
                    if (!m) {
                        std::fprintf(stderr, "memscope-bench-allocator: replay: %s\n",
                                     m.message().c_str());
                        return 1;
                    }
                    if (r == 0) {
                        text += "  device " + std::to_string(tl.device) + ": " +
                                memscope::describeAllocatorModel(*m) + "\n";
                        if (!expand) events += tl.trace_events.size();
                    }
                }
            (expand ? expandable : replays).push_back(since(t1));
            if (r == 0) figures += text;
        }
    }
    const Spread o = spread(opens), m = spread(replays), e = spread(expandable);
    std::printf("file                 %s\n", file.c_str());
    std::printf("malloc               %s\n", memscope::bench::mallocMode());
    std::printf("events               %llu on CUDA devices\n", (unsigned long long)events);
    std::printf("open                 %.3f-%.3f-%.3f s (min-median-max of %d)\n", o.min, o.median,
                o.max, int(runs));
    std::printf("replay as recorded   %.3f-%.3f-%.3f s  %.1f M events/s\n", m.min, m.median, m.max,
                m.median > 0 ? double(events) / m.median / 1e6 : 0.0);
    std::printf("replay expandable    %.3f-%.3f-%.3f s\n", e.min, e.median, e.max);
    std::printf("replay / open        %.2fx (median)\n", o.median > 0 ? m.median / o.median : 0.0);
    std::printf("model\n%s", figures.c_str());
    std::printf("target               replay <= open: %s\n", m.median <= o.median ? "yes" : "NO");
    return 0;
}
