#include "memscope/report/compare_report.h"

#include <algorithm>
#include <string>

#include "json_out.h"
#include "memscope/analysis/peak_explainer.h"
#include "memscope/analysis/prediction_check.h"
#include "memscope/base/text_escape.h"
#include "memscope/base/units.h"

namespace memscope {
namespace {

// What a run changed at its peak against the baseline; rises made of bytes
// born in recompute phases say so.
std::string changeOf(const CompareRow& row) {
    if (!row.run.trace || !row.run.timeline || !row.peak)
        return describeChange(row.delta.by_category);
    const auto recomputed = recomputedBytesAt(*row.run.trace, *row.run.timeline, row.peak->time);
    return describeChange(row.delta.by_category, 3, &recomputed);
}

// Strings from files shown as text: one line per row, whatever a name holds.
std::string csvField(const std::string& raw) {
    std::string s = terminalText(raw);
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
        for (const CompareColumn& c : cols) row.push_back(terminalText(table.cell(r, c)));
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
    // Each prediction against the measured run of its policy, where one is here.
    const auto checks = predictionChecks(table);
    for (size_t r = 0; r < table.rows.size(); ++r) {
        if (!checks[r]) continue;
        out += terminalText(table.rows[r].name) + " vs measured " +
               terminalText(table.rows[checks[r]->measured_row].name) + ": peak " +
               predictionCheckCell(*checks[r]) + " (predicted " +
               formatBytes(table.rows[r].peak->bytes) + ", measured " +
               formatBytes(table.rows[checks[r]->measured_row].peak->bytes) + ")\n";
    }
    // What each run changed at its peak against the baseline, per category.
    for (size_t r = 0; r < table.rows.size(); ++r) {
        const CompareRow& row = table.rows[r];
        if (r == table.baseline || !row.peak || !row.delta.peak_bytes) continue;
        out += terminalText(row.name) + " vs " + terminalText(table.rows[table.baseline].name) +
               ": " + terminalText(changeOf(row)) + "\n";
        if (const auto why = table.why(r)) out += "  why: " + terminalText(*why) + "\n";
        // The same change by layer ("h.0–h.11: −2.10 GiB activation").
        for (const std::string& line : describeModuleChanges(row.module_deltas, 4))
            out += "  " + terminalText(line) + "\n";
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
    const auto checks = predictionChecks(table);
    for (const CompareRow& row : table.rows) {
        w.StartObject();
        field(w, "path", std::string_view(row.path));
        field(w, "name", std::string_view(row.name));
        field(w, "provenance",
              std::string_view(row.run.trace && row.run.trace->prediction ? "predicted"
                                                                          : "measured"));
        field(w, "peak_bytes", row.peak ? std::optional<int64_t>(row.peak->bytes) : std::nullopt);
        // A prediction against the measured run of its policy in this comparison.
        if (const auto& check = checks[size_t(&row - table.rows.data())]) {
            key(w, "vs_measured");
            w.StartObject();
            field(w, "run", std::string_view(table.rows[check->measured_row].path));
            field(w, "delta_bytes", check->delta_bytes);
            key(w, "delta_fraction");
            w.Double(check->delta_fraction);
            w.EndObject();
        }
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
        // Why it changed or did not (null for the baseline and unknown policies).
        const auto why = table.why(size_t(&row - table.rows.data()));
        key(w, "why");
        if (why)
            string(w, *why);
        else
            w.Null();
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
