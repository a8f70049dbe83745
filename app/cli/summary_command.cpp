// memscope-cli summary FILE... [--json]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli_common.h"
#include "commands.h"
#include "memscope/analysis/summary.h"
#include "memscope/base/stage_times.h"
#include "memscope/base/text_escape.h"
#include "memscope/model/run_name.h"
#include "memscope/report/report_json.h"
#include "memscope/report/summary_report.h"

namespace memscope::cli {
namespace {

struct SummaryOptions {
    std::vector<std::string> paths;
    bool json = false;
    bool by_line = false;
    bool timings = false;
};

int run(const SummaryOptions& o) {
    int exit_code = 0;
    std::vector<OpenedRun> runs;  // keep the traces the reports point at
    std::vector<FileReport> reports;
    std::vector<RankRun> rank_runs;
    StageTimes times;
    OpenOptions open_options;
    if (o.timings) open_options.stages = &times;
    // Each file's allocator model is replayed while inference runs (on the
    // core it leaves idle much of the time), by path, and completed as soon
    // as its open returns: the same file named twice is opened twice, and
    // each open's replays are its own.
    std::map<std::string, EarlyAllocatorModels> early;
    std::vector<std::vector<TraceSummary>> summaries;  // per run, per part
    open_options.beside_inference = [&early, &times, &o](const std::string& path,
                                                         const Trace& trace,
                                                         const detail::DeviceOrder& order) {
        std::function<void()> work = allocatorModelsBesideInference(trace, order, early[path]);
        if (!work || !o.timings) return work;
        return std::function<void()>([work = std::move(work), &times] {
            StageClock clock(&times, "allocator model (beside inference)");
            work();
        });
    };
    runs.reserve(o.paths.size());
    for (const std::string& path : o.paths) {
        // Many ranks: one row each, read rank by rank in bounded memory.
        if (isMultiRankFolder(path)) {
            auto ranks = openRanksWithProgress("summary", path);
            if (!ranks) {
                std::fprintf(stderr, "memscope-cli summary: %s\n",
                             terminalText(ranks.message()).c_str());
                exit_code = 2;
                continue;
            }
            if (!ranks->failures.empty()) exit_code = 2;
            rank_runs.push_back(std::move(*ranks));
            continue;
        }
        early.clear();
        auto opened = openWithProgress(path, open_options);
        if (!opened) {
            std::fprintf(stderr, "memscope-cli summary: %s\n",
                         terminalText(opened.message()).c_str());
            exit_code = 2;
            continue;
        }
        std::vector<TraceSummary>& parts = summaries.emplace_back();
        for (const OpenedTrace& part : opened->parts) {
            {
                StageClock clock(open_options.stages, "summary");
                parts.push_back(summarize(*part.trace, *part.timeline));
            }
            StageClock clock(open_options.stages, "allocator model");
            addAllocatorModels(parts.back(), *part.trace, *part.timeline, early[part.path]);
        }
        runs.push_back(std::move(*opened));
    }
    // Each file's run by its name ("train.py rank 1"), told apart from the
    // others' where they share one.
    std::vector<RunLabel> labels;
    for (const OpenedRun& r : runs)
        for (const OpenedTrace& part : r.parts) labels.push_back(runLabel(part));
    const std::vector<std::string> names = distinctRunNames(labels);
    for (size_t r = 0; r < runs.size(); ++r)
        for (size_t k = 0; k < runs[r].parts.size(); ++k) {
            const OpenedTrace& part = runs[r].parts[k];
            StageClock clock(open_options.stages, "report");
            FileReport f{part.path,
                         part.format,
                         part.trace.get(),
                         part.timeline.get(),
                         std::move(summaries[r][k]),
                         part.warnings,
                         names[reports.size()]};
            if (o.by_line) f.by_line = 10;
            addOomAlternatives(f);
            if (!o.json) {
                if (!reports.empty()) std::printf("\n");
                std::fputs(summaryText(f).c_str(), stdout);
            }
            reports.push_back(std::move(f));
        }
    for (const RankRun& r : rank_runs) {
        if (o.json) continue;
        if (!reports.empty() || &r != &rank_runs.front()) std::printf("\n");
        std::fputs(rankRunText(r).c_str(), stdout);
    }
    if (o.json) {
        StageClock clock(open_options.stages, "report");
        std::fputs(summaryToJson(reports, rank_runs).c_str(), stdout);
    }
    if (o.timings) std::fprintf(stderr, "timings: %s\n", times.text().c_str());
    return exit_code;
}

}  // namespace

Command addSummary(CLI::App& parent) {
    auto o = std::make_shared<SummaryOptions>();
    CLI::App* app = parent.add_subcommand(
        "summary", "peak, live and reserved bytes per device, peaks per phase");
    app->footer(
        "Per device: reserved and live bytes at the end, the peak of live bytes (as PyTorch\n"
        "memory_viz's Active Memory Timeline counts them), when it happened, what was live\n"
        "then by category, and the peak within each training phase (forward, backward,\n"
        "optimizer) and step. At each out-of-memory event: the request, what the device and\n"
        "the allocator's cache had free, the largest free block, whether fragmentation or\n"
        "full memory caused it, and what was alive. Each file is headed by its run's name:\n"
        "the script or program and its rank (\"train.py rank 1\"), with its pid or file\n"
        "name where two share one.\n\n"
        "A folder of several traces is a multi-rank run: one row per rank (its peak, the\n"
        "phase and step of the peak, the reserved peak, the top categories at the peak) and\n"
        "the imbalance (the highest rank, how far above the lowest, max/mean, max - min).\n"
        "Ranks are read one by one on every core, so memory does not grow with their\n"
        "number; a rank that cannot be read is reported and the others are shown. JSON:\n"
        "\"runs\": [{\"ranks\": [...], \"imbalance\": {...}, \"failures\": [...]}].\n\n"
        "--by-line adds the user's source lines (each allocation's innermost frame outside\n"
        "installed packages) holding the most bytes at the peak, with the layer (module)\n"
        "holding most of each; allocations without such a frame make one last row, so the\n"
        "rows add up to the peak. JSON: \"lines_at_peak\": [...]. A device that grows step\n"
        "after step gets one line: \"grows 2.50 MiB per step: head 2.00 MiB\" (see leaks).\n\n"
        "Exit status: 0 all read, 2 some input could not be read (the others are still\n"
        "summarized), 1 usage error.");
    app->add_option("files", o->paths, "trace files or folders of traces")->required();
    app->add_flag("--json", o->json, "print JSON instead of a table");
    app->add_flag("--timings", o->timings,
                  "print the wall time of each stage (import, inference, timeline, summary, "
                  "allocator model, report) to stderr; the allocator model is replayed beside "
                  "inference, on the other core, and its time there is its own line");
    app->add_flag("--by-line", o->by_line,
                  "the 10 source lines of yours (innermost user frame) holding the most at the "
                  "peak, with their layer");
    return {app, [o] { return run(*o); }, {}};
}

}  // namespace memscope::cli
