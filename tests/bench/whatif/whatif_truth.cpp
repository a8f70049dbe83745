#include "whatif_truth.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "memscope/base/units.h"
#include "memscope/format/native_format.h"
#include "memscope/open/open_run.h"
#include "memscope/whatif/policy_frontier.h"
#include "memscope/whatif/whatif.h"
#include "trainer.h"

namespace memscope::whatif_truth {
namespace {

namespace fs = std::filesystem;

double ms(std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
}

const DeviceTimeline& busiest(const Timeline& t) {
    const DeviceTimeline* best = &t.devices().front();
    for (const DeviceTimeline& d : t.devices())
        if (d.peak.bytes > best->peak.bytes) best = &d;
    return *best;
}

// The forward+backward increase of the step with the highest one.
int64_t increase(const DeviceTimeline& d) {
    int64_t best = 0;
    for (const StepPeaks& s : d.phase_peaks.by_step) {
        const auto& f = s.phases[size_t(index(TrainingPhase::Forward))];
        const auto& b = s.phases[size_t(index(TrainingPhase::Backward))];
        if (!f) continue;
        const int64_t top = std::max(f->bytes, b ? b->bytes : 0);
        best = std::max(best, top - f->start_bytes);
    }
    return best;
}

double recomputeMs(const Trace& t) {
    if (!t.metrics || t.metrics->recompute_ns.empty()) return 0;
    const auto& r = t.metrics->recompute_ns;
    const size_t from = r.size() > 1 ? 1 : 0;
    double sum = 0;
    for (size_t i = from; i < r.size(); ++i) sum += static_cast<double>(r[i]);
    return sum / static_cast<double>(r.size() - from) / 1e6;
}

double stepMs(const Trace& t) {
    return t.metrics ? t.metrics->meanStepSeconds().value_or(0) * 1e3 : 0;
}

// A native trace, inferred and with its timeline, as every front end opens it.
Result<OpenedTrace> open(const std::string& path) {
    auto trace = importNativeTrace(path);
    if (!trace) return trace.error();
    return openTrace(std::move(*trace), path);
}

double ratio(double a, double b) {
    return b != 0 ? (a - b) / b : 0;
}

}  // namespace

double Row::peakError() const {
    return ratio(static_cast<double>(predicted_peak), static_cast<double>(measured_peak));
}
std::optional<double> Row::phaseError(TrainingPhase p) const {
    const auto& a = predicted_phase[size_t(index(p))];
    const auto& b = measured_phase[size_t(index(p))];
    if (!a || !b) return std::nullopt;
    return ratio(static_cast<double>(*a), static_cast<double>(*b));
}
double Row::increaseError() const {
    return ratio(static_cast<double>(predicted_increase), static_cast<double>(measured_increase));
}

std::vector<std::string> sweepPolicies(trainer::ModelKind model) {
    std::vector<std::string> list = {"block",
                                     "sqrt",
                                     "segments:2",
                                     "segments:4",
                                     "opt-in-bwd",
                                     "block+opt-in-bwd",
                                     "sqrt+opt-in-bwd",
                                     "segments:4+opt-in-bwd",
                                     "selective",
                                     "save:matmul",
                                     "save:matmul+opt-in-bwd"};
    if (model == trainer::ModelKind::Gpt)
        for (const char* p : {"save:attention", "save:matmul,attention"}) list.push_back(p);
    return list;
}

Result<Table> run(const trainer::TrainConfig& config, const std::string& preset,
                  const std::vector<std::string>& policies, const std::string& dir) {
    fs::create_directories(dir);
    std::vector<std::string> all{"full"};
    all.insert(all.end(), policies.begin(), policies.end());
    std::vector<std::string> paths;
    for (const std::string& name : all) {
        auto p = parsePolicy(name);
        if (!p) return p.error();
        trainer::RunOptions options;
        options.preset = preset;
        options.trace_path = (fs::path(dir) / (policyFileStem(*p) + ".memscope")).string();
        auto r = trainer::runPolicy(config, *p, options);
        if (!r) return makeError(name + ": " + r.message());
        paths.push_back(options.trace_path);
    }
    Table table;
    table.model =
        std::string(config.model.kind == trainer::ModelKind::Gpt ? "gpt " : "mlp ") + preset;
    const auto t0 = std::chrono::steady_clock::now();
    auto full = open(paths.front());
    if (!full) return full.error();
    const auto t1 = std::chrono::steady_clock::now();
    std::vector<WhatIfPolicy> wanted;
    for (const std::string& name : policies) {
        auto w = parseWhatIfPolicy(name);
        if (!w) return w.error();
        wanted.push_back(*w);
    }
    auto report = whatIf(*full->trace, *full->timeline, paths.front(), wanted);
    if (!report) return report.error();
    const auto t2 = std::chrono::steady_clock::now();
    table.load_ms = ms(t1 - t0);
    table.predict_ms = ms(t2 - t1);

    std::vector<PolicyPoint> measured_points;
    for (size_t i = 0; i < policies.size(); ++i) {
        const WhatIfRow& p = report->rows[i + 1];
        auto measured = open(paths[i + 1]);
        if (!measured) return measured.error();
        const DeviceTimeline& d = busiest(*measured->timeline);
        Row row;
        row.policy = policies[i];
        row.refused = p.refused;
        row.predicted_peak = p.peak_bytes;
        row.measured_peak = d.peak.bytes;
        row.predicted_phase = p.peaks_by_phase;
        for (TrainingPhase ph : kAllTrainingPhases)
            if (const auto& w = d.phase_peaks.by_phase[size_t(index(ph))])
                row.measured_phase[size_t(index(ph))] = w->bytes;
        row.measured_increase = increase(d);
        row.predicted_recompute_ms = static_cast<double>(p.recompute_ns) / 1e6;
        row.measured_recompute_ms = recomputeMs(*measured->trace);
        row.predicted_frontier = p.on_frontier;
        measured_points.push_back({row.policy, row.measured_peak, stepMs(*measured->trace)});
        table.rows.push_back(std::move(row));
    }
    // The predicted forward+backward increase needs the predicted timelines:
    // predicted again with the traces kept (the figures above are the same).
    WhatIfOptions keep;
    keep.keep_traces = true;
    auto kept = whatIf(*full->trace, *full->timeline, paths.front(), wanted, keep);
    if (!kept) return kept.error();
    for (size_t i = 0; i < table.rows.size(); ++i)
        if (kept->rows[i + 1].timeline)
            table.rows[i].predicted_increase = increase(busiest(*kept->rows[i + 1].timeline));
    // The measured frontier, over the measured full-save run and the policies.
    measured_points.insert(measured_points.begin(),
                           {"full", busiest(*full->timeline).peak.bytes, stepMs(*full->trace)});
    const std::vector<bool> frontier = onFrontier(measured_points);
    for (size_t i = 0; i < table.rows.size(); ++i)
        table.rows[i].measured_frontier = frontier[i + 1];
    return table;
}

std::string format(const Table& table) {
    std::string out = table.model + ": predicted from full-save alone against measured runs (" +
                      std::to_string(static_cast<int>(table.load_ms)) +
                      " ms to open the full-save run, " +
                      std::to_string(static_cast<int>(table.predict_ms)) + " ms to predict " +
                      std::to_string(table.rows.size()) + " policies)\n";
    char line[400];
    std::snprintf(line, sizeof line, "  %-26s %11s %11s %7s %7s %7s %7s %8s %8s %7s %9s\n",
                  "policy", "predicted", "measured", "peak", "fwd", "bwd", "opt", "f+b inc",
                  "recomp", "meas.", "frontier");
    out += line;
    auto pct = [](std::optional<double> e) {
        if (!e) return std::string("–");
        char b[16];
        std::snprintf(b, sizeof b, "%+.1f%%", *e * 100);
        return std::string(b);
    };
    for (const Row& r : table.rows) {
        if (r.refused) {
            out += "  " + r.policy + ": refused: " + *r.refused + "\n";
            continue;
        }
        char rec[32], meas[32];
        std::snprintf(rec, sizeof rec, "%.1fms", r.predicted_recompute_ms);
        std::snprintf(meas, sizeof meas, "%.1fms", r.measured_recompute_ms);
        std::snprintf(line, sizeof line, "  %-26s %11s %11s %7s %7s %7s %7s %8s %8s %7s %9s\n",
                      r.policy.c_str(), formatBytes(r.predicted_peak).c_str(),
                      formatBytes(r.measured_peak).c_str(), pct(r.peakError()).c_str(),
                      pct(r.phaseError(TrainingPhase::Forward)).c_str(),
                      pct(r.phaseError(TrainingPhase::Backward)).c_str(),
                      pct(r.phaseError(TrainingPhase::Optimizer)).c_str(),
                      pct(r.increaseError()).c_str(), rec, meas,
                      r.predicted_frontier == r.measured_frontier
                          ? (r.predicted_frontier ? "both" : "neither")
                          : (r.predicted_frontier ? "pred only" : "meas only"));
        out += line;
    }
    return out;
}

}  // namespace memscope::whatif_truth
