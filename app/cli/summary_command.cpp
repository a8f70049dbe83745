// memscope-cli summary FILE... [--json]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli_common.h"
#include "commands.h"
#include "memscope/analysis/activation_theory.h"
#include "memscope/ranks/digest_trace.h"
#include "memscope/analysis/module_breakdown.h"
#include "memscope/analysis/oom_report.h"
#include "memscope/analysis/peak_explainer.h"
#include "memscope/ranks/rank_imbalance.h"
#include "memscope/report/rank_report.h"
#include "memscope/report/report_json.h"
#include "memscope/analysis/summary.h"
#include "memscope/base/units.h"
#include "memscope/inference/inference.h"
#include "memscope/model/phases.h"
#include "memscope/model/run_name.h"

namespace memscope::cli {
namespace {

struct SummaryOptions {
    std::vector<std::string> paths;
    bool json = false;
};

std::string orDash(const std::optional<uint64_t>& v) {
    return v ? formatBytes(int64_t(*v)) : "-";
}

std::string timeText(const std::optional<int64_t>& us, const std::optional<int64_t>& first) {
    if (!us || !first) return "";
    char buf[48];
    std::snprintf(buf, sizeof buf, ", %.3f s", double(*us - *first) / 1e6);
    return buf;
}

void printPhasePeaks(const DeviceSummary& d, bool inferredSteps, bool inferredPhases) {
    const PhasePeaks& pp = d.phase_peaks;
    bool any = false;
    for (TrainingPhase p : kAllTrainingPhases) {
        const auto& peak = pp.by_phase[size_t(index(p))];
        if (!peak) continue;
        if (!any)
            std::printf("    peak by phase    (%sincrease over the phase's start)\n",
                        inferredPhases ? "phases inferred; " : "");
        any = true;
        const auto name = toString(p);
        std::printf("      %-10.*s     %-11s +%s\n", int(name.size()), name.data(),
                    formatBytes(peak->bytes).c_str(), formatBytes(peak->increaseBytes()).c_str());
    }
    if (!pp.by_step.empty())
        std::printf("    steps            %zu%s\n", pp.by_step.size(),
                    inferredSteps ? "  (inferred)" : "");
}

// The allocation sites that hold the most at the peak, by their user frame.
void printSites(const Trace& trace, const DeviceTimeline& tl) {
    const auto sites = sitesAtPeak(trace, tl, 5);
    if (sites.empty() || (sites.size() == 1 && !sites[0].site)) return;
    std::printf("    top sites at the peak\n");
    for (const SiteAtPeak& s : sites) {
        const auto category = toString(s.category);
        std::printf("      %10s  %-15.*s %5u x  %s\n", formatBytes(s.bytes).c_str(),
                    int(category.size()), category.data(), s.count, s.label.c_str());
    }
}

// Which layers hold the peak: the largest module groups, the rest summed,
// so that the lines add up to the peak.
void printModules(const Trace& trace, const ModuleAttribution& modules, const DeviceTimeline& tl) {
    const ModuleBreakdown b = modulesAtPeak(trace, modules, tl);
    if (b.source == ModuleSource::None) {
        std::printf(
            "    modules          none in this trace (record with memscope-cli record, or "
            "a snapshot with Python frames)\n");
        return;
    }
    if (b.rows.empty()) return;
    std::printf("    top layers at the peak  (modules %s)\n",
                std::string(toString(b.source)).c_str());
    constexpr size_t kShown = 8;
    int64_t rest = 0;
    size_t rest_count = 0;
    for (size_t i = 0; i < b.rows.size(); ++i) {
        const ModuleBytes& r = b.rows[i];
        if (i >= kShown) {
            rest += r.bytes;
            ++rest_count;
            continue;
        }
        const auto leading = Category(std::max_element(r.by_category.begin(), r.by_category.end()) -
                                      r.by_category.begin());
        const double share = b.total > 0 ? 100.0 * double(r.bytes) / double(b.total) : 0.0;
        const auto category = toString(leading);
        std::printf("      %10s  %5.1f%%  %-15.*s %s\n", formatBytes(r.bytes).c_str(), share,
                    int(category.size()), category.data(), r.path.c_str());
    }
    if (rest_count)
        std::printf("      %10s  %5.1f%%  %-15s (%zu more)\n", formatBytes(rest).c_str(),
                    b.total > 0 ? 100.0 * double(rest) / double(b.total) : 0.0, "", rest_count);
}

// Each out-of-memory event in words (core's text), or the end state of a
// snapshot that holds nothing else.
void printOoms(const Trace& trace, const DeviceSummary& d) {
    uint64_t shown = 0;
    for (const OomReport& r : d.ooms) {
        for (const std::string& line : oomReportLines(trace, r))
            std::printf("    %s\n", line.c_str());
        if (!r.endState()) ++shown;
    }
    if (d.oom_count > shown)
        std::printf("    (%llu more out-of-memory events, not described)\n",
                    (unsigned long long)(d.oom_count - shown));
}

// Runs of memscope-train: activations per layer against the literature.
void printTheory(const Trace& trace, const DeviceTimeline& tl) {
    if (!trace.metrics || !trace.metrics->model) return;
    auto theory = activationTheory(trace, tl);
    if (!theory) {
        std::printf("    activation theory: %s\n", theory.message().c_str());
        return;
    }
    const ActivationTheory& t = *theory;
    std::printf("    activations per layer at the end of forward (step %d, %d-byte elements)\n",
                t.step, t.element_bytes);
    if (t.main_formula == ActivationFormula::None)
        std::printf("      no published per-layer formula for %s under %s\n", t.model.c_str(),
                    t.policy.c_str());
    else
        std::printf("      formula        %s (%s)\n", t.formulasText().c_str(),
                    std::string(formulaSource(t.main_formula)).c_str());
    std::printf("      measured       %s over %zu layers", formatBytes(t.measured_total).c_str(),
                t.layers.size());
    if (t.predicted_total)
        std::printf(", predicted %s, ratio %.4f",
                    formatBytes(int64_t(std::llround(*t.predicted_total))).c_str(), *t.ratio());
    std::printf("\n");
    for (const LayerActivation& l : t.layers) {
        std::printf("        layer %-4d %12s", l.layer, formatBytes(l.measured).c_str());
        if (l.predicted)
            std::printf("  predicted %12s",
                        formatBytes(int64_t(std::llround(*l.predicted))).c_str());
        std::printf("\n");
    }
}

// "train.py rank 1: PATH  (native, from memscope-record)"
void printTable(const FileReport& f) {
    const std::string& source = f.trace ? f.trace->metadata.source_format : f.format;
    if (source.empty() || source == f.format)
        std::printf("%s: %s  (%s)\n", f.name.c_str(), f.path.c_str(), f.format.c_str());
    else
        std::printf("%s: %s  (%s, from %s)\n", f.name.c_str(), f.path.c_str(), f.format.c_str(),
                    source.c_str());
    for (const auto& w : f.warnings) std::printf("  warning: %s\n", w.message.c_str());
    if (f.trace && f.trace->digest) {
        const DigestSection& digest = *f.trace->digest;
        const std::string summed =
            digest.summed_allocations
                ? ", " + std::to_string(digest.summed_allocations) + " of them summed by category"
                : "";
        std::printf(
            "  a digest of %s: only the allocations alive at its peak%s; its envelope and\n"
            "  per-phase peaks show in the per-rank table of a folder of digests\n",
            digest.source.empty() ? "a trace" : digest.source.c_str(), summed.c_str());
    }
    if (f.trace) printRecordedRange(*f.trace, "  ");
    if (f.summary.devices.empty())
        std::printf("  no devices: the trace holds no events and no segments\n");
    const ModuleAttribution modules = f.trace ? ModuleAttribution(*f.trace) : ModuleAttribution();
    for (const auto& [device, d] : f.summary.devices) {
        std::printf("  device %d%s\n", device, device < 0 ? " (host)" : "");
        std::printf("    peak active      %s", formatBytes(d.peak_active_bytes).c_str());
        if (d.peak_event_index < 0)
            std::printf("  (before the first event)\n");
        else
            std::printf("  at event %lld%s\n", (long long)d.peak_event_index,
                        timeText(d.peak_time_us, d.first_time_us).c_str());
        std::printf("    final active     %s\n", orDash(d.final_active_bytes).c_str());
        std::printf("    reserved         %s", orDash(d.reserved_bytes).c_str());
        if (d.segments) std::printf("  in %llu segments", (unsigned long long)*d.segments);
        if (d.peak_reserved_bytes)
            std::printf("  (peak %s)", formatBytes(int64_t(*d.peak_reserved_bytes)).c_str());
        std::printf(
            "\n    events           %llu  (alloc %llu, free_completed %llu, segment_alloc %llu, "
            "oom %llu)\n",
            (unsigned long long)d.trace_entries, (unsigned long long)d.alloc_count,
            (unsigned long long)d.free_completed_count, (unsigned long long)d.segment_alloc_count,
            (unsigned long long)d.oom_count);
        if (d.first_time_us && d.last_time_us)
            std::printf("    duration         %.3f s\n",
                        double(*d.last_time_us - *d.first_time_us) / 1e6);
        if (f.trace) printOoms(*f.trace, d);
        bool any = false;
        for (Category c : kAllCategories) {
            const int64_t bytes = d.categories_at_peak[size_t(index(c))];
            if (bytes == 0) continue;
            if (!any) std::printf("    at the peak\n");
            any = true;
            const auto name = toString(c);
            const DeviceTimeline* tl = f.timeline ? f.timeline->device(device) : nullptr;
            const CategorySources src =
                tl ? tl->category_sources[size_t(index(c))] : CategorySources{};
            std::printf(
                "      %-16.*s %s%s\n", int(name.size()), name.data(), formatBytes(bytes).c_str(),
                src.inferred ? (src.recorded ? "  (partly inferred)" : "  (inferred)") : "");
        }
        const bool inferredPhases =
            f.trace &&
            std::any_of(f.trace->phases.begin(), f.trace->phases.end(),
                        [](const Phase& p) { return p.inferred && trainingPhaseOf(p.kind); });
        printPhasePeaks(d, f.trace && stepSource(*f.trace) == StepSource::Inferred, inferredPhases);
        if (f.trace && f.timeline)
            if (const DeviceTimeline* tl = f.timeline->device(device)) {
                printSites(*f.trace, *tl);
                printModules(*f.trace, modules, *tl);
                printTheory(*f.trace, *tl);
            }
    }
}

// The largest categories at a rank's peak: "activation 6.00 MiB, parameter 3.00 MiB".
std::string topCategories(const RankDigest& r, size_t count) {
    std::vector<Category> order(kAllCategories.begin(), kAllCategories.end());
    std::stable_sort(order.begin(), order.end(), [&](Category a, Category b) {
        return r.categories_at_peak[size_t(index(a))] > r.categories_at_peak[size_t(index(b))];
    });
    std::string out;
    for (size_t i = 0; i < order.size() && i < count; ++i) {
        const int64_t bytes = r.categories_at_peak[size_t(index(order[i]))];
        if (bytes <= 0) break;
        if (!out.empty()) out += ", ";
        out += std::string(toString(order[i])) + " " + formatBytes(bytes);
    }
    return out.empty() ? "-" : out;
}

// One row per rank and the imbalance in words. Parts without a rank beside
// ranked ones (a launcher that imported torch) are listed after, not compared.
void printRankTable(const RankRun& run) {
    const bool any_ranked = std::any_of(run.ranks.begin(), run.ranks.end(),
                                        [](const RankDigest& r) { return r.rank >= 0; });
    size_t ranked = 0;
    for (const RankDigest& r : run.ranks) ranked += !any_ranked || r.rank >= 0;
    std::printf("%s: %s  (%zu ranks", run.name.c_str(), run.path.c_str(), ranked);
    if (ranked < run.ranks.size())
        std::printf(", %zu other process%s", run.ranks.size() - ranked,
                    run.ranks.size() - ranked == 1 ? "" : "es");
    if (!run.failures.empty()) std::printf(", %zu not read", run.failures.size());
    std::printf(")\n");
    std::printf("  %-10s %-6s %11s  %-10s %5s  %11s  %s\n", "rank", "device", "peak", "phase",
                "step", "reserved", "top categories at the peak");
    for (const RankDigest& r : run.ranks) {
        if (any_ranked && r.rank < 0) continue;
        const std::string phase = r.peak_phase ? std::string(toString(*r.peak_phase)) : "-";
        const std::string step = r.peak_step >= 0 ? std::to_string(r.peak_step) : "-";
        const std::string device = r.device < 0 ? "host" : std::to_string(r.device);
        std::printf("  %-10s %-6s %11s  %-10s %5s  %11s  %s%s\n", r.name.c_str(), device.c_str(),
                    formatBytes(r.peak_bytes).c_str(), phase.c_str(), step.c_str(),
                    orDash(r.peak_reserved_bytes).c_str(), topCategories(r, 3).c_str(),
                    r.from_digest ? "  (digest)" : "");
    }
    for (const RankDigest& r : run.ranks)
        if (any_ranked && r.rank < 0)
            std::printf("  not a rank: %s (%s), peak %s\n", r.name.c_str(), r.path.c_str(),
                        formatBytes(r.peak_bytes).c_str());
    for (const RankFailure& f : run.failures) std::printf("  not read: %s\n", f.message.c_str());
    if (const auto m = rankImbalance(run.ranks))
        std::printf("  imbalance: %s\n", imbalanceText(*m, run.ranks).c_str());
}

int run(const SummaryOptions& o) {
    int exit_code = 0;
    std::vector<OpenedRun> runs;  // keep the traces the reports point at
    std::vector<FileReport> reports;
    std::vector<RankRun> rank_runs;
    runs.reserve(o.paths.size());
    for (const std::string& path : o.paths) {
        // Many ranks: one row each, read rank by rank in bounded memory.
        if (isMultiRankFolder(path)) {
            auto ranks = openRanksWithProgress("summary", path);
            if (!ranks) {
                std::fprintf(stderr, "memscope-cli summary: %s\n", ranks.message().c_str());
                exit_code = 2;
                continue;
            }
            if (!ranks->failures.empty()) exit_code = 2;
            rank_runs.push_back(std::move(*ranks));
            continue;
        }
        auto opened = openWithProgress(path);
        if (!opened) {
            std::fprintf(stderr, "memscope-cli summary: %s\n", opened.message().c_str());
            exit_code = 2;
            continue;
        }
        runs.push_back(std::move(*opened));
    }
    // Each file's run by its name ("train.py rank 1"), told apart from the
    // others' where they share one.
    std::vector<RunLabel> labels;
    for (const OpenedRun& r : runs)
        for (const OpenedTrace& part : r.parts) labels.push_back(runLabel(part));
    const std::vector<std::string> names = distinctRunNames(labels);
    for (const OpenedRun& r : runs)
        for (const OpenedTrace& part : r.parts) {
            FileReport f{part.path,
                         part.format,
                         part.trace.get(),
                         part.timeline.get(),
                         summarize(*part.trace, *part.timeline),
                         part.warnings,
                         names[reports.size()]};
            if (!o.json) {
                if (!reports.empty()) std::printf("\n");
                printTable(f);
            }
            reports.push_back(std::move(f));
        }
    for (const RankRun& r : rank_runs) {
        if (o.json) continue;
        if (!reports.empty() || &r != &rank_runs.front()) std::printf("\n");
        printRankTable(r);
    }
    if (o.json) std::fputs(summaryToJson(reports, rank_runs).c_str(), stdout);
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
        "Exit status: 0 all read, 2 some input could not be read (the others are still\n"
        "summarized), 1 usage error.");
    app->add_option("files", o->paths, "trace files or folders of traces")->required();
    app->add_flag("--json", o->json, "print JSON instead of a table");
    return {app, [o] { return run(*o); }, {}};
}

}  // namespace memscope::cli
