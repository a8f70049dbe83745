#include "memscope/report/advice_report.h"

#include <cstdio>

#include "json_out.h"
#include "memscope/base/units.h"

namespace memscope {
namespace {

std::string ms(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f ms", v);
    return buf;
}

std::string row(const AdvisedPolicy& a, double measured_ms) {
    char pct[32];
    std::snprintf(pct, sizeof pct, "%+.1f%%",
                  measured_ms > 0 ? 100.0 * (a.row.step_ms - measured_ms) / measured_ms : 0.0);
    return a.label() + "\n      peak " + formatBytes(a.judged_bytes) + ", " + ms(a.row.step_ms) +
           " per step (" + pct + ", recompute " + ms(a.row.step_ms - measured_ms) + ")" +
           (a.uniform ? "" : ", a per-layer mix");
}

void advised(json::Out& w, const AdvisedPolicy& a, double measured_ms) {
    w.StartObject();
    json::field(w, "policy", std::string_view(a.policy.name));
    json::field(w, "allocator_conf", std::string_view(a.allocator_conf));
    json::key(w, "mix");
    w.Bool(!a.uniform);
    json::field(w, "peak_bytes", a.row.peak_bytes);
    if (a.row.allocator)
        json::field(w, "reserved_peak_bytes", int64_t(a.row.allocator->reserved_peak_bytes));
    json::field(w, "judged_bytes", a.judged_bytes);
    json::key(w, "step_ms");
    w.Double(a.row.step_ms);
    json::key(w, "recompute_ms");
    w.Double(a.row.step_ms - measured_ms);
    json::key(w, "step_time_ratio");
    w.Double(measured_ms > 0 ? a.row.step_ms / measured_ms : 1.0);
    w.EndObject();
}

}  // namespace

std::string adviceText(const Advice& a) {
    const double base = a.measured.row.step_ms;
    std::string out = "\n  advisor (predicted; " + std::to_string(a.simulations) +
                      " whole runs simulated" +
                      (a.by_reserved ? ", judged by reserved memory" : "") + "):\n";
    if (a.budget_bytes) {
        out += "    " + a.line + "\n";
        if (a.choice) {
            out += "    answer:        " + row(*a.choice, base) + "\n";
            if (a.best_uniform) out += "    best uniform:  " + row(*a.best_uniform, base) + "\n";
            if (a.by_hand)
                out += "    by hand:       " + row(*a.by_hand, base) + "\n      (" +
                       a.by_hand_reason + ")\n";
            const std::string env =
                a.choice->allocator_conf.empty()
                    ? std::string()
                    : "PYTORCH_CUDA_ALLOC_CONF=" + a.choice->allocator_conf + " ";
            if (a.choice->changesNoCode()) {
                if (!env.empty()) out += "    apply it:      " + env + "CMD\n";
            } else {
                out += "    apply it:      " + env + "memscope-cli record --apply " +
                       a.choice->policy.name + " --from " + a.source + " -- CMD\n";
                out += "    as code:       memscope-cli whatif " + a.source + " --emit pytorch " +
                       a.choice->policy.name + "\n";
            }
        }
    } else {
        out += "    the memory/time frontier (no other policy is both smaller and faster):\n";
        for (const AdvisedPolicy& f : a.frontier) out += "      " + row(f, base) + "\n";
    }
    for (const std::string& n : a.notes) out += "    note: " + n + "\n";
    return out;
}

std::string adviceJson(const Advice& a) {
    rapidjson::StringBuffer buf;
    json::Out w(buf);
    const double base = a.measured.row.step_ms;
    w.StartObject();
    json::field(w, "judged_by", std::string_view(a.by_reserved ? "reserved" : "active"));
    json::field(w, "simulations", uint64_t(a.simulations));
    if (a.budget_bytes) {
        json::field(w, "budget_bytes", *a.budget_bytes);
        json::key(w, "choice");
        if (a.choice)
            advised(w, *a.choice, base);
        else
            w.Null();
        json::key(w, "best_uniform");
        if (a.best_uniform)
            advised(w, *a.best_uniform, base);
        else
            w.Null();
        json::key(w, "by_hand");
        if (a.by_hand)
            advised(w, *a.by_hand, base);
        else
            w.Null();
        json::field(w, "by_hand_reason", std::string_view(a.by_hand_reason));
        json::key(w, "closest");
        if (a.closest)
            advised(w, *a.closest, base);
        else
            w.Null();
        json::field(w, "short_by_bytes", a.short_by_bytes);
    }
    json::key(w, "frontier");
    w.StartArray();
    for (const AdvisedPolicy& f : a.frontier) advised(w, f, base);
    w.EndArray();
    json::key(w, "notes");
    w.StartArray();
    for (const std::string& n : a.notes) json::string(w, n);
    w.EndArray();
    json::field(w, "line", std::string_view(a.line));
    w.EndObject();
    return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace memscope
