#include "memscope/report/summary_report.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "memscope/analysis/activation_theory.h"
#include "memscope/analysis/allocation_op.h"
#include "memscope/analysis/category_rules.h"
#include "memscope/analysis/leak_finder.h"
#include "memscope/analysis/module_breakdown.h"
#include "memscope/analysis/oom_report.h"
#include "memscope/analysis/op_breakdown.h"
#include "memscope/analysis/peak_explainer.h"
#include "memscope/analysis/source_lines.h"
#include "memscope/base/text_escape.h"
#include "memscope/base/units.h"
#include "memscope/inference/inference.h"
#include "memscope/model/phases.h"
#include "memscope/ranks/rank_imbalance.h"
#include "text_out.h"

namespace memscope {

std::string recordedRangeText(const Trace& t, std::string_view indent) {
    std::string out;
    const std::string* range = t.metadata.property("recorded_range");
    if (!range) return out;
    const std::string in(indent);
    appendf(out, "%srecorded only   %s (the run's own numbering)\n", in.c_str(),
            terminalText(*range).c_str());
    if (const std::string* alive = t.metadata.property("recorded_range.alive_at_start"))
        appendf(out, "%salive at start  %s, carried in from before the range\n", in.c_str(),
                terminalText(*alive).c_str());
    return out;
}

namespace {

std::string orDash(const std::optional<uint64_t>& v) {
    return v ? formatBytes(int64_t(*v)) : "-";
}

std::string timeText(const std::optional<int64_t>& us, const std::optional<int64_t>& first) {
    if (!us || !first) return "";
    char buf[48];
    std::snprintf(buf, sizeof buf, ", %.3f s", double(*us - *first) / 1e6);
    return buf;
}

void appendPhasePeaks(std::string& out, const DeviceSummary& d, bool inferredSteps,
                      bool inferredPhases) {
    const PhasePeaks& pp = d.phase_peaks;
    bool any = false;
    for (TrainingPhase p : kAllTrainingPhases) {
        const auto& peak = pp.by_phase[size_t(index(p))];
        if (!peak) continue;
        if (!any)
            appendf(out, "    peak by phase    (%sincrease over the phase's start)\n",
                    inferredPhases ? "phases inferred; " : "");
        any = true;
        const auto name = toString(p);
        appendf(out, "      %-10.*s     %-11s +%s\n", int(name.size()), name.data(),
                formatBytes(peak->bytes).c_str(), formatBytes(peak->increaseBytes()).c_str());
    }
    if (!pp.by_step.empty())
        appendf(out, "    steps            %zu%s\n", pp.by_step.size(),
                inferredSteps ? "  (inferred)" : "");
}

// The categories at the peak; an inferred one says the rule that decided
// most of its bytes (category_rules.h), so that a user can judge it.
void appendCategoriesAtPeak(std::string& out, const FileReport& f, int16_t device,
                            const DeviceSummary& d) {
    const DeviceTimeline* tl = f.timeline ? f.timeline->device(device) : nullptr;
    const std::vector<CategoryRuleBytes> rules =
        tl && f.trace ? categoryRulesAtPeak(*f.trace, *tl) : std::vector<CategoryRuleBytes>{};
    bool any = false;
    for (Category c : kAllCategories) {
        const int64_t bytes = d.categories_at_peak[size_t(index(c))];
        if (bytes == 0) continue;
        if (!any) appendf(out, "    at the peak\n");
        any = true;
        const auto name = toString(c);
        const CategorySources src = tl ? tl->category_sources[size_t(index(c))] : CategorySources{};
        appendf(out, "      %-16.*s %s%s", int(name.size()), name.data(),
                formatBytes(bytes).c_str(),
                src.inferred ? (src.recorded ? "  (partly inferred)" : "  (inferred)") : "");
        const auto main = std::find_if(rules.begin(), rules.end(), [&](const auto& r) {
            return r.category == c && r.rule != CategoryRule::Recorded;
        });
        if (src.inferred && main != rules.end() && c != Category::Unknown) {
            const auto why = describe(main->rule);
            appendf(out, "  %.*s", int(why.size()), why.data());
            if (main->bytes < bytes) appendf(out, " (%s)", formatBytes(main->bytes).c_str());
        }
        appendf(out, "\n");
    }
}

// The allocation sites that hold the most at the peak, by their user frame.
void appendSites(std::string& out, const Trace& trace, const DeviceTimeline& tl) {
    const auto sites = sitesAtPeak(trace, tl, 5);
    if (sites.empty() || (sites.size() == 1 && !sites[0].site)) return;
    appendf(out, "    top sites at the peak\n");
    for (const SiteAtPeak& s : sites) {
        const auto category = toString(s.category);
        appendf(out, "      %10s  %-15.*s %5u x  %s%s\n", formatBytes(s.bytes).c_str(),
                int(category.size()), category.data(), s.count, terminalText(s.label).c_str(),
                terminalText(opSuffix(trace, s.op)).c_str());
    }
}

// The first rows of a breakdown at the peak (most bytes first), each printed
// by `line` with its share of `total`, then the rest summed in one line, so
// that the lines add up to the peak.
template <typename Row, typename Line>
void appendTopRows(std::string& out, const std::vector<Row>& rows, int64_t total, Line line) {
    constexpr size_t kShown = 8;
    auto share = [&](int64_t bytes) {
        return total > 0 ? 100.0 * double(bytes) / double(total) : 0.0;
    };
    int64_t rest = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
        if (i < kShown)
            line(rows[i], share(rows[i].bytes));
        else
            rest += rows[i].bytes;
    }
    if (rows.size() > kShown)
        appendf(out, "      %10s  %5.1f%%  %-15s (%zu more)\n", formatBytes(rest).c_str(),
                share(rest), "", rows.size() - kShown);
}

// Which layers hold the peak: the largest module groups, the rest summed,
// so that the lines add up to the peak.
void appendModules(std::string& out, const Trace& trace, const ModuleAttribution& modules,
                   const DeviceTimeline& tl) {
    const ModuleBreakdown b = modulesAtPeak(trace, modules, tl);
    if (b.source == ModuleSource::None) {
        appendf(out,
                "    modules          none in this trace (record with memscope-cli record, or "
                "a snapshot with Python frames)\n");
        return;
    }
    if (b.rows.empty()) return;
    appendf(out, "    top layers at the peak  (modules %s)\n",
            std::string(toString(b.source)).c_str());
    appendTopRows(out, b.rows, b.total, [&](const ModuleBytes& r, double share) {
        const auto leading = Category(std::max_element(r.by_category.begin(), r.by_category.end()) -
                                      r.by_category.begin());
        const auto category = toString(leading);
        appendf(out, "      %10s  %5.1f%%  %-15.*s %s\n", formatBytes(r.bytes).c_str(), share,
                int(category.size()), category.data(), terminalText(r.path).c_str());
    });
}

// Which ops made the peak's bytes: the largest, the rest summed, so that the
// lines add up to the peak. Nothing for a trace without ops.
void appendOps(std::string& out, const Trace& trace, const OpAttribution& ops,
               const DeviceTimeline& tl) {
    const OpBreakdown b = opsAtPeak(trace, ops, tl);
    if (b.source == OpSource::None || b.rows.empty()) return;
    appendf(out, "    top ops at the peak  (ops %s)\n",
            std::string(opSourceText(b.source)).c_str());
    appendTopRows(out, b.rows, b.total, [&](const OpShare& r, double share) {
        appendf(out, "      %10s  %5.1f%%  %5u x  %s\n", formatBytes(r.bytes).c_str(), share,
                r.count, terminalText(r.label).c_str());
    });
}

// Each out-of-memory event in words (core's text), or the end state of a
// snapshot that holds nothing else.
// summary --by-line: the user's source lines holding the most at the peak.
void appendLines(std::string& out, const Trace& trace, const ModuleAttribution& modules,
                 const DeviceTimeline& tl, size_t top) {
    const LinesAtPeak lines = linesAtPeak(trace, modules, tl, top);
    if (lines.rows.empty()) return;
    appendf(out, "    source lines at the peak  (the innermost user frame)\n");
    auto share = [&](int64_t bytes) {
        return lines.total > 0 ? 100.0 * double(bytes) / double(lines.total) : 0.0;
    };
    for (const LineBytes& r : lines.rows)
        appendf(out, "      %10s  %5.1f%%  %5u x  %-16s %s\n", formatBytes(r.bytes).c_str(),
                share(r.bytes), r.count, terminalText(r.module).c_str(),
                terminalText(r.label).c_str());
    if (lines.rest_count)
        appendf(out, "      %10s  %5.1f%%  (%zu more lines)\n",
                formatBytes(lines.rest_bytes).c_str(), share(lines.rest_bytes), lines.rest_count);
}

void appendOoms(std::string& out, const FileReport& f, const DeviceSummary& d) {
    uint64_t shown = 0;
    for (const OomReport& r : d.ooms) {
        for (const std::string& line : oomReportLines(*f.trace, r))
            appendf(out, "    %s\n", terminalText(line).c_str());
        for (const auto& [event, alternatives] : f.oom_alternatives)
            if (event == r.trace_event)
                for (const std::string& line : oomAlternativeLines(alternatives))
                    appendf(out, "    %s\n", terminalText(line).c_str());
        if (!r.endState()) ++shown;
    }
    if (d.oom_count > shown)
        appendf(out, "    (%llu more out-of-memory events, not described)\n",
                (unsigned long long)(d.oom_count - shown));
}

// Runs of memscope-train: activations per layer against the literature.
void appendTheory(std::string& out, const Trace& trace, const DeviceTimeline& tl) {
    if (!trace.metrics || !trace.metrics->model) return;
    auto theory = activationTheory(trace, tl);
    if (!theory) {
        appendf(out, "    activation theory: %s\n", theory.message().c_str());
        return;
    }
    const ActivationTheory& t = *theory;
    appendf(out, "    activations per layer at the end of forward (step %d, %d-byte elements)\n",
            t.step, t.element_bytes);
    if (t.main_formula == ActivationFormula::None)
        appendf(out, "      no published per-layer formula for %s under %s\n", t.model.c_str(),
                t.policy.c_str());
    else
        appendf(out, "      formula        %s (%s)\n", t.formulasText().c_str(),
                std::string(formulaSource(t.main_formula)).c_str());
    appendf(out, "      measured       %s over %zu layers", formatBytes(t.measured_total).c_str(),
            t.layers.size());
    if (t.predicted_total)
        appendf(out, ", predicted %s, ratio %.4f",
                formatBytes(int64_t(std::llround(*t.predicted_total))).c_str(), *t.ratio());
    appendf(out, "\n");
    for (const LayerActivation& l : t.layers) {
        appendf(out, "        layer %-4d %12s", l.layer, formatBytes(l.measured).c_str());
        if (l.predicted)
            appendf(out, "  predicted %12s",
                    formatBytes(int64_t(std::llround(*l.predicted))).c_str());
        appendf(out, "\n");
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

}  // namespace

// "train.py rank 1: PATH  (native, from memscope-record)"
std::string summaryText(const FileReport& f) {
    std::string out;
    const std::string& source = f.trace ? f.trace->metadata.source_format : f.format;
    const std::string name = terminalText(f.name), path = terminalText(f.path);
    if (source.empty() || source == f.format)
        appendf(out, "%s: %s  (%s)\n", name.c_str(), path.c_str(), f.format.c_str());
    else
        appendf(out, "%s: %s  (%s, from %s)\n", name.c_str(), path.c_str(), f.format.c_str(),
                terminalText(source).c_str());
    for (const auto& w : f.warnings)
        appendf(out, "  warning: %s\n", terminalText(w.message).c_str());
    if (f.trace && f.trace->digest) {
        const DigestSection& digest = *f.trace->digest;
        const std::string summed =
            digest.summed_allocations
                ? ", " + std::to_string(digest.summed_allocations) + " of them summed by category"
                : "";
        appendf(out,
                "  a digest of %s: only the allocations alive at its peak%s; its envelope and\n"
                "  per-phase peaks show in the per-rank table of a folder of digests\n",
                digest.source.empty() ? "a trace" : terminalText(digest.source).c_str(),
                summed.c_str());
    }
    if (f.trace) out += recordedRangeText(*f.trace, "  ");
    if (f.summary.devices.empty())
        appendf(out, "  no devices: the trace holds no events and no segments\n");
    const ModuleAttribution modules = f.trace ? ModuleAttribution(*f.trace) : ModuleAttribution();
    const OpAttribution ops = f.trace ? OpAttribution(*f.trace) : OpAttribution();
    for (const auto& [device, d] : f.summary.devices) {
        appendf(out, "  device %d%s\n", device, device < 0 ? " (host)" : "");
        appendf(out, "    peak active      %s", formatBytes(d.peak_active_bytes).c_str());
        if (d.peak_event_index < 0)
            appendf(out, "  (before the first event)\n");
        else
            appendf(out, "  at event %lld%s\n", (long long)d.peak_event_index,
                    timeText(d.peak_time_us, d.first_time_us).c_str());
        appendf(out, "    final active     %s\n", orDash(d.final_active_bytes).c_str());
        appendf(out, "    reserved         %s", orDash(d.reserved_bytes).c_str());
        if (d.segments) appendf(out, "  in %llu segments", (unsigned long long)*d.segments);
        if (d.peak_reserved_bytes)
            appendf(out, "  (peak %s)", formatBytes(int64_t(*d.peak_reserved_bytes)).c_str());
        appendf(
            out,
            "\n    events           %llu  (alloc %llu, free_completed %llu, segment_alloc %llu, "
            "oom %llu)\n",
            (unsigned long long)d.trace_entries, (unsigned long long)d.alloc_count,
            (unsigned long long)d.free_completed_count, (unsigned long long)d.segment_alloc_count,
            (unsigned long long)d.oom_count);
        if (d.allocator_model)
            appendf(out, "    model            %s\n",
                    describeAllocatorModel(*d.allocator_model).c_str());
        if (d.first_time_us && d.last_time_us)
            appendf(out, "    duration         %.3f s\n",
                    double(*d.last_time_us - *d.first_time_us) / 1e6);
        if (f.trace) appendOoms(out, f, d);
        appendCategoriesAtPeak(out, f, device, d);
        const bool inferredPhases =
            f.trace &&
            std::any_of(f.trace->phases.begin(), f.trace->phases.end(),
                        [](const Phase& p) { return p.inferred && trainingPhaseOf(p.kind); });
        appendPhasePeaks(out, d, f.trace && stepSource(*f.trace) == StepSource::Inferred,
                         inferredPhases);
        if (f.trace && f.timeline)
            if (const DeviceTimeline* tl = f.timeline->device(device)) {
                // One line when the run grows step after step (leak_finder.h).
                const DeviceGrowth growth = deviceGrowth(*f.trace, *tl, modules);
                if (growth.grows) appendf(out, "    %s\n", growthText(growth).c_str());
                appendSites(out, *f.trace, *tl);
                appendModules(out, *f.trace, modules, *tl);
                appendOps(out, *f.trace, ops, *tl);
                if (f.by_line) appendLines(out, *f.trace, modules, *tl, f.by_line);
                appendTheory(out, *f.trace, *tl);
            }
    }
    return out;
}

// One row per rank and the imbalance in words. Parts without a rank beside
// ranked ones (a launcher that imported torch) are listed after, not compared.
std::string rankRunText(const RankRun& run) {
    std::string out;
    const bool any_ranked = std::any_of(run.ranks.begin(), run.ranks.end(),
                                        [](const RankDigest& r) { return r.rank >= 0; });
    size_t ranked = 0;
    for (const RankDigest& r : run.ranks) ranked += !any_ranked || r.rank >= 0;
    appendf(out, "%s: %s  (%zu ranks", terminalText(run.name).c_str(),
            terminalText(run.path).c_str(), ranked);
    if (ranked < run.ranks.size())
        appendf(out, ", %zu other process%s", run.ranks.size() - ranked,
                run.ranks.size() - ranked == 1 ? "" : "es");
    if (!run.failures.empty()) appendf(out, ", %zu not read", run.failures.size());
    appendf(out, ")\n");
    appendf(out, "  %-10s %-6s %11s  %-10s %5s  %11s  %s\n", "rank", "device", "peak", "phase",
            "step", "reserved", "top categories at the peak");
    for (const RankDigest& r : run.ranks) {
        if (any_ranked && r.rank < 0) continue;
        const std::string phase = r.peak_phase ? std::string(toString(*r.peak_phase)) : "-";
        const std::string step = r.peak_step >= 0 ? std::to_string(r.peak_step) : "-";
        const std::string device = r.device < 0 ? "host" : std::to_string(r.device);
        appendf(out, "  %-10s %-6s %11s  %-10s %5s  %11s  %s%s\n", terminalText(r.name).c_str(),
                device.c_str(), formatBytes(r.peak_bytes).c_str(), phase.c_str(), step.c_str(),
                orDash(r.peak_reserved_bytes).c_str(), topCategories(r, 3).c_str(),
                r.from_digest ? "  (digest)" : "");
    }
    for (const RankDigest& r : run.ranks)
        if (any_ranked && r.rank < 0)
            appendf(out, "  not a rank: %s (%s), peak %s\n", terminalText(r.name).c_str(),
                    terminalText(r.path).c_str(), formatBytes(r.peak_bytes).c_str());
    for (const RankFailure& f : run.failures)
        appendf(out, "  not read: %s\n", terminalText(f.message).c_str());
    if (const auto m = rankImbalance(run.ranks))
        appendf(out, "  imbalance: %s\n", imbalanceText(*m, run.ranks).c_str());
    return out;
}

}  // namespace memscope
