#include "memscope/report/leak_report.h"

#include <cmath>

#include "json_out.h"
#include "memscope/base/text_escape.h"
#include "memscope/base/units.h"
#include "text_out.h"

namespace memscope {
namespace {

int64_t rounded(double bytes) {
    return int64_t(std::llround(bytes));
}

}  // namespace

std::string leaksText(const LeakReport& report) {
    std::string out;
    if (report.devices.empty()) out += "no devices: the trace holds no events\n";
    for (const DeviceGrowth& g : report.devices) {
        appendf(out, "device %d%s: %s\n", g.device, g.device < 0 ? " (host)" : "",
                growthText(g).c_str());
        if (g.step_ends.empty()) continue;
        appendf(out, "  live bytes at each step's end%s",
                report.steps_inferred ? "  (steps inferred)" : "");
        if (g.fitted_bytes_per_step)
            appendf(out, "; fit over steps %d-%d: %s per step",
                    g.step_ends[size_t(g.steady_from)].step, g.step_ends[size_t(g.steady_to)].step,
                    formatSignedBytes(rounded(*g.fitted_bytes_per_step)).c_str());
        out += "\n";
        for (size_t k = 0; k < g.step_ends.size(); ++k)
            appendf(out, "    step %-5d %12s%s\n", g.step_ends[k].step,
                    formatBytes(g.step_ends[k].live_bytes).c_str(),
                    !g.fitted_bytes_per_step ? ""
                    : int(k) < g.steady_from ? "  (warm-up)"
                    : int(k) > g.steady_to   ? "  (the trace's end: not fitted)"
                                             : "");
        if (g.grows && g.groups.empty())
            out +=
                "  no group of allocations born in a step piles up to the end: the growth is in\n"
                "  allocations born between steps, or freed some steps later\n";
        if (g.groups.empty()) continue;
        out += "  what survives its step and piles up (per step)\n";
        for (const LeakGroup& lg : g.groups) {
            appendf(out, "    %10s %5.1f x  %s%s%s  since step %d\n",
                    formatBytes(rounded(lg.bytes_per_step)).c_str(), lg.count_per_step,
                    terminalText(lg.module).c_str(), lg.module.empty() ? "" : "  ",
                    terminalText(lg.site).c_str(), lg.first_step);
            // The innermost frames; --json gives them all.
            constexpr size_t kShown = 8;
            const size_t first = lg.frames.size() > kShown ? lg.frames.size() - kShown : 0;
            if (first) appendf(out, "          ... (%zu outer frames)\n", first);
            for (size_t k = first; k < lg.frames.size(); ++k)
                appendf(out, "          %s\n", terminalText(lg.frames[k]).c_str());
        }
    }
    return out;
}

std::string leaksJson(const LeakReport& report) {
    rapidjson::StringBuffer buffer;
    json::Out w(buffer);
    w.StartObject();
    json::key(w, "steps_inferred");
    w.Bool(report.steps_inferred);
    json::key(w, "devices");
    w.StartObject();
    for (const DeviceGrowth& g : report.devices) {
        json::key(w, std::to_string(g.device));
        w.StartObject();
        json::field(w, "steps", uint64_t(g.step_ends.size()));
        json::key(w, "steady_from_step");
        if (g.fitted_bytes_per_step)
            w.Int(g.step_ends[size_t(g.steady_from)].step);
        else
            w.Null();
        json::key(w, "steady_to_step");
        if (g.fitted_bytes_per_step)
            w.Int(g.step_ends[size_t(g.steady_to)].step);
        else
            w.Null();
        json::key(w, "live_bytes_at_step_end");
        w.StartArray();
        for (const StepEnd& e : g.step_ends) {
            w.StartObject();
            json::key(w, "step");
            w.Int(e.step);
            json::field(w, "live_bytes", e.live_bytes);
            w.EndObject();
        }
        w.EndArray();
        json::key(w, "fitted_bytes_per_step");
        json::optional(w, g.fitted_bytes_per_step
                              ? std::optional<int64_t>(rounded(*g.fitted_bytes_per_step))
                              : std::nullopt);
        json::key(w, "grows");
        w.Bool(g.grows);
        json::field(w, "growth_bytes_per_step", rounded(g.growth_bytes_per_step));
        json::key(w, "note");
        if (g.note.empty())
            w.Null();
        else
            json::string(w, g.note);
        json::key(w, "groups");
        w.StartArray();
        for (const LeakGroup& lg : g.groups) {
            w.StartObject();
            json::key(w, "module");
            if (lg.module.empty())
                w.Null();
            else
                json::string(w, lg.module);
            json::field(w, "site", lg.site);
            json::key(w, "frames");
            w.StartArray();
            for (const std::string& f : lg.frames) json::string(w, f);
            w.EndArray();
            json::field(w, "bytes_per_step", rounded(lg.bytes_per_step));
            json::key(w, "count_per_step");
            w.Double(lg.count_per_step);
            json::key(w, "first_step");
            w.Int(lg.first_step);
            json::field(w, "bytes", lg.bytes);
            json::field(w, "count", uint64_t(lg.count));
            w.EndObject();
        }
        w.EndArray();
        w.EndObject();
    }
    w.EndObject();
    w.EndObject();
    std::string out = buffer.GetString();
    out += '\n';
    return out;
}

}  // namespace memscope
