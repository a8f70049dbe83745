#include "report.h"

#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "memscope/model/phases.h"
#include "memscope/report/report_json.h"
#include "memscope/whatif/policy_frontier.h"

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
        const DeviceTimeline& busiest = highestPeakDevice(*loaded);
        r.phase_peaks = busiest.phase_peaks.by_phase;
        r.peaks_by_phase_json = peaksByPhaseToJson(*loaded->trace, busiest.phase_peaks);
        if (auto theory = activationTheory(*loaded->trace, *loaded->device))
            r.theory = std::move(theory.value());
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

namespace {

// The recorded reports as frontier points, and where each came from.
std::vector<PolicyPoint> pointsOf(const std::vector<PolicyReport>& reports,
                                  std::vector<size_t>* from) {
    std::vector<PolicyPoint> points;
    for (size_t i = 0; i < reports.size(); ++i) {
        const PolicyReport& r = reports[i];
        if (!r.peak) continue;
        points.push_back({policyName(r.run.policy), r.peak->bytes, r.mean_step_ms});
        if (from) from->push_back(i);
    }
    return points;
}

}  // namespace

void markFrontier(std::vector<PolicyReport>& reports) {
    std::vector<size_t> from;
    const std::vector<PolicyPoint> points = pointsOf(reports, &from);
    const std::vector<bool> on = onFrontier(points);
    for (size_t k = 0; k < from.size(); ++k) reports[from[k]].on_frontier = on[k];
}

BudgetReport answerBudget(const std::vector<PolicyReport>& reports, int64_t bytes) {
    const std::vector<PolicyPoint> points = pointsOf(reports, nullptr);
    const BudgetAnswer answer = fitBudget(points, bytes);
    BudgetReport b;
    b.bytes = bytes;
    if (answer.choice) b.policy = points[*answer.choice].name;
    b.short_by_bytes = answer.short_by_bytes;
    b.line = describeBudget(points, answer);
    return b;
}

namespace {

// Forward, backward and optimizer: the peak and its increase per policy.
void printPhaseTable(std::ostream& out, const std::vector<PolicyReport>& reports) {
    bool any = false;
    for (const auto& r : reports)
        for (const auto& p : r.phase_peaks) any = any || p.has_value();
    if (!any) return;
    char line[256];
    out << "\npeak by phase, MiB (increase: over the live bytes at the start of the phase)\n";
    std::snprintf(line, sizeof line, "%-24s", "policy");
    out << line;
    for (TrainingPhase p : kAllTrainingPhases) {
        const std::string name(toString(p));
        std::snprintf(line, sizeof line, " %10s %10s", name.c_str(), "increase");
        out << line;
    }
    out << "\n";
    for (const auto& r : reports) {
        std::snprintf(line, sizeof line, "%-24s", policyName(r.run.policy).c_str());
        out << line;
        for (TrainingPhase p : kAllTrainingPhases) {
            const auto& peak = r.phase_peaks[static_cast<size_t>(index(p))];
            const std::string bytes = peak ? mib(peak->bytes) : "-";
            const std::string increase = peak ? "+" + mib(peak->increaseBytes()) : "-";
            std::snprintf(line, sizeof line, " %10s %10s", bytes.c_str(), increase.c_str());
            out << line;
        }
        out << "\n";
    }
    out << "(recompute and the optimizer run in backward count as backward)\n";
}

// Peak against step time: the memory/time trade-off of the recorded runs.
void printFrontierTable(std::ostream& out, const std::vector<PolicyReport>& reports) {
    size_t recorded = 0;
    for (const auto& r : reports) recorded += r.on_frontier ? 1 : 0;
    if (recorded < 2) return;
    char line[256];
    out << "\nmemory against time (frontier: no other policy is both smaller and faster)\n";
    std::snprintf(line, sizeof line, "%-24s %9s %9s %9s %9s %9s %9s  %s\n", "policy", "peak MiB",
                  "fwd MiB", "bwd MiB", "opt MiB", "step ms", "recomp ms", "frontier");
    out << line;
    for (const auto& r : reports) {
        if (!r.on_frontier) continue;
        std::string phases[kTrainingPhaseCount];
        for (TrainingPhase p : kAllTrainingPhases) {
            const auto& peak = r.phase_peaks[static_cast<size_t>(index(p))];
            phases[static_cast<size_t>(index(p))] = peak ? mib(peak->bytes) : "-";
        }
        std::snprintf(line, sizeof line, "%-24s %9s %9s %9s %9s %9s %9s  %s\n",
                      policyName(r.run.policy).c_str(), mib(r.peak->bytes).c_str(),
                      phases[0].c_str(), phases[1].c_str(), phases[2].c_str(),
                      fixed(r.mean_step_ms, 1).c_str(), fixed(r.mean_recompute_ms, 1).c_str(),
                      *r.on_frontier ? "yes" : "-");
        out << line;
    }
}

// Measured activation bytes per layer at the end of forward against the
// formula for the policy: the mean over the layers, and their ratio.
void printTheoryTable(std::ostream& out, const std::vector<PolicyReport>& reports) {
    bool any = false;
    for (const auto& r : reports) any = any || r.theory.has_value();
    if (!any) return;
    char line[256];
    out << "\nactivations per layer at the end of forward, KiB (mean over the layers)\n";
    std::snprintf(line, sizeof line, "%-24s %12s %12s %8s  %s\n", "policy", "measured", "predicted",
                  "ratio", "formula");
    out << line;
    for (const auto& r : reports) {
        if (!r.theory) continue;
        const ActivationTheory& t = *r.theory;
        const double layers = static_cast<double>(std::max<size_t>(t.layers.size(), 1));
        const std::string predicted =
            t.predicted_total ? fixed(*t.predicted_total / layers / 1024.0, 1) : "-";
        const std::string ratio = t.ratio() ? fixed(*t.ratio(), 4) : "-";
        std::string formula = t.formulasText();
        if (!t.predicted_total && !formula.empty()) formula += ", some layers only";
        std::snprintf(line, sizeof line, "%-24s %12s %12s %8s  %s\n",
                      policyName(r.run.policy).c_str(),
                      fixed(static_cast<double>(t.measured_total) / layers / 1024.0, 1).c_str(),
                      predicted.c_str(), ratio.c_str(), formula.empty() ? "-" : formula.c_str());
        out << line;
    }
    out << "(formulas in the run's element size: in fp32 every non-mask term doubles; the "
           "measured bytes also hold LayerNorm's statistics, which the formulas leave out)\n";
}

}  // namespace

