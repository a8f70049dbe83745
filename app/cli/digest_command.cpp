// memscope-cli digest TRACE -o OUT
// One rank's reduced form, made where the traces are, for the desktop.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "cli_common.h"
#include "commands.h"
#include "memscope/base/text_escape.h"
#include "memscope/base/units.h"
#include "memscope/ranks/digest_file.h"

namespace memscope::cli {
namespace {

struct DigestOptions {
    std::string path;
    std::string out;
};

int run(const DigestOptions& o) {
    std::error_code ec;
    if (std::filesystem::is_directory(o.path, ec)) {
        std::fprintf(stderr,
                     "memscope-cli digest: %s is a folder; digest each rank's trace (one per "
                     "task, under the launcher)\n",
                     terminalText(o.path).c_str());
        return 1;
    }
    // The same file by any path (./T, a link): writing would replace the trace by its digest.
    if (std::filesystem::equivalent(o.path, o.out, ec)) {
        std::fprintf(stderr,
                     "memscope-cli digest: %s and %s are the same file; the digest would "
                     "replace the trace: name another output\n",
                     terminalText(o.path).c_str(), o.out.c_str());
        return 1;
    }
    auto opened = openWithProgress(o.path);
    if (!opened) {
        std::fprintf(stderr, "memscope-cli digest: %s\n", terminalText(opened.message()).c_str());
        return 2;
    }
    printWarnings("digest", *opened);
    auto written = writeDigest(opened->parts.front(), o.out);
    if (!written) {
        std::fprintf(stderr, "memscope-cli digest: %s\n", terminalText(written.message()).c_str());
        return 2;
    }
    const RankDigest& d = written->digest;
    std::printf(
        "%s -> %s: digest of %s, %s; peak %s%s%s, %zu allocations at the peak kept with "
        "their stacks, %zu summed by category\n",
        terminalText(o.path).c_str(), o.out.c_str(), terminalText(d.name).c_str(),
        formatBytes(int64_t(written->bytes)).c_str(), formatBytes(d.peak_bytes).c_str(),
        d.peak_phase ? " in " : "",
        d.peak_phase ? std::string(toString(*d.peak_phase)).c_str() : "", written->allocations,
        written->summed);
    return 0;
}

}  // namespace

Command addDigest(CLI::App& parent) {
    auto o = std::make_shared<DigestOptions>();
    CLI::App* app = parent.add_subcommand(
        "digest", "one rank's reduced form (at most 1 MiB), to open many ranks on one desktop");
    app->add_option("trace", o->path, "a rank's trace file")->required();
    app->add_option("-o,--out", o->out, "the digest to write (a native trace)")->required();
    app->footer(
        "Writes what the per-rank table, the imbalance and the Ranks view need: the rank's\n"
        "envelope of live bytes (2,048 columns), its peak (device, time, phase, step,\n"
        "reserved), its per-phase peaks, its steps, and the allocations alive at the peak\n"
        "with their stacks and categories (the largest one by one, the rest summed per\n"
        "category), at most 1 MiB whatever the trace's size. A digest is a native trace\n"
        "marked as one: opened alone it shows the composition at the peak; a folder of\n"
        "digests opens as a multi-rank run (summary, check, the GUI), each marked a digest.\n"
        "Run it where the traces are, under the launcher you use, one task per rank:\n"
        "  srun --ntasks 1024 sh -c 'memscope-cli digest traces/*-rank$SLURM_PROCID-*.memscope \\\n"
        "       -o digests/rank$SLURM_PROCID.memscope'\n\n"
        "Exit status: 0 written, 2 the trace could not be read or the digest written, 1 usage\n"
        "error.");
    return {app, [o] { return run(*o); }, {}};
}

}  // namespace memscope::cli
