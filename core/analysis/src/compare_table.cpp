#include "memscope/analysis/compare_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "json_out.h"
#include "memscope/analysis/peak_explainer.h"
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
    for (size_t i = 0; i < runs.size(); ++i) {
        const Trace* t = runs[i].run.trace;
        if (t && t->metrics && t->metrics->policy == "full") return i;
    }
    for (size_t i = 0; i < runs.size(); ++i)
        if (runs[i].name.ends_with("full")) return i;
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

namespace {

// What a run changed at its peak against the baseline; rises made of bytes
// born in recompute phases say so.
std::string changeOf(const CompareRow& row) {
    if (!row.run.trace || !row.run.timeline || !row.peak)
        return describeChange(row.delta.by_category);
    const auto recomputed = recomputedBytesAt(*row.run.trace, *row.run.timeline, row.peak->time);
    return describeChange(row.delta.by_category, 3, &recomputed);
}

std::string csvField(std::string s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

std::string csvHeader(CompareColumn c) {
    switch (c.kind) {
        case CompareColumnKind::Run:
            return "run";
        case CompareColumnKind::Peak:
            return "peak_bytes";
        case CompareColumnKind::PeakDelta:
            return "delta_peak_bytes";
        case CompareColumnKind::PeakAt:
            return "peak_x";
        case CompareColumnKind::PeakPhase:
            return "peak_phase";
        case CompareColumnKind::ReservedPeak:
            return "reserved_peak_bytes";
        case CompareColumnKind::StepTime:
            return "step_time_s";
        case CompareColumnKind::StepTimeRatio:
            return "step_time_ratio";
        case CompareColumnKind::RecomputeOverhead:
            return "recompute_overhead";
        case CompareColumnKind::CategoryAtPeak:
            return std::string(toString(c.category)) + "_at_peak_bytes";
    }
    return {};
}

// Display width of UTF-8 text: code points, which is what a terminal shows for
// the few non-ASCII signs used here (—, Δ, ×).
size_t displayWidth(const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s)
        if ((c & 0xC0) != 0x80) ++n;
    return n;
}

}  // namespace

std::string toCsv(const CompareTable& table) {
    const auto cols = table.columns();
    std::string out = "path";
    for (const CompareColumn& c : cols) out += "," + csvHeader(c);
    out += "\n";
    for (size_t r = 0; r < table.rows.size(); ++r) {
        out += csvField(table.rows[r].path);
        for (const CompareColumn& c : cols) out += "," + csvField(table.raw(r, c));
        out += "\n";
    }
    return out;
}

