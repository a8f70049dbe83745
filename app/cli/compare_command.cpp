// memscope-cli compare A B... [--baseline N|PATH] [--align time|step|phase]
//                             [--phase forward|backward|optimizer] [--json|--csv]
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli_common.h"
#include "commands.h"
#include "memscope/analysis/allocation_diff.h"
#include "memscope/analysis/compare_table.h"
#include "memscope/analysis/line_compare.h"
#include "memscope/analysis/source_lines.h"
#include "memscope/base/text_escape.h"
#include "memscope/ranks/rank_compare.h"
#include "memscope/report/allocation_diff_report.h"
#include "memscope/report/compare_report.h"
#include "memscope/report/line_compare_report.h"
#include "memscope/report/rank_report.h"

namespace memscope::cli {
namespace {

struct CompareOptions {
    std::vector<std::string> paths;
    std::string
        baseline;  // index (1-based, as listed) or a path; empty = the full policy, else the first
    std::string align = "time";
    std::string phase;  // "" = the whole run
    bool json = false;
    bool csv = false;
    bool allocations = false;  // the allocation-set diff of two runs
    std::string at = "peak";   // its moment
    bool by_line = false;      // bytes by source line, the runs side by side
};

// Opens each of `paths` as one trace with a device that has memory events;
// prints why not and returns nullopt (exit status 2).
std::optional<std::vector<OpenedRun>> openSingleTraces(const std::vector<std::string>& paths,
                                                       const char* option) {
    std::vector<OpenedRun> runs;
    for (const std::string& path : paths) {
        auto opened = openWithProgress(path);
        if (!opened) {
            std::fprintf(stderr, "memscope-cli compare: %s\n",
                         terminalText(opened.message()).c_str());
            return std::nullopt;
        }
        printWarnings("compare", *opened);
        if (opened->parts.size() != 1) {
            std::fprintf(stderr,
                         "memscope-cli compare %s: %s holds %zu traces; give one file each\n",
                         option, path.c_str(), opened->parts.size());
            return std::nullopt;
        }
        if (!opened->parts.front().timeline->highestPeakDevice()) {
            std::fprintf(stderr, "memscope-cli compare: %s: no device with memory events\n",
                         path.c_str());
            return std::nullopt;
        }
        runs.push_back(std::move(*opened));
    }
    return runs;
}

// compare --allocations A B: what is alive in one and not the other.
int runAllocations(const CompareOptions& o) {
    if (o.paths.size() != 2 || o.csv || !o.baseline.empty() || !o.phase.empty() ||
        o.align != "time") {
        std::fprintf(stderr,
                     "memscope-cli compare --allocations: give two runs, A and B; --baseline, "
                     "--phase, --align and --csv do not apply (--at picks the moment)\n");
        return 1;
    }
    auto moment = parseAllocationMoment(o.at);
    if (!moment) {
        std::fprintf(stderr, "memscope-cli compare: %s\n", terminalText(moment.message()).c_str());
        return 1;
    }
    auto runs = openSingleTraces(o.paths, "--allocations");
    if (!runs) return 2;
    const OpenedTrace& a = (*runs)[0].parts.front();
    const OpenedTrace& b = (*runs)[1].parts.front();
    auto diff = diffAllocations(*a.trace, *a.timeline->highestPeakDevice(), *b.trace,
                                *b.timeline->highestPeakDevice(), *moment);
    if (!diff) {
        std::fprintf(stderr, "memscope-cli compare: %s\n", terminalText(diff.message()).c_str());
        return 2;
    }
    std::fputs(o.json ? allocationDiffJson(*diff, o.paths[0], o.paths[1]).c_str()
                      : allocationDiffText(*diff, o.paths[0], o.paths[1]).c_str(),
               stdout);
    return 0;
}

// compare --by-line RUN...: the compare view's lines tab, each run at its peak.
int runByLine(const CompareOptions& o) {
    if (o.csv || !o.baseline.empty() || !o.phase.empty() || o.align != "time" || o.at != "peak") {
        std::fprintf(stderr,
                     "memscope-cli compare --by-line: --baseline, --phase, --align, --at and "
                     "--csv do not apply (each run at its peak)\n");
        return 1;
    }
    auto runs = openSingleTraces(o.paths, "--by-line");
    if (!runs) return 2;
    std::vector<LinesAtPeak> lines;
    for (const OpenedRun& r : *runs) {
        const OpenedTrace& t = r.parts.front();
        lines.push_back(linesAtPeak(*t.trace, ModuleAttribution(*t.trace),
                                    *t.timeline->highestPeakDevice(), kCompareLinesTop));
    }
    std::vector<const LinesAtPeak*> pointers;
    for (const LinesAtPeak& l : lines) pointers.push_back(&l);
    const LinesCompared compared = compareLines(pointers);
    std::fputs(o.json ? linesComparedJson(compared, o.paths).c_str()
                      : linesComparedText(compared, o.paths).c_str(),
               stdout);
    return 0;
}

// --baseline N (1-based position among the runs) or a path given among them.
Result<size_t> resolveBaseline(const std::string& text, const std::vector<CompareInput>& inputs) {
    for (size_t i = 0; i < inputs.size(); ++i)
        if (inputs[i].path == text) return i;
    size_t used = 0;
    try {
        const unsigned long n = std::stoul(text, &used);
        if (used == text.size() && n >= 1 && n <= inputs.size()) return size_t(n - 1);
    } catch (...) {
        // not a number: fall through to the error
    }
    return makeError("--baseline " + text + ": neither one of the runs given nor a position 1.." +
                     std::to_string(inputs.size()));
}

// Multi-rank runs (folders of several traces): rank by rank, each against
// the first, in bounded memory.
int runRanks(const CompareOptions& o) {
    std::vector<RankRun> runs;
    for (const std::string& path : o.paths) {
        auto ranks = openRanksWithProgress("compare", path);
        if (!ranks) {
            std::fprintf(stderr, "memscope-cli compare: %s\n",
                         terminalText(ranks.message()).c_str());
            return 2;
        }
        runs.push_back(std::move(*ranks));
    }
    if (o.json) std::printf("[\n");
    for (size_t i = 1; i < runs.size(); ++i) {
        const RankComparison c = compareRanks(runs.front(), runs[i]);
        if (o.json)
            std::printf("%s%s", i > 1 ? ",\n" : "", rankComparisonJson(c).c_str());
        else
            std::printf("%s%s", i > 1 ? "\n" : "", rankComparisonText(c).c_str());
    }
    if (o.json) std::printf("]\n");
    return 0;
}

int run(const CompareOptions& o) {
    if (o.allocations && o.by_line) {
        std::fprintf(stderr, "memscope-cli compare: --allocations or --by-line, not both\n");
        return 1;
    }
    if (o.allocations) return runAllocations(o);
    if (o.by_line) return runByLine(o);
    if (o.at != "peak") {
        std::fprintf(stderr, "memscope-cli compare: --at goes with --allocations\n");
        return 1;
    }
    // Every run given is a folder of ranks: compare them rank by rank.
    if (o.paths.size() > 1 && std::all_of(o.paths.begin(), o.paths.end(), isMultiRankFolder)) {
        if (!o.baseline.empty() || o.csv || !o.phase.empty() || o.align != "time") {
            std::fprintf(
                stderr,
                "memscope-cli compare: folders of ranks are compared rank by rank against "
                "the first; --baseline, --phase, --align and --csv apply to single runs\n");
            return 1;
        }
        return runRanks(o);
    }
    std::vector<OpenedRun> runs;
    runs.reserve(o.paths.size());
    for (const std::string& path : o.paths) {
        auto opened = openWithProgress(path);
        if (!opened) {
            std::fprintf(stderr, "memscope-cli compare: %s\n",
                         terminalText(opened.message()).c_str());
            return 2;
        }
        printWarnings("compare", *opened);
        runs.push_back(std::move(*opened));
    }
    // One row per run: the device with the highest peak (a folder: of its ranks).
    std::vector<CompareInput> inputs;
    for (const OpenedRun& r : runs) {
        const OpenedTrace* best_part = nullptr;
        const DeviceTimeline* best = nullptr;
        for (const OpenedTrace& part : r.parts)
            if (const DeviceTimeline* d = part.timeline->highestPeakDevice();
                d && (!best || d->peak.bytes > best->peak.bytes))
                best = d, best_part = &part;
        if (!best) {
            std::fprintf(stderr,
                         "memscope-cli compare: %s: no device with memory events to compare\n",
                         terminalText(r.path).c_str());
            return 2;
        }
        inputs.push_back({r.path, r.name, RunRef{best_part->trace.get(), best}});
    }
    size_t baseline = defaultBaseline(inputs);  // by the runs' own names
    // Rows by the runs' names ("train.py rank 1"), told apart where they share one.
    std::vector<RunLabel> labels;
    for (const OpenedRun& r : runs) labels.push_back(runLabel(r));
    const std::vector<std::string> names = distinctRunNames(labels);
    for (size_t i = 0; i < inputs.size(); ++i) inputs[i].name = names[i];
    if (!o.baseline.empty()) {
        auto chosen = resolveBaseline(o.baseline, inputs);
        if (!chosen) {
            std::fprintf(stderr, "memscope-cli compare: %s\n",
                         terminalText(chosen.message()).c_str());
            return 1;
        }
        baseline = *chosen;
    }
    // The option checks admit only these names.
    const AlignMode align = alignModeFromString(o.align).value_or(AlignMode::Time);
    const PeakScope scope{trainingPhaseFromString(o.phase)};
    const CompareTable table = buildCompareTable(inputs, baseline, align, scope);
    if (o.json) {
        std::fputs(toJson(table).c_str(), stdout);
    } else if (o.csv) {
        std::fputs(toCsv(table).c_str(), stdout);
    } else {
        std::fputs(toText(table).c_str(), stdout);
        for (const CompareRow& row : table.rows)
            if (row.alignment.fell_back)
                std::printf("(%s has no training steps: aligned by time)\n",
                            terminalText(row.name).c_str());
    }
    return 0;
}

}  // namespace

Command addCompare(CLI::App& parent) {
    auto o = std::make_shared<CompareOptions>();
    CLI::App* app = parent.add_subcommand(
        "compare", "the GUI's compare table, headless: peaks and deltas vs a baseline");
    app->add_option("runs", o->paths, "trace files or folders of per-rank traces")->required();
    app->add_option(
        "--baseline", o->baseline,
        "the baseline run: its position (1 = the first given) or its path; default: the run "
        "recorded with the full-save policy, else the first");
    app->add_option("--align", o->align,
                    "how 'Peak at' lines runs up: time (s since start), step, phase")
        ->check(CLI::IsMember({"time", "step", "phase"}));
    app->add_option("--phase", o->phase,
                    "compare the peak within this phase instead of the whole run")
        ->check(CLI::IsMember({"forward", "backward", "optimizer"}));
    auto* json = app->add_flag("--json", o->json, "print JSON");
    app->add_flag("--csv", o->csv, "print CSV (raw numbers)")->excludes(json);
    app->add_flag("--allocations", o->allocations,
                  "two runs A B: the allocations alive in only A, both, only B, by site");
    app->add_flag("--by-line", o->by_line,
                  "bytes at each run's peak by source line, lines matched across the runs");
    app->add_option("--at", o->at,
                    "with --allocations, the moment: peak (default), step:N or step:N:PHASE");
    app->footer(
        "When every run given is a folder of several traces (a multi-rank run), they are\n"
        "compared rank by rank against the first: each rank's peak in both and its delta\n"
        "(ranks matched by number), and the worst rank of each with the change between them;\n"
        "ranks are read one by one on every core.\n\n"
        "--allocations A B: the allocations alive in A and in B at matched moments (each\n"
        "one's peak on its highest device, or --at step:N[:forward|backward|optimizer]),\n"
        "matched by site (the user frames by function, file name and line, not the\n"
        "absolute path, so two checkouts of one script match), then by size: only-A, both\n"
        "and only-B with counts and bytes per site. Only-A minus only-B bytes is A's live\n"
        "bytes minus B's.\n\n"
        "--by-line RUN...: the bytes at each run's peak (on its highest device) by source\n"
        "line (the innermost user frame, as summary --by-line), the runs side by side, a\n"
        "line matched across runs by function, file name and line; each run's lines past\n"
        "the first 100 make one row, so that each column adds up to its peak.\n\n"
        "Exit status: 0 compared, 1 usage error, 2 a run could not be read.");
    return {app, [o] { return run(*o); }, {}};
}

}  // namespace memscope::cli
