// memscope-cli check FILE... --max-peak SIZE [--device N] [--phase P]
// memscope-cli check --baseline FILE --max-growth PCT FILE...
// The memory gate for a training repository's CI.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli_common.h"
#include "commands.h"
#include "memscope/analysis/leak_finder.h"
#include "memscope/analysis/peak_check.h"
#include "memscope/base/text_escape.h"
#include "memscope/base/units.h"
#include "memscope/open/open_each.h"
#include "memscope/ranks/rank_digest.h"
#include "memscope/ranks/rank_identity.h"

namespace memscope::cli {
namespace {

struct CheckOptions {
    std::vector<std::string> paths;
    std::string max_peak;  // SIZE text, validated by the option
    std::string baseline;
    double max_growth = 0;
    std::optional<int> device;
    std::string phase;
    std::string max_growth_per_step;  // SIZE text: gate the growth per step (leak_finder.h)
};

constexpr int kWithin = 0, kOver = 1, kUnreadable = 2;

// The peaks of one file (each rank of a folder), or why they are missing.
struct FilePeaks {
    std::string path;
    std::string label;  // "rank 3 (PATH)" for a rank of a folder, else the path
    int32_t rank = -1;
    std::vector<CheckedPeak> peaks;
    std::string error;  // the file could not be read or lacks the device / phase
    std::vector<std::string> warnings;
    std::vector<DeviceGrowth> growth;  // with --max-growth-per-step
    bool skipped = false;              // a part of a folder that recorded no memory event
};

struct PathPeaks {
    std::vector<FilePeaks> files;
    bool ranks = false;                 // a multi-rank folder: its worst rank is named
    std::vector<LoadWarning> warnings;  // a rank that several files claim
};

// A predicted run is checked as what it is (its trace says, not its name).
std::string provenanceLabel(std::string label, const Trace& trace) {
    return trace.prediction ? label + " (predicted)" : label;
}

Result<std::vector<CheckedPeak>> checkedPeaks(const OpenedTrace& part, const CheckOptions& o) {
    const std::optional<int16_t> device =
        o.device ? std::optional<int16_t>(int16_t(*o.device)) : std::nullopt;
    auto peaks =
        peaksToCheck(*part.trace, *part.timeline, device, trainingPhaseFromString(o.phase));
    if (!peaks) return makeError(part.path + ": " + peaks.message());
    return peaks;
}

// The growth per step of each device checked (all, or --device).
std::vector<DeviceGrowth> growthOf(const OpenedTrace& part, const CheckOptions& o) {
    std::vector<DeviceGrowth> out;
    if (o.max_growth_per_step.empty()) return out;
    const ModuleAttribution modules(*part.trace);
    for (const DeviceTimeline& tl : part.timeline->devices())
        if (!o.device || tl.device == *o.device)
            out.push_back(deviceGrowth(*part.trace, tl, modules));
    return out;
}

// A folder of ranks: each opened, reduced to its peaks and dropped, on every
// core, so that a thousand ranks take one rank's memory per core.
PathPeaks rankPeaksOf(const std::string& folder, const CheckOptions& o) {
    const std::vector<std::string> files = traceFilesIn(folder, registry());
    PathPeaks out;
    out.ranks = true;
    out.files.resize(files.size());
    openEach(files, registry(), {}, {}, [&](size_t i, Result<OpenedTrace> opened) {
        FilePeaks& f = out.files[i];
        f.path = files[i];
        f.label = files[i];
        if (!opened) {
            f.error = opened.message();
            return;
        }
        for (const LoadWarning& w : opened->warnings) f.warnings.push_back(w.message);
        f.rank = opened->trace->metadata.rank;
        if (f.rank >= 0) f.label = rankName(f.rank, "") + " (" + files[i] + ")";
        f.label = provenanceLabel(std::move(f.label), *opened->trace);
        // A process beside the ranks that allocated nothing (a launcher that
        // imported torch) has no peak to hold against the limit.
        if (opened->timeline->devices().empty()) {
            f.skipped = true;
            return;
        }
        auto peaks = checkedPeaks(*opened, o);
        if (!peaks)
            f.error = peaks.message();
        else
            f.peaks = std::move(*peaks);
        f.growth = growthOf(*opened, o);
    });
    std::stable_sort(out.files.begin(), out.files.end(),
                     [](const FilePeaks& a, const FilePeaks& b) {
                         if ((a.rank < 0) != (b.rank < 0)) return b.rank < 0;
                         return a.rank < b.rank;
                     });
    std::vector<int32_t> ranks;
    std::vector<std::string> paths;
    for (const FilePeaks& f : out.files) {
        ranks.push_back(f.rank);
        paths.push_back(f.path);
    }
    out.warnings = duplicateRankWarnings(ranks, paths);
    return out;
}

Result<PathPeaks> peaksOf(const std::string& path, const CheckOptions& o) {
    if (isMultiRankFolder(path)) return rankPeaksOf(path, o);
    auto opened = openWithProgress(path);
    if (!opened) return opened.error();
    printWarnings("check", *opened);
    PathPeaks out;
    for (const OpenedTrace& part : opened->parts) {
        auto peaks = checkedPeaks(part, o);
        if (!peaks) return peaks.error();
        out.files.push_back({part.path,
                             provenanceLabel(part.path, *part.trace),
                             -1,
                             std::move(*peaks),
                             {},
                             {},
                             growthOf(part, o),
                             false});
    }
    return out;
}

int run(const CheckOptions& o) {
    const bool growth = !o.baseline.empty();
    std::vector<CheckedPeak> baseline_peaks;
    if (growth) {
        auto base = peaksOf(o.baseline, o);
        if (!base) {
            std::fprintf(stderr, "memscope-cli check: baseline %s\n",
                         terminalText(base.message()).c_str());
            return kUnreadable;
        }
        for (const FilePeaks& f : base->files) {
            if (!f.error.empty()) {
                std::fprintf(stderr, "memscope-cli check: baseline %s\n",
                             terminalText(f.error).c_str());
                return kUnreadable;
            }
            baseline_peaks.insert(baseline_peaks.end(), f.peaks.begin(), f.peaks.end());
        }
    }
    const bool peak_limit = growth || !o.max_peak.empty();
    const int64_t absolute = growth || o.max_peak.empty() ? 0 : parseByteSize(o.max_peak).value();
    const int64_t per_step =
        o.max_growth_per_step.empty() ? 0 : parseByteSize(o.max_growth_per_step).value();
    int code = kWithin;
    for (const std::string& path : o.paths) {
        auto checked = peaksOf(path, o);
        if (!checked) {
            std::fprintf(stderr, "memscope-cli check: %s\n",
                         terminalText(checked.message()).c_str());
            code = kUnreadable;
            continue;
        }
        // The worst rank of a folder: the highest peak, named, judged once more
        // on its own line so that a CI log says which rank to look at.
        const FilePeaks* worst_file = nullptr;
        const CheckedPeak* worst = nullptr;
        CheckVerdict worst_verdict;
        for (const LoadWarning& w : checked->warnings)
            std::fprintf(stderr, "memscope-cli check: warning: %s: %s\n",
                         terminalText(path).c_str(), terminalText(w.message).c_str());
        // Only ranks are ranked: a part without a rank beside them (a
        // MemoryViz page, a launcher) is checked, never named the worst rank.
        std::vector<int32_t> file_ranks;
        for (const FilePeaks& f : checked->files) file_ranks.push_back(f.rank);
        const bool any_ranked = anyRanked(file_ranks);
        for (const FilePeaks& f : checked->files) {
            for (const std::string& w : f.warnings)
                std::fprintf(stderr, "memscope-cli check: warning: %s: %s\n",
                             terminalText(f.path).c_str(), terminalText(w).c_str());
            if (!f.error.empty()) {
                std::fprintf(stderr, "memscope-cli check: %s\n", terminalText(f.error).c_str());
                code = kUnreadable;
                continue;
            }
            if (f.skipped) {
                std::printf("-     %s: no memory events recorded, nothing to check\n",
                            terminalText(f.label).c_str());
                continue;
            }
            for (const DeviceGrowth& g : f.growth) {
                auto v = judgeGrowth(g, per_step);
                if (!v) {
                    std::fprintf(stderr, "memscope-cli check: %s: %s\n",
                                 terminalText(f.label).c_str(), terminalText(v.message()).c_str());
                    code = kUnreadable;
                    continue;
                }
                std::printf("%s  %s: %s\n", v->over ? "OVER" : "ok  ",
                            terminalText(f.label).c_str(), terminalText(v->message).c_str());
                if (v->over && code == kWithin) code = kOver;
            }
            if (!peak_limit) continue;
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
                            terminalText(f.label).c_str(), describe(p).c_str(), o.baseline.c_str());
                        code = kUnreadable;
                        continue;
                    }
                    limit = growthLimit(b->bytes, o.max_growth);
                }
                const CheckVerdict v = judge(p, limit);
                if (v.over) {
                    std::printf("OVER  %s: %s\n", terminalText(f.label).c_str(),
                                terminalText(v.message).c_str());
                    if (code == kWithin) code = kOver;
                } else {
                    std::printf("ok    %s: %s\n", terminalText(f.label).c_str(),
                                terminalText(v.message).c_str());
                }
                if (countsAsRank(f.rank, any_ranked) && (!worst || p.bytes > worst->bytes)) {
                    worst_file = &f;
                    worst = &p;
                    worst_verdict = v;
                }
            }
        }
        if (checked->ranks && worst)
            std::printf("%s  worst rank: %s: %s\n", worst_verdict.over ? "OVER" : "ok  ",
                        terminalText(worst_file->label).c_str(),
                        terminalText(worst_verdict.message).c_str());
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
    app->add_option("--max-growth-per-step", o->max_growth_per_step,
                    "the most the live bytes may grow per training step (as `leaks` fits it)")
        ->check(byteSizeValidator());
    app->add_option("--device", o->device, "only this device (-1 = host)");
    app->add_option("--phase", o->phase, "the peak within this training phase")
        ->check(CLI::IsMember({"forward", "backward", "optimizer"}));
    app->footer(
        "Holds each file's peak of live bytes, per device (or --device N), over the whole run or\n"
        "within --phase, against --max-peak SIZE, or against a baseline run's peak on the same\n"
        "device plus --max-growth PCT percent. A folder of several traces is a multi-rank\n"
        "run: its ranks are read one by one on every core, each is judged (\"rank 3 (FILE)\"),\n"
        "a rank that cannot be read is reported while the others are still judged, and a last\n"
        "line names the worst rank."
        "\n\n"
        "--max-growth-per-step SIZE holds the growth of live bytes per training step (the fit\n"
        "of `memscope-cli leaks`) against SIZE, alone or beside a peak limit; a trace with\n"
        "fewer than 4 steps cannot be judged (exit status 2)."
        "\n\n"
        "Exit status: 0 every peak within its limit, 1 some peak over it (one line says which "
        "file,\n"
        "device and phase, and by how much), 2 an input could not be read or used (a missing\n"
        "device or phase) or a usage error.");
    app->callback([app, max_peak, baseline, o] {
        if (max_peak->count() == 0 && baseline->count() == 0 && o->max_growth_per_step.empty())
            throw CLI::ValidationError("check",
                                       "give --max-peak SIZE, or --baseline FILE with --max-growth "
                                       "PCT, or --max-growth-per-step SIZE");
        (void)app;
    });
    return {app, [o] { return run(*o); }, {}};
}

}  // namespace memscope::cli
