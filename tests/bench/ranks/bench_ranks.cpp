// A folder of many ranks opened in bounded memory: openRanks (every rank
// opened on a worker, reduced to its digest, dropped) against keeping every
// rank's timeline (openRun, the one-run path), at several rank counts.
//   memscope-bench-ranks [--ranks N,N,...] [--mb SIZE] [--distinct K] [--digests N] [--dir DIR]
// The ranks are memscope-gen-snapshot's snapshots of SIZE MB (default 50), K
// distinct ones (default 8, seeds 1..K) hard-linked to N names, so that 256
// ranks need K files of disk, not 256; the page cache holds them either way
// on a 24 GiB machine. Each rank count runs in a fresh process (--child), so
// that its peak RSS is its own. Prints ranks, input size, wall time, time per
// rank, peak RSS and RSS over input; the one-run path for the smallest count.
// Target (issue 28): 64 x 50 MB in <= 15 s and <= 1 GB RSS on 2 cores.
// Smallest (the CI smoke test): --ranks 2 --mb 8 --distinct 1 --digests 4.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "../common/bench_args.h"
#include "memscope/base/huge_page_malloc.h"
#include "memscope/builtin_plugins.h"
#include "memscope/open/open_run.h"
#include "memscope/ranks/digest_file.h"
#include "memscope/ranks/open_ranks.h"

namespace fs = std::filesystem;
using namespace memscope;

namespace {

double peakRssMiB() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return double(ru.ru_maxrss) / 1024.0;  // kB
}