std::string toText(const CompareTable& table) {
    const auto cols = table.columns();
    std::vector<std::vector<std::string>> cells;
    std::vector<std::string> head;
    for (const CompareColumn& c : cols) head.push_back(table.header(c));
    cells.push_back(std::move(head));
    for (size_t r = 0; r < table.rows.size(); ++r) {
        std::vector<std::string> row;
        for (const CompareColumn& c : cols) row.push_back(table.cell(r, c));
        cells.push_back(std::move(row));
    }
    std::vector<size_t> width(cols.size(), 0);
    for (const auto& row : cells)
        for (size_t c = 0; c < cols.size(); ++c)
            width[c] = std::max(width[c], displayWidth(row[c]));
    std::string out;
    for (const auto& row : cells) {
        std::string line;
        for (size_t c = 0; c < cols.size(); ++c) {
            if (c) line += "  ";
            // Names and phases left-aligned, figures right-aligned.
            const bool left = cols[c].kind == CompareColumnKind::Run ||
                              cols[c].kind == CompareColumnKind::PeakPhase;
            const std::string pad(width[c] - displayWidth(row[c]), ' ');
            line += left ? row[c] + pad : pad + row[c];
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line + "\n";
    }
    // What each run changed at its peak against the baseline, per category.
    for (size_t r = 0; r < table.rows.size(); ++r) {
        const CompareRow& row = table.rows[r];
        if (r == table.baseline || !row.peak || !row.delta.peak_bytes) continue;
        out += row.name + " vs " + table.rows[table.baseline].name + ": " + changeOf(row) + "\n";
        // The same change by layer ("h.0–h.11: −2.10 GiB activation").
        for (const std::string& line : describeModuleChanges(row.module_deltas, 4))
            out += "  " + line + "\n";
    }
    return out;
}

std::string toJson(const CompareTable& table) {
    using namespace json;
    rapidjson::StringBuffer buf;
    Out w(buf);
    w.StartObject();
    field(w, "baseline",
          std::string_view(table.rows.empty() ? std::string() : table.rows[table.baseline].path));
    field(w, "align", std::string_view(toString(table.align)));
    field(w, "axis_unit", std::string_view(table.axis_unit));
    key(w, "phase");
    if (table.scope.phase)
        string(w, toString(*table.scope.phase));
    else
        w.Null();
    key(w, "runs");
    w.StartArray();
    for (const CompareRow& row : table.rows) {
        w.StartObject();
        field(w, "path", std::string_view(row.path));
        field(w, "name", std::string_view(row.name));
        field(w, "peak_bytes", row.peak ? std::optional<int64_t>(row.peak->bytes) : std::nullopt);
        field(w, "delta_peak_bytes", row.delta.peak_bytes);
        key(w, "peak_ratio");
        w.Double(row.delta.peak_ratio);
        field(w, "peak_time_us", row.peak ? micros(row.time_base, row.peak->time) : std::nullopt);
        key(w, "peak_x");
        if (row.peak)
            w.Double(row.peak_x);
        else
            w.Null();
        field(w, "peak_phase", std::string_view(row.peak_phase));
        key(w, "reserved_peak_bytes");
        optional(w, row.summary.has_reserved ? std::optional<int64_t>(row.summary.reserved_peak)
                                             : std::nullopt);
        key(w, "step_time_ms");
        optional(w, row.summary.step_time_s ? std::optional<double>(*row.summary.step_time_s * 1e3)
                                            : std::nullopt);
        field(w, "step_time_ratio", row.delta.step_time_ratio);
        field(w, "recompute_overhead", row.summary.recompute_overhead);
        key(w, "delta_by_category");
        categories(w, row.delta.by_category, &table.categories);
        key(w, "change_vs_baseline");
        string(w, row.peak && row.delta.peak_bytes ? changeOf(row) : std::string());
        if (row.run.trace && row.run.timeline && row.peak) {
            key(w, "peak_sites");
            const auto sites = table.scope.phase
                                   ? sitesAt(*row.run.trace, *row.run.timeline, row.peak->time, 5)
                                   : sitesAtPeak(*row.run.trace, *row.run.timeline, 5);
            peakSites(w, *row.run.trace, *row.run.timeline, sites);
        }
        key(w, "categories_at_peak");
        categories(w, row.peak ? row.peak->by_category : std::array<int64_t, kCategoryCount>{},
                   &table.categories);
        // By layer at the peak in scope, and each layer's change against the
        // baseline (empty where either run has no modules).
        field(w, "modules_source", std::string_view(toString(row.modules.source)));
        key(w, "module_deltas");
        w.StartArray();
        for (const ModuleDelta& d : row.module_deltas) {
            w.StartObject();
            field(w, "path", std::string_view(d.path));
            field(w, "baseline_bytes", int64_t(d.baseline_bytes));
            field(w, "bytes", int64_t(d.candidate_bytes));
            field(w, "delta_bytes", int64_t(d.delta));
            key(w, "delta_by_category");
            categories(w, d.delta_by_category);
            w.EndObject();
        }
        w.EndArray();
        key(w, "peaks_by_phase");
        if (row.run.trace) {
            peaksByPhase(w, *row.run.trace, row.summary.phase_peaks.by_phase);
        } else {
            w.StartObject();
            w.EndObject();
        }
        w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    return std::string(buf.GetString()) + "\n";
}

}  // namespace memscope
