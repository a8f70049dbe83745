// memscope-cli compare A B... [--baseline N|PATH] [--align time|step|phase]
//                             [--phase forward|backward|optimizer] [--json|--csv]
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli_common.h"
#include "commands.h"
#include "memscope/analysis/compare_table.h"
#include "memscope/ranks/rank_compare.h"
#include "memscope/report/compare_report.h"
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
};

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
            std::fprintf(stderr, "memscope-cli compare: %s\n", ranks.message().c_str());
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
            std::fprintf(stderr, "memscope-cli compare: %s\n", opened.message().c_str());
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
            for (const DeviceTimeline& d : part.timeline->devices())
                if (!best || d.peak.bytes > best->peak.bytes) best = &d, best_part = &part;
        if (!best) {
            std::fprintf(stderr,
                         "memscope-cli compare: %s: no device with memory events to compare\n",
                         r.path.c_str());
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
            std::fprintf(stderr, "memscope-cli compare: %s\n", chosen.message().c_str());
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
                std::printf("(%s has no training steps: aligned by time)\n", row.name.c_str());
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
    app->footer(
        "When every run given is a folder of several traces (a multi-rank run), they are\n"
        "compared rank by rank against the first: each rank's peak in both and its delta\n"
        "(ranks matched by number), and the worst rank of each with the change between them;\n"
        "ranks are read one by one on every core.\n\n"
        "Exit status: 0 compared, 1 usage error, 2 a run could not be read.");
    return {app, [o] { return run(*o); }, {}};
}

}  // namespace memscope::cli