double seconds(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

constexpr char kUsage[] =
    "usage: memscope-bench-ranks [--ranks N,N,...] [--mb SIZE] [--distinct K] [--digests N] "
    "[--dir DIR]";
constexpr char kHelp[] =
    "Opens folders of N generated snapshot ranks (default 8,64,256 of 50 MB) with openRanks,\n"
    "and the smallest with openRun, then a folder of N digests (default 1024), printing\n"
    "wall time and peak RSS.\n"
    "  --ranks N,N,...  rank counts, each 1..100000\n"
    "  --mb SIZE        size of each generated snapshot, 1..4096 MB (default 50)\n"
    "  --distinct K     distinct snapshots (seeds 1..K), 1..1024 (default 8)\n"
    "  --digests N      digests to open, 0..100000 (default 1024; 0: none)\n"
    "  --dir DIR        work folder (default $TMPDIR/memscope-bench-ranks)\n"
    "Target (issue 28): 64 ranks x 50 MB in <= 15 s and <= 1 GB RSS; 1,024 digests in <= 10 s.\n";

// One measurement, in this process: "ranks MB s s/rank RSS RSS/input".
int child(const std::string& folder, const std::string& mode) {
    uint64_t bytes = 0;
    size_t files = 0;
    for (const auto& e : fs::directory_iterator(folder))
        if (e.is_regular_file()) bytes += e.file_size(), ++files;
    const auto t0 = std::chrono::steady_clock::now();
    size_t opened = 0;
    if (mode == "ranks") {
        auto run = openRanks(folder, processRegistry());
        if (!run) return std::fprintf(stderr, "%s\n", run.message().c_str()), 1;
        opened = run->ranks.size();
    } else {
        auto run = openRun(folder, processRegistry());
        if (!run) return std::fprintf(stderr, "%s\n", run.message().c_str()), 1;
        opened = run->parts.size();
    }
    const double s = seconds(t0);
    const double rss = peakRssMiB();
    const double mb = double(bytes) / double(1 << 20);
    std::printf("%-9s %6zu %9.0f %9.2f %9.3f %9.0f %9.2f\n", mode.c_str(), opened, mb, s,
                s / double(std::max<size_t>(opened, 1)), rss, rss / mb);
    std::fflush(stdout);
    return opened == files ? 0 : 1;
}

std::vector<int> parseList(const std::string& text) {
    std::vector<int> out;
    size_t at = 0;
    while (at < text.size()) {
        const size_t comma = text.find(',', at);
        const std::string part = text.substr(at, comma == std::string::npos ? comma : comma - at);
        char* end = nullptr;
        const long v = std::strtol(part.c_str(), &end, 10);
        if (part.empty() || *end || v <= 0 || v > 100000) return {};
        out.push_back(int(v));
        if (comma == std::string::npos) break;
        at = comma + 1;
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    // As the front ends run (huge_page_malloc.h), so that the figures are theirs.
    memscope::useHugePageMalloc(argv);
    std::vector<int> counts = {8, 64, 256};
    int mb = 50, distinct = 8, digests = 1024;
    std::string dir = (fs::temp_directory_path() / "memscope-bench-ranks").string();
    // The bench runs itself with --child FOLDER MODE for each measurement.
    if (argc == 4 && std::string(argv[1]) == "--child") return child(argv[2], argv[3]);
    bench::Args args(argc, argv, kUsage, kHelp);
    while (args.more()) {
        std::string list;
        if (args.option("--ranks", list)) {
            counts = parseList(list);
            if (counts.empty())
                args.fail("--ranks: '" + list + "' is not a list of counts 1..100000 (N,N,...)");
            continue;
        }
        if (args.option("--mb", mb, 1, 4096)) continue;
        if (args.option("--distinct", distinct, 1, 1024)) continue;
        if (args.option("--digests", digests, 0, 100000)) continue;
        if (args.option("--dir", dir)) {
            if (dir.empty()) args.fail("--dir: empty");
            continue;
        }
        args.unknown();
    }

    const std::string self = fs::canonical("/proc/self/exe").string();
    const std::string gen = (fs::path(self).parent_path() / "memscope-gen-snapshot").string();
    fs::create_directories(dir + "/sources");
    for (int k = 1; k <= distinct; ++k) {
        const std::string src =
            dir + "/sources/seed" + std::to_string(k) + "-" + std::to_string(mb) + "mb.pickle";
        if (fs::exists(src)) continue;
        const std::string cmd = "'" + gen + "' '" + src + "' --mb " + std::to_string(mb) +
                                " --seed " + std::to_string(k) + " > /dev/null";
        if (std::system(cmd.c_str()) != 0)
            return std::fprintf(stderr, "memscope-bench-ranks: %s failed\n", cmd.c_str()), 1;
    }
    std::printf("%d distinct %d MB snapshots hard-linked to each rank count; %u hardware threads\n",
                distinct, mb, std::max(1u, std::thread::hardware_concurrency()));
    std::printf("%-9s %6s %9s %9s %9s %9s %9s\n", "path", "ranks", "input_MB", "wall_s", "s/rank",
                "rss_MiB", "rss/input");
    int failures = 0;
    int smallest = counts.front();
    for (int n : counts) smallest = std::min(smallest, n);
    for (int n : counts) {
        const std::string folder = dir + "/ranks-" + std::to_string(n);
        fs::remove_all(folder);
        fs::create_directories(folder);
        for (int r = 0; r < n; ++r) {
            const std::string src = dir + "/sources/seed" + std::to_string(r % distinct + 1) + "-" +
                                    std::to_string(mb) + "mb.pickle";
            char name[64];
            std::snprintf(name, sizeof name, "/rank%04d.pickle", r);
            fs::create_hard_link(src, folder + name);
        }
        for (const char* mode : {"ranks", "run"}) {
            if (std::string(mode) == "run" && n != smallest) continue;  // N x one rank's memory
            const std::string cmd = "'" + self + "' --child '" + folder + "' " + mode;
            std::fflush(stdout);  // the child's line comes after ours
            if (std::system(cmd.c_str()) != 0) ++failures;
        }
        fs::remove_all(folder);
    }
    // Digests: one rank's digest (memscope-cli digest's writeDigest), hard-linked
    // to `digests` names, opened as a multi-rank run.
    if (digests > 0) {
        const std::string src = dir + "/sources/seed1-" + std::to_string(mb) + "mb.pickle";
        auto opened = openTrace(src, processRegistry());
        if (!opened) return std::fprintf(stderr, "%s\n", opened.message().c_str()), 1;
        const std::string one = dir + "/sources/seed1.digest.memscope";
        auto written = writeDigest(*opened, one);
        if (!written) return std::fprintf(stderr, "%s\n", written.message().c_str()), 1;
        std::printf("digest of a %d MB snapshot: %llu bytes, %zu allocations kept, %zu summed\n",
                    mb, (unsigned long long)written->bytes, written->allocations, written->summed);
        const std::string folder = dir + "/digests-" + std::to_string(digests);
        fs::remove_all(folder);
        fs::create_directories(folder);
        for (int r = 0; r < digests; ++r) {
            char name[64];
            std::snprintf(name, sizeof name, "/rank%04d.digest.memscope", r);
            fs::create_hard_link(one, folder + name);
        }
        const std::string cmd = "'" + self + "' --child '" + folder + "' ranks";
        std::fflush(stdout);
        if (std::system(cmd.c_str()) != 0) ++failures;
        fs::remove_all(folder);
    }
    std::printf(
        "target: 64 ranks x 50 MB in <= 15 s, peak RSS <= 1024 MiB (path 'ranks'); "
        "1,024 digests in <= 10 s\n");
    return failures ? 1 : 0;
}