void printTable(std::ostream& out, const TrainConfig& c, const std::string& preset,
                const std::vector<PolicyReport>& reports) {
    out << "memscope-train: " << modelName(c.model.kind) << " (" << describe(c.model)
        << "), preset " << preset << ", device " << c.device << ", " << c.steps << " steps\n";
    char line[512];
    std::snprintf(line, sizeof line, "%-24s %9s %9s %-32s %8s %8s %8s %8s %8s %8s %9s %9s %8s\n",
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
                      "%-24s %9s %9s %-32s %8s %8s %8s %8s %8s %8s %9s %9s %8s\n",
                      policyName(r.run.policy).c_str(), peak.c_str(), at.c_str(), phase.c_str(),
                      cats[0].c_str(), cats[1].c_str(), cats[2].c_str(), cats[3].c_str(),
                      cats[4].c_str(), cats[5].c_str(), fixed(r.mean_step_ms, 1).c_str(),
                      fixed(r.mean_recompute_ms, 1).c_str(), vs.c_str());
        out << line;
    }
    out << "(composition at the peak in MiB; step time is the mean after the first step; "
           "'vs full' is step-time overhead against the full policy)\n";
    printPhaseTable(out, reports);
    printFrontierTable(out, reports);
    printTheoryTable(out, reports);
}

