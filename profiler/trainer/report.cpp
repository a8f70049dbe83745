#include "report.h"

#include <cstdio>
#include <numeric>
#include <sstream>

namespace memscope::trainer {
namespace {

double meanMs(const std::vector<int64_t>& ns) {
    if (ns.empty()) return 0;
    // The first step pays for first-touch allocations and lazy optimizer
    // state; leave it out when there is anything else.
    const size_t first = ns.size() > 1 ? 1 : 0;
    const double sum = std::accumulate(ns.begin() + static_cast<long>(first), ns.end(), 0.0);
    return sum / static_cast<double>(ns.size() - first) / 1e6;
}

std::string mib(int64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(bytes) / (1024.0 * 1024.0));
    return buf;
}

std::string fixed(double v, int digits) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

std::string jsonString(std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += c;
                }
        }
    }
    return out + "\"";
}

std::string_view kindName(PhaseKind k) {
    switch (k) {
        case PhaseKind::Step:
            return "step";
        case PhaseKind::Forward:
            return "forward";
        case PhaseKind::Backward:
            return "backward";
        case PhaseKind::Optimizer:
            return "optimizer";
        case PhaseKind::Block:
            return "block";
        case PhaseKind::Recompute:
            return "recompute";
        case PhaseKind::Range:
            return "range";
    }
    return "range";
}

// The categories the trainer produces, in the table's order.
constexpr Category kShown[] = {Category::Parameter, Category::Gradient,   Category::OptimizerState,
                               Category::Input,     Category::Activation, Category::Temporary};

}  // namespace

Result<PolicyReport> makeReport(RunResult run) {
    PolicyReport r;
    r.mean_step_ms = meanMs(run.step_ns);
    r.mean_recompute_ms = meanMs(run.recompute_ns);
    if (!run.trace_path.empty()) {
        auto loaded = loadTrace(run.trace_path);
        if (!loaded) return loaded.error();
        r.peak = peakOf(*loaded);
        const int last = static_cast<int>(run.step_ns.size()) - 1;
        for (const auto& [block, bytes] : activationByBlockAtForwardEnd(*loaded, last))
            r.activation_at_forward_end += bytes;
        r.max_gradient_bytes = maxLive(*loaded, Category::Gradient);
    }
    r.run = std::move(run);
    return r;
}

void compareToFull(std::vector<PolicyReport>& reports) {
    const PolicyReport* full = nullptr;
    for (const auto& r : reports)
        if (r.run.policy == Policy{}) full = &r;
    if (!full || full->mean_step_ms <= 0) return;
    const double base = full->mean_step_ms;
    for (auto& r : reports) r.overhead_vs_full = (r.mean_step_ms - base) / base;
}

void printTable(std::ostream& out, const TrainConfig& c, const std::string& preset,
                const std::vector<PolicyReport>& reports) {
    out << "memscope-train: " << modelName(c.model.kind) << " (" << describe(c.model)
        << "), preset " << preset << ", device " << c.device << ", " << c.steps << " steps\n";
    char line[512];
    std::snprintf(line, sizeof line, "%-18s %9s %9s %-32s %8s %8s %8s %8s %8s %8s %9s %9s %8s\n",
                  "policy", "peak MiB", "at ms", "peak phase", "param", "grad", "optim", "input",
                  "activ", "temp", "step ms", "recomp ms", "vs full");
    out << line;
    for (const auto& r : reports) {
        std::string peak = "-", at = "-", phase = "(not recorded)";
        std::string cats[6] = {"-", "-", "-", "-", "-", "-"};
        if (r.peak) {
            peak = mib(r.peak->bytes);
            at = fixed(static_cast<double>(r.peak->time_us) / 1000.0, 1);
            phase = r.peak->phase.empty() ? "(none)" : r.peak->phase;
            for (int i = 0; i < 6; ++i) cats[i] = mib(r.peak->by_category[index(kShown[i])]);
        }
        const std::string vs = r.overhead_vs_full ? (*r.overhead_vs_full >= 0 ? "+" : "") +
                                                        fixed(100.0 * *r.overhead_vs_full, 1) + "%"
                                                  : "-";
        std::snprintf(line, sizeof line,
                      "%-18s %9s %9s %-32s %8s %8s %8s %8s %8s %8s %9s %9s %8s\n",
                      policyName(r.run.policy).c_str(), peak.c_str(), at.c_str(), phase.c_str(),
                      cats[0].c_str(), cats[1].c_str(), cats[2].c_str(), cats[3].c_str(),
                      cats[4].c_str(), cats[5].c_str(), fixed(r.mean_step_ms, 1).c_str(),
                      fixed(r.mean_recompute_ms, 1).c_str(), vs.c_str());
        out << line;
    }
    out << "(composition at the peak in MiB; step time is the mean after the first step; "
           "'vs full' is step-time overhead against the full policy)\n";
}

std::string toJson(const TrainConfig& c, const std::string& preset,
                   const std::vector<PolicyReport>& reports) {
    std::ostringstream o;
    o.precision(10);
    o << "{\n  \"model\": " << jsonString(modelName(c.model.kind))
      << ",\n  \"config\": " << jsonString(describe(c.model))
      << ",\n  \"preset\": " << jsonString(preset) << ",\n  \"device\": " << jsonString(c.device)
      << ",\n  \"dtype\": " << jsonString(dtypeName(c.model.dtype)) << ",\n  \"steps\": " << c.steps
      << ",\n  \"seed\": " << c.seed << ",\n  \"runs\": [";
    for (size_t i = 0; i < reports.size(); ++i) {
        const PolicyReport& r = reports[i];
        o << (i ? "," : "") << "\n    {\"policy\": " << jsonString(policyName(r.run.policy))
          << ", \"trace\": " << jsonString(r.run.trace_path);
        if (r.peak) {
            o << ", \"peak_bytes\": " << r.peak->bytes << ", \"peak_time_us\": " << r.peak->time_us
              << ", \"peak_phase\": " << jsonString(r.peak->phase)
              << ", \"peak_phase_kind\": " << jsonString(kindName(r.peak->kind))
              << ", \"peak_step\": " << r.peak->step << ", \"peak_by_category\": {";
            bool first = true;
            for (Category cat : kAllCategories) {
                o << (first ? "" : ", ") << jsonString(toString(cat)) << ": "
                  << r.peak->by_category[index(cat)];
                first = false;
            }
            o << "}, \"activation_bytes_at_forward_end\": " << r.activation_at_forward_end
              << ", \"max_gradient_bytes\": " << r.max_gradient_bytes;
        }
        o << ", \"mean_step_ms\": " << r.mean_step_ms
          << ", \"mean_recompute_ms\": " << r.mean_recompute_ms << ", \"overhead_vs_full\": ";
        if (r.overhead_vs_full)
            o << *r.overhead_vs_full;
        else
            o << "null";
        auto list = [&](const char* key, const auto& values, double scale) {
            o << ", \"" << key << "\": [";
            for (size_t k = 0; k < values.size(); ++k)
                o << (k ? ", " : "") << static_cast<double>(values[k]) * scale;
            o << "]";
        };
        list("step_ms", r.run.step_ns, 1e-6);
        list("recompute_ms", r.run.recompute_ns, 1e-6);
        list("losses", r.run.losses, 1.0);
        o << "}";
    }
    o << "\n  ]\n}\n";
    return o.str();
}

}  // namespace memscope::trainer
