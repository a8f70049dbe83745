#include "memscope/analysis/compare_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "memscope/analysis/policy_explainer.h"
#include "memscope/base/units.h"

namespace memscope {
namespace {

std::string fixed(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

// Numbers in CSV and JSON: enough digits to round-trip a double.
std::string number(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

}  // namespace

std::string_view toString(AlignMode mode) {
    switch (mode) {
        case AlignMode::Time:
            return "time";
        case AlignMode::Step:
            return "step";
        case AlignMode::Phase:
            return "phase";
    }
    return "time";
}

std::optional<AlignMode> alignModeFromString(std::string_view name) {
    for (AlignMode m : {AlignMode::Time, AlignMode::Step, AlignMode::Phase})
        if (toString(m) == name) return m;
    return std::nullopt;
}

size_t defaultBaseline(std::span<const CompareInput> runs) {
    // A measurement, never a simulation (Trace::prediction, whatever the
    // file or the run is called), where any run was measured.
    const auto isMeasured = [&](size_t i) {
        const Trace* t = runs[i].run.trace;
        return !t || !t->prediction;
    };
    bool any_measured = false;
    for (size_t i = 0; i < runs.size(); ++i) any_measured |= isMeasured(i);
    const auto measured = [&](size_t i) { return !any_measured || isMeasured(i); };
    for (size_t i = 0; i < runs.size(); ++i) {
        const Trace* t = runs[i].run.trace;
        if (measured(i) && t && t->metrics && t->metrics->policy == "full") return i;
    }
    for (size_t i = 0; i < runs.size(); ++i)
        if (measured(i) && runs[i].name.ends_with("full")) return i;
    for (size_t i = 0; i < runs.size(); ++i)
        if (measured(i)) return i;
    return 0;
}

CompareTable buildCompareTable(std::span<const CompareInput> runs, size_t baseline, AlignMode align,
                               PeakScope scope) {
    CompareTable t;
    t.align = align;
    t.scope = scope;
    t.baseline = runs.empty() ? 0 : std::min(baseline, runs.size() - 1);
    std::vector<RunRef> refs;
    for (const CompareInput& in : runs) refs.push_back(in.run);
    std::vector<Alignment> alignments = alignRuns(refs, align, t.baseline);
    t.axis_unit = refs.empty() ? std::string() : alignUnit(align, refs.front());
    std::vector<bool> present(kCategoryCount, false);
    for (size_t i = 0; i < runs.size(); ++i) {
        CompareRow row;
        row.path = runs[i].path;
        row.name = runs[i].name;
        row.summary = summarizeRun(runs[i].run);
        if (row.name.empty()) row.name = row.summary.name;
        row.peak = scopedPeak(row.summary, scope);
        row.alignment = alignments[i];
        row.run = runs[i].run;
        if (runs[i].run.trace) row.time_base = runs[i].run.trace->metadata.time_base;
        if (row.peak && scope.phase) {
            // The innermost recorded phase at the phase's peak, or the phase's name.
            row.peak_phase = runs[i].run.trace && !row.peak->phase.isNull()
                                 ? phasePath(*runs[i].run.trace, row.peak->phase)
                                 : std::string(toString(*scope.phase));
        } else if (row.peak) {
            row.peak_phase = row.summary.peak_phase;
        }
        if (row.peak) {
            row.peak_x = row.alignment.map.forward(row.peak->time);
            for (Category c : kAllCategories)
                if (row.peak->by_category[size_t(index(c))] != 0) present[size_t(index(c))] = true;
        }
        t.rows.push_back(std::move(row));
    }
    for (CompareRow& row : t.rows) {
        if (!row.peak || !row.run.trace || !row.run.timeline) continue;
        const ModuleAttribution attribution(*row.run.trace);
        if (attribution.empty()) continue;
        // The whole run's peak has its live intervals; a phase's peak is a time.
        row.modules =
            scope.phase ? modulesAt(*row.run.trace, attribution, *row.run.timeline, row.peak->time)
                        : modulesAtPeak(*row.run.trace, attribution, *row.run.timeline);
    }
    for (CompareRow& row : t.rows) {
        row.delta = compareToBaseline(Baseline<RunSummary>{t.rows[t.baseline].summary},
                                      Candidate<RunSummary>{row.summary}, scope);
        const ModuleBreakdown& base = t.rows[t.baseline].modules;
        if (base.source != ModuleSource::None && row.modules.source != ModuleSource::None)
            row.module_deltas = compareModules(Baseline<ModuleBreakdown>{base},
                                               Candidate<ModuleBreakdown>{row.modules});
    }
    for (Category c : kAllCategories)
        if (present[size_t(index(c))]) t.categories.push_back(c);
    return t;
}

std::vector<CompareColumn> CompareTable::columns() const {
    using K = CompareColumnKind;
    std::vector<CompareColumn> cols = {{K::Run},      {K::Peak},          {K::PeakDelta},
                                       {K::PeakAt},   {K::PeakPhase},     {K::ReservedPeak},
                                       {K::StepTime}, {K::StepTimeRatio}, {K::RecomputeOverhead}};
    for (Category c : categories) cols.push_back({K::CategoryAtPeak, c});
    return cols;
}

std::string CompareTable::header(CompareColumn column) const {
    const std::string scope_name =
        scope.phase ? " (" + std::string(toString(*scope.phase)) + ")" : "";
    switch (column.kind) {
        case CompareColumnKind::Run:
            return "Run";
        case CompareColumnKind::Peak:
            return "Peak" + scope_name;
        case CompareColumnKind::PeakDelta:
            return "Δ peak vs baseline";
        case CompareColumnKind::PeakAt:
            return "Peak at";
        case CompareColumnKind::PeakPhase:
            return "Peak phase";
        case CompareColumnKind::ReservedPeak:
            return "Reserved peak";
        case CompareColumnKind::StepTime:
            return "Step time";
        case CompareColumnKind::StepTimeRatio:
            return "Step time vs baseline";
        case CompareColumnKind::RecomputeOverhead:
            return "Recompute overhead";
        case CompareColumnKind::CategoryAtPeak:
            return std::string(toString(column.category)) + " at peak";
    }
    return {};
}

std::string CompareTable::cell(size_t r, CompareColumn column) const {
    if (r >= rows.size()) return {};
    const CompareRow& row = rows[r];
    const RunSummary& s = row.summary;
    const bool is_baseline = r == baseline;
    switch (column.kind) {
        case CompareColumnKind::Run:
            return row.name + (is_baseline ? " (baseline)" : "");
        case CompareColumnKind::Peak:
            return row.peak ? formatBytes(row.peak->bytes) : "—";
        case CompareColumnKind::PeakDelta: {
            if (is_baseline) return "—";
            if (!row.delta.peak_bytes) return "";
            return formatSignedBytes(*row.delta.peak_bytes) + " (" +
                   (row.delta.peak_ratio >= 1 ? "+" : "") +
                   fixed((row.delta.peak_ratio - 1.0) * 100.0, 1) + "%)";
        }
        case CompareColumnKind::PeakAt: {
            if (!row.peak) return "";
            if (axis_unit == "s") return fixed(row.peak_x, 3) + " s";
            if (axis_unit == "step") return "step " + fixed(row.peak_x, 2);
            return "event " + fixed(row.peak_x, 0);
        }
        case CompareColumnKind::PeakPhase:
            return row.peak_phase;
        case CompareColumnKind::ReservedPeak:
            return s.has_reserved ? formatBytes(s.reserved_peak) : "—";
        case CompareColumnKind::StepTime:
            return s.step_time_s ? fixed(*s.step_time_s * 1e3, 2) + " ms" : "";
        case CompareColumnKind::StepTimeRatio:
            if (is_baseline) return "—";
            return row.delta.step_time_ratio ? "×" + fixed(*row.delta.step_time_ratio, 2) : "";
        case CompareColumnKind::RecomputeOverhead:
            return s.recompute_overhead ? fixed(*s.recompute_overhead * 100.0, 1) + "%" : "";
        case CompareColumnKind::CategoryAtPeak:
            return row.peak ? formatBytes(row.peak->by_category[size_t(index(column.category))])
                            : "";
    }
    return {};
}

std::string CompareTable::raw(size_t r, CompareColumn column) const {
    if (r >= rows.size()) return {};
    const CompareRow& row = rows[r];
    const RunSummary& s = row.summary;
    switch (column.kind) {
        case CompareColumnKind::Run:
            return row.name;
        case CompareColumnKind::Peak:
            return row.peak ? std::to_string(row.peak->bytes) : "";
        case CompareColumnKind::PeakDelta:
            return row.delta.peak_bytes ? std::to_string(*row.delta.peak_bytes) : "";
        case CompareColumnKind::PeakAt:
            return row.peak ? number(row.peak_x) : "";
        case CompareColumnKind::PeakPhase:
            return row.peak_phase;
        case CompareColumnKind::ReservedPeak:
            return s.has_reserved ? std::to_string(s.reserved_peak) : "";
        case CompareColumnKind::StepTime:
            return s.step_time_s ? number(*s.step_time_s) : "";
        case CompareColumnKind::StepTimeRatio:
            return row.delta.step_time_ratio ? number(*row.delta.step_time_ratio) : "";
        case CompareColumnKind::RecomputeOverhead:
            return s.recompute_overhead ? number(*s.recompute_overhead) : "";
        case CompareColumnKind::CategoryAtPeak:
            return row.peak ? std::to_string(row.peak->by_category[size_t(index(column.category))])
                            : "";
    }
    return {};
}

std::optional<std::string> CompareTable::why(size_t r) const {
    if (r >= rows.size() || r == baseline || baseline >= rows.size()) return std::nullopt;
    if (!rows[r].peak || !rows[r].delta.peak_bytes) return std::nullopt;
    auto side = [&](const CompareRow& row) {
        PolicyPeak p;
        p.name = row.name;
        if (!row.run.trace || !row.peak) return p;
        p.policy = recordedPolicy(*row.run.trace);
        // A phase's peak has its phase; the whole run's is the timeline's.
        const PhaseId phase =
            scope.phase || !row.run.timeline ? row.peak->phase : row.run.timeline->peak.phase;
        p.peak = peakPlace(*row.run.trace, phase, row.peak->bytes, row.peak->by_category);
        return p;
    };
    return explainPolicyChange(side(rows[baseline]), side(rows[r]));
}

}  // namespace memscope
