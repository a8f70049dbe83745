// memscope-cli check FILE... --max-peak SIZE [--device N] [--phase P]
// memscope-cli check --baseline FILE --max-growth PCT FILE...
// The memory gate for a training repository's CI.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli_common.h"
#include "commands.h"
#include "memscope/analysis/peak_check.h"
#include "memscope/base/units.h"

namespace memscope::cli {
namespace {

struct CheckOptions {
    std::vector<std::string> paths;
    std::string max_peak;  // SIZE text, validated by the option
    std::string baseline;
    double max_growth = 0;
    std::optional<int> device;
    std::string phase;
};

constexpr int kWithin = 0, kOver = 1, kUnreadable = 2;

// The peaks of one file (each rank of a folder), or an error naming it.
struct FilePeaks {
    std::string path;
    std::vector<CheckedPeak> peaks;
};

Result<std::vector<FilePeaks>> peaksOf(const std::string& path, const CheckOptions& o) {
    auto opened = openWithProgress(path);
    if (!opened) return opened.error();
    printWarnings("check", *opened);
    const std::optional<int16_t> device =
        o.device ? std::optional<int16_t>(int16_t(*o.device)) : std::nullopt;
    std::vector<FilePeaks> out;
    for (const OpenedTrace& part : opened->parts) {
        auto peaks = peaksToCheck(*part.timeline, device, trainingPhaseFromString(o.phase));
        if (!peaks) return makeError(part.path + ": " + peaks.message());
        out.push_back({part.path, std::move(*peaks)});
    }
    return out;
}

int run(const CheckOptions& o) {
    const bool growth = !o.baseline.empty();
    std::vector<CheckedPeak> baseline_peaks;
    if (growth) {
        auto base = peaksOf(o.baseline, o);
        if (!base) {
            std::fprintf(stderr, "memscope-cli check: baseline %s\n", base.message().c_str());
            return kUnreadable;
        }
        for (const FilePeaks& f : *base)
            baseline_peaks.insert(baseline_peaks.end(), f.peaks.begin(), f.peaks.end());
    }
    const int64_t absolute = growth ? 0 : parseByteSize(o.max_peak).value();
    int code = kWithin;
    for (const std::string& path : o.paths) {
        auto files = peaksOf(path, o);
        if (!files) {
            std::fprintf(stderr, "memscope-cli check: %s\n", files.message().c_str());
            code = kUnreadable;
            continue;
        }
        for (const FilePeaks& f : *files) {
            for (const CheckedPeak& p : f.peaks) {
                int64_t limit = absolute;
                if (growth) {
                    const CheckedPeak* b = nullptr;
                    for (const CheckedPeak& x : baseline_peaks)
                        if (x.device == p.device && (!b || x.bytes > b->bytes)) b = &x;
                    if (!b) {
                        std::fprintf(
                            stderr,
                            "memscope-cli check: %s: %s: the baseline %s has no such device\n",
                            f.path.c_str(), describe(p).c_str(), o.baseline.c_str());
                        code = kUnreadable;
                        continue;
                    }
                    limit = growthLimit(b->bytes, o.max_growth);
                }
                const CheckVerdict v = judge(p, limit);
                if (v.over) {
                    std::printf("OVER  %s: %s\n", f.path.c_str(), v.message.c_str());
                    if (code == kWithin) code = kOver;
                } else {
                    std::printf("ok    %s: %s\n", f.path.c_str(), v.message.c_str());
                }
            }
        }
    }
    return code;
}

}  // namespace

Command addCheck(CLI::App& parent) {
    auto o = std::make_shared<CheckOptions>();
    CLI::App* app = parent.add_subcommand("check", "a CI gate: fail when a peak exceeds a limit");
    app->add_option("files", o->paths, "traces to check (files or folders of per-rank traces)")
        ->required();
    auto* max_peak = app->add_option("--max-peak", o->max_peak,
                                     "the limit: bytes or with a unit (7.5GiB, 800MB)")
                         ->check(byteSizeValidator());
    auto* baseline = app->add_option("--baseline", o->baseline,
                                     "the run to compare against (with --max-growth)");
    auto* growth = app->add_option("--max-growth", o->max_growth,
                                   "allowed growth over the baseline's peak, in percent")
                       ->needs(baseline);
    baseline->needs(growth);
    max_peak->excludes(baseline);
    app->add_option("--device", o->device, "only this device (-1 = host)");
    app->add_option("--phase", o->phase, "the peak within this training phase")
        ->check(CLI::IsMember({"forward", "backward", "optimizer"}));
    app->footer(
        "Holds each file's peak of live bytes, per device (or --device N), over the whole run or\n"
        "within --phase, against --max-peak SIZE, or against a baseline run's peak on the same\n"
        "device plus --max-growth PCT percent."
        "\n\n"
        "Exit status: 0 every peak within its limit, 1 some peak over it (one line says which "
        "file,\n"
        "device and phase, and by how much), 2 an input could not be read or used (a missing\n"
        "device or phase) or a usage error.");
    app->callback([app, max_peak, baseline] {
        if (max_peak->count() == 0 && baseline->count() == 0)
            throw CLI::ValidationError(
                "check", "give --max-peak SIZE, or --baseline FILE with --max-growth PCT");
        (void)app;
    });
    return {app, [o] { return run(*o); }, {}};
}

}  // namespace memscope::cli