namespace {

using JsonWriter = rapidjson::PrettyWriter<rapidjson::StringBuffer>;

void key(JsonWriter& w, std::string_view k) {
    w.Key(k.data(), static_cast<rapidjson::SizeType>(k.size()));
}
void string(JsonWriter& w, std::string_view s) {
    w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}
// JSON has no NaN or infinity (a diverged loss): those are null.
void number(JsonWriter& w, double v) {
    if (std::isfinite(v))
        w.Double(v);
    else
        w.Null();
}
// Divided, not multiplied by the reciprocal: 35681963 / 1e6 is exactly the
// double nearest 35.681963, and prints so.
template <typename T>
void list(JsonWriter& w, std::string_view name, const std::vector<T>& values, double divisor) {
    key(w, name);
    w.StartArray();
    for (const T& v : values) number(w, static_cast<double>(v) / divisor);
    w.EndArray();
}

// Core's object is pretty-printed from column 0; indent its lines to `depth`
// levels of the enclosing writer's four spaces (a raw newline only occurs
// between tokens: JSON strings escape theirs).
std::string indented(const std::string& json, int depth) {
    const std::string pad(static_cast<size_t>(4 * depth), ' ');
    std::string out;
    out.reserve(json.size() + json.size() / 8);
    for (char c : json) {
        out += c;
        if (c == '\n') out += pad;
    }
    return out;
}

}  // namespace

std::string toJson(const TrainConfig& c, const std::string& preset,
                   const std::vector<PolicyReport>& reports,
                   const std::optional<BudgetReport>& budget) {
    rapidjson::StringBuffer buf;
    JsonWriter w(buf);
    w.StartObject();
    key(w, "model");
    string(w, modelName(c.model.kind));
    key(w, "config");
    string(w, describe(c.model));
    key(w, "preset");
    string(w, preset);
    key(w, "device");
    string(w, c.device);
    key(w, "dtype");
    string(w, dtypeName(c.model.dtype));
    key(w, "steps");
    w.Int(c.steps);
    key(w, "seed");
    w.Uint64(c.seed);
    key(w, "runs");
    w.StartArray();
    for (const PolicyReport& r : reports) {
        w.StartObject();
        key(w, "policy");
        string(w, policyName(r.run.policy));
        key(w, "trace");
        string(w, r.run.trace_path);
        if (r.peak) {
            key(w, "peak_bytes");
            w.Int64(r.peak->bytes);
            key(w, "peak_time_us");
            w.Int64(r.peak->time_us);
            key(w, "peak_phase");
            string(w, r.peak->phase);
            key(w, "peak_phase_kind");
            string(w, toString(r.peak->kind));
            key(w, "peak_step");
            w.Int(r.peak->step);
            key(w, "peak_by_category");
            w.StartObject();
            for (Category cat : kAllCategories) {
                key(w, toString(cat));
                w.Int64(r.peak->by_category[index(cat)]);
            }
            w.EndObject();
            key(w, "activation_bytes_at_forward_end");
            w.Int64(r.activation_at_forward_end);
            key(w, "max_gradient_bytes");
            w.Int64(r.max_gradient_bytes);
        }
        if (!r.peaks_by_phase_json.empty()) {
            // {"forward": {...}, "backward": {...}, "optimizer": {...}} as
            // `memscope-cli summary --json` prints it; depth 3: the root
            // object, "runs", this run.
            key(w, "peaks_by_phase");
            const std::string raw = indented(r.peaks_by_phase_json, 3);
            w.RawValue(raw.data(), raw.size(), rapidjson::kObjectType);
        }
        if (r.theory) {
            key(w, "activation_theory");
            const std::string raw = indented(activationTheoryToJson(*r.theory), 3);
            w.RawValue(raw.data(), raw.size(), rapidjson::kObjectType);
        }
        if (r.on_frontier) {
            key(w, "on_frontier");
            w.Bool(*r.on_frontier);
        }
        key(w, "mean_step_ms");
        number(w, r.mean_step_ms);
        key(w, "mean_recompute_ms");
        number(w, r.mean_recompute_ms);
        key(w, "overhead_vs_full");
        if (r.overhead_vs_full)
            number(w, *r.overhead_vs_full);
        else
            w.Null();
        list(w, "step_ms", r.run.step_ns, 1e6);
        list(w, "recompute_ms", r.run.recompute_ns, 1e6);
        list(w, "losses", r.run.losses, 1.0);
        w.EndObject();
    }
    w.EndArray();
    if (budget) {
        key(w, "budget");
        w.StartObject();
        key(w, "bytes");
        w.Int64(budget->bytes);
        key(w, "policy");
        if (budget->policy)
            string(w, *budget->policy);
        else
            w.Null();
        key(w, "short_by_bytes");
        w.Int64(budget->short_by_bytes);
        w.EndObject();
    }
    w.EndObject();
    return std::string(buf.GetString(), buf.GetSize()) + "\n";
}

}  // namespace memscope::trainer
