#include "memscope/report/whatif_report.h"

#include <cstdio>

#include "allocator_json.h"
#include "json_out.h"
#include "memscope/base/text_escape.h"
#include "memscope/base/units.h"
#include "memscope/report/advice_report.h"

namespace memscope {
namespace {

std::string signedBytes(int64_t delta) {
    if (delta == 0) return "0";
    return (delta > 0 ? "+" : "−") + formatBytes(delta > 0 ? delta : -delta);
}

std::string duration(int64_t ns) {
    char buf[32];
    if (ns < 1'000'000)
        std::snprintf(buf, sizeof buf, "%.0f µs", static_cast<double>(ns) / 1e3);
    else if (ns < 1'000'000'000)
        std::snprintf(buf, sizeof buf, "%.1f ms", static_cast<double>(ns) / 1e6);
    else
        std::snprintf(buf, sizeof buf, "%.2f s", static_cast<double>(ns) / 1e9);
    return buf;
}

std::string optionalBytes(const std::optional<int64_t>& b) {
    return b ? formatBytes(*b) : std::string("–");
}

std::string percent(int64_t delta, int64_t base) {
    if (base <= 0) return "";
    char buf[32];
    std::snprintf(buf, sizeof buf, " (%+.1f%%)",
                  100.0 * static_cast<double>(delta) / static_cast<double>(base));
    return buf;
}

// Assumptions are long and shared by many rows: numbered once, cited per row.
struct Footnotes {
    std::vector<std::string> texts;
    std::string cite(const std::vector<std::string>& assumptions) {
        std::string out;
        for (const std::string& a : assumptions) {
            size_t k = 0;
            while (k < texts.size() && texts[k] != a) ++k;
            if (k == texts.size()) texts.push_back(a);
            out += (out.empty() ? "" : ",") + std::to_string(k + 1);
        }
        return out;
    }
};

}  // namespace

std::string whatIfText(const WhatIfReport& report, const std::optional<WhatIfBudget>& budget,
                       const Advice* advice) {
    std::string out = "what if: " + terminalText(report.source) + "\n";
    out += "  measured policy: " +
           (report.measured_policy.empty() ? std::string("not recorded (taken as full-save)")
                                           : terminalText(report.measured_policy)) +
           "\n";
    if (report.chain) {
        const LayerChain& c = *report.chain;
        out += "  layers: " + std::to_string(c.layers.size()) + " (" +
               std::string(toString(c.source)) + "): ";
        for (size_t i = 0; i < c.layers.size(); ++i) {
            if (i == 8 && c.layers.size() > 10) {
                out += ", …, " + terminalText(c.layers.back().name);
                break;
            }
            out += (i ? ", " : "") + terminalText(c.layers[i].name);
        }
        out += "\n  layer indices for layers:LIST: " + std::to_string(c.layers.front().index) +
               "–" + std::to_string(c.layers.back().index) +
               (c.indices_are_positions
                    ? " (positions in forward order: " + terminalText(c.layers.front().name) +
                          " is " + std::to_string(c.layers.front().index) + ", " +
                          terminalText(c.layers.back().name) + " is " +
                          std::to_string(c.layers.back().index) + ")"
                    : std::string()) +
               "\n";
    } else {
        out += "  layers: none found: " + terminalText(report.chain_problem) + "\n";
    }
    const WhatIfRow& first = report.rows.front();
    if (first.allocator) {
        const AllocatorModelRun& a = *first.allocator;
        out += "  allocator: " + describeAllocatorSettings(a.settings) +
               (a.settings_overridden                                    ? " (asked for)"
                : a.settings_source == AllocatorSettingsSource::Recorded ? " (as recorded)"
                                                                         : " (PyTorch's defaults)");
        if (a.device_capacity) out += ", device memory " + formatBytes(int64_t(*a.device_capacity));
        out += "; reserved is the caching-allocator model's\n";
    }
    out += "  predicted runs are simulations of the measured one, not measurements\n\n";

    char line[512];
    std::snprintf(line, sizeof line, "  %-28s %11s %11s %18s %11s %11s %11s %11s %6s %8s  %s\n",
                  "policy", "peak", "reserved", "Δ measured", "forward", "backward", "optimizer",
                  "recompute", "step×", "frontier", "assumptions");
    out += line;
    Footnotes notes;
    std::vector<std::pair<std::string, std::string>> refused;
    for (const WhatIfRow& r : report.rows) {
        if (r.refused) {
            refused.emplace_back(r.policy, *r.refused);
            continue;
        }
        const std::string name = r.measured ? r.policy : r.policy + " (predicted)";
        const std::string recompute = r.measured ? std::string("–") : duration(r.recompute_ns);
        char ratio[16];
        std::snprintf(ratio, sizeof ratio, "%.2f", r.step_time_ratio);
        std::string reserved = "–";
        if (r.allocator)
            reserved = r.allocator->failure
                           ? std::string("fails")
                           : formatBytes(int64_t(r.allocator->reserved_peak_bytes));
        std::snprintf(line, sizeof line, "  %-28s %11s %11s %18s %11s %11s %11s %11s %6s %8s  %s\n",
                      name.c_str(), formatBytes(r.peak_bytes).c_str(), reserved.c_str(),
                      r.measured ? ""
                                 : (signedBytes(r.delta_bytes) +
                                    percent(r.delta_bytes, report.rows.front().peak_bytes))
                                       .c_str(),
                      optionalBytes(r.peaks_by_phase[0]).c_str(),
                      optionalBytes(r.peaks_by_phase[1]).c_str(),
                      optionalBytes(r.peaks_by_phase[2]).c_str(), recompute.c_str(), ratio,
                      r.on_frontier ? "yes" : "", notes.cite(r.assumptions).c_str());
        out += line;
    }
    for (const WhatIfRow& r : report.rows) {
        if (r.refused || !r.allocator) continue;
        const AllocatorModelRun& a = *r.allocator;
        const std::string name = r.measured ? r.policy : r.policy + " (predicted)";
        if (a.failure) {
            out += "\n  " + name + ": the allocator would fail a request of " +
                   formatBytes(int64_t(a.failure->requested_bytes)) + " with " +
                   formatBytes(int64_t(a.failure->reserved_bytes)) +
                   " reserved, its largest free "
                   "block " +
                   formatBytes(int64_t(a.failure->largest_free_block)) + "\n";
        } else if (r.measured) {
            out += "\n  " + name + ": the model reserves " +
                   formatBytes(int64_t(a.reserved_peak_bytes)) + " at its peak (" +
                   (a.start == AllocatorStart::FreshCache ? "from a fresh cache" : "as it began") +
                   "; recorded " + formatBytes(int64_t(a.recorded.reserved_peak_bytes)) +
                   "), of which " + formatBytes(int64_t(a.fragmentationAtPeak())) +
                   " cached and free (largest free block " +
                   formatBytes(int64_t(a.largest_free_block_at_peak_bytes)) + ")\n";
        }
    }
    if (!refused.empty()) {
        out += "\n  refused:\n";
        for (const auto& [policy, why] : refused)
            out.append("    ")
                .append(terminalText(policy))
                .append(": ")
                .append(terminalText(why))
                .append("\n");
    }
    if (!notes.texts.empty()) {
        out += "\n  assumptions:\n";
        for (size_t k = 0; k < notes.texts.size(); ++k)
            out += "    " + std::to_string(k + 1) + ". " + notes.texts[k] + "\n";
    }
    if (budget) out += "\n  among these rows, " + budget->line + " (predicted)\n";
    if (advice) out += adviceText(*advice);
    return out;
}

std::string whatIfJson(const WhatIfReport& report, const std::optional<WhatIfBudget>& budget,
                       std::span<const std::string> written_traces, const Advice* advice) {
    rapidjson::StringBuffer buf;
    json::Out w(buf);
    using json::field;
    using json::key;
    w.StartObject();
    field(w, "source", std::string_view(report.source));
    key(w, "measured_policy");
    if (report.measured_policy.empty())
        w.Null();
    else
        json::string(w, report.measured_policy);
    field(w, "device", int64_t(report.device));
    key(w, "layers");
    w.StartObject();
    if (report.chain) {
        field(w, "count", uint64_t(report.chain->layers.size()));
        field(w, "source", toString(report.chain->source));
        key(w, "names");
        w.StartArray();
        for (const ChainLayer& l : report.chain->layers) json::string(w, l.name);
        w.EndArray();
        key(w, "indices");
        w.StartArray();
        for (const ChainLayer& l : report.chain->layers) w.Int64(l.index);
        w.EndArray();
    } else {
        field(w, "count", uint64_t(0));
        field(w, "source", std::string_view("none"));
        key(w, "names");
        w.StartArray();
        w.EndArray();
        field(w, "problem", std::string_view(report.chain_problem));
    }
    w.EndObject();
    const WhatIfRow& measured = report.rows.front();
    key(w, "measured");
    w.StartObject();
    field(w, "peak_bytes", measured.peak_bytes);
    if (measured.allocator) {
        field(w, "reserved_peak_bytes", measured.allocator->reserved_peak_bytes);
        key(w, "allocator_model");
        json::allocatorModel(w, *measured.allocator, !measured.allocator->settings_overridden);
    }
    key(w, "step_ms");
    w.Double(measured.step_ms);
    key(w, "on_frontier");
    w.Bool(measured.on_frontier);
    w.EndObject();

    key(w, "predictions");
    w.StartArray();
    for (size_t i = 1; i < report.rows.size(); ++i) {
        const WhatIfRow& r = report.rows[i];
        w.StartObject();
        field(w, "policy", std::string_view(r.policy));
        if (r.refused) {
            field(w, "refused", std::string_view(*r.refused));
            w.EndObject();
            continue;
        }
        field(w, "peak_bytes", r.peak_bytes);
        field(w, "delta_bytes", r.delta_bytes);
        if (r.allocator) {
            field(w, "reserved_peak_bytes", r.allocator->reserved_peak_bytes);
            key(w, "allocator_model");
            json::allocatorModel(w, *r.allocator, false);
        }
        key(w, "peaks_by_phase");
        w.StartObject();
        for (TrainingPhase p : kAllTrainingPhases) {
            const auto& b = r.peaks_by_phase[size_t(index(p))];
            if (!b) continue;
            key(w, toString(p));
            w.Int64(*b);
        }
        w.EndObject();
        field(w, "recompute_us", int64_t(r.recompute_ns / 1000));
        key(w, "step_time_ratio");
        w.Double(r.step_time_ratio);
        key(w, "step_ms");
        w.Double(r.step_ms);
        key(w, "on_frontier");
        w.Bool(r.on_frontier);
        key(w, "assumptions");
        w.StartArray();
        for (const std::string& a : r.assumptions) json::string(w, a);
        w.EndArray();
        if (i < written_traces.size() && !written_traces[i].empty())
            field(w, "trace", std::string_view(written_traces[i]));
        w.EndObject();
    }
    w.EndArray();
    if (budget) {
        key(w, "budget");
        w.StartObject();
        field(w, "bytes", budget->answer.budget_bytes);
        field(w, "judged_by", std::string_view(budget->by_reserved ? "reserved" : "active"));
        // The advisor's answer where it searched; else the fastest row that fits.
        key(w, "policy");
        if (advice && advice->choice)
            json::string(w, advice->choice->policy.name);
        else if (!advice && budget->answer.choice)
            json::string(w, budget->points[*budget->answer.choice].name);
        else
            w.Null();
        key(w, "table_policy");
        if (budget->answer.choice)
            json::string(w, budget->points[*budget->answer.choice].name);
        else
            w.Null();
        field(w, "short_by_bytes", advice ? advice->short_by_bytes : budget->answer.short_by_bytes);
        w.EndObject();
    }
    if (advice) {
        key(w, "advisor");
        const std::string a = adviceJson(*advice);
        w.RawValue(a.c_str(), a.size(), rapidjson::kObjectType);
    }
    w.EndObject();
    return std::string(buf.GetString(), buf.GetSize()) + "\n";
}

}  // namespace memscope
