#include "memscope/whatif/whatif.h"

#include <algorithm>

#include "policy_simulator.h"

namespace memscope {
namespace {

// Mean of `values` leaving out the first (warm-up) one when there are others.
double meanAfterFirst(const std::vector<int64_t>& values) {
    if (values.empty()) return 0;
    const size_t from = values.size() > 1 ? 1 : 0;
    double sum = 0;
    for (size_t i = from; i < values.size(); ++i) sum += static_cast<double>(values[i]);
    return sum / static_cast<double>(values.size() - from);
}

// The measured step time in the trace's time unit: the recorded metrics, else
// the chain's steps.
double measuredStepTime(const Trace& trace, const LayerChain* chain) {
    if (trace.metrics && !trace.metrics->step_ns.empty())
        return meanAfterFirst(trace.metrics->step_ns);
    if (!chain) return 0;
    std::vector<int64_t> d;
    for (const ChainStep& s : chain->steps) d.push_back(s.end - s.start);
    return meanAfterFirst(d);
}

void fillPeaks(WhatIfRow& row, const DeviceTimeline& d) {
    row.peak_bytes = d.peak.bytes;
    for (TrainingPhase p : kAllTrainingPhases) {
        const auto& w = d.phase_peaks.by_phase[size_t(index(p))];
        if (w) row.peaks_by_phase[size_t(index(p))] = w->bytes;
    }
}

}  // namespace

Result<WhatIfReport> whatIf(const Trace& measured, const Timeline& timeline, std::string source,
                            std::span<const WhatIfPolicy> policies, const WhatIfOptions& options,
                            const TaskContext& ctx) {
    // The device a prediction is about: the one with the highest peak.
    const DeviceTimeline* device = timeline.highestPeakDevice();
    if (!device) return makeError("the trace has no allocations: nothing to predict");
    if (measured.prediction)
        return makeError("this run is itself a prediction (" + measured.prediction->policy +
                         " from " + measured.prediction->source +
                         "): predict from the measured run instead");

    WhatIfReport report;
    report.source = std::move(source);
    report.measured_policy = measured.metrics ? measured.metrics->policy : std::string();
    report.device = device->device;
    auto chain = findLayerChain(measured, device->device);
    if (chain)
        report.chain = std::move(*chain);
    else
        report.chain_problem = chain.message();

    const double ns_per_ms = measured.metadata.time_base == TimeBase::Nanoseconds ? 1e6 : 1;
    const double step_time = measuredStepTime(measured, report.chain ? &*report.chain : nullptr);

    WhatIfRow base;
    base.policy =
        (report.measured_policy.empty() ? std::string("measured") : report.measured_policy) +
        " (measured)";
    base.measured = true;
    fillPeaks(base, *device);
    base.step_ms = step_time / ns_per_ms;
    report.rows.push_back(base);

    std::vector<WhatIfPolicy> defaults;
    if (policies.empty()) {
        // Without layers, only the optimizer can move.
        defaults = report.chain ? defaultWhatIfPolicies(*report.chain)
                                : std::vector<WhatIfPolicy>{*parseWhatIfPolicy("opt-in-bwd")};
        policies = defaults;
    }
    for (size_t i = 0; i < policies.size(); ++i) {
        if (ctx.cancelled()) return cancelledError();
        if (ctx.progress) ctx.progress(i, policies.size());
        const WhatIfPolicy& policy = policies[i];
        WhatIfRow row;
        row.policy = policy.name;
        std::string why =
            report.chain ? detail::refusal(measured, policy, *report.chain) : report.chain_problem;
        // opt-in-bwd alone needs no layers, only the training phases.
        if (!report.chain && policy.policy.recompute == Recompute::None) why.clear();
        if (!why.empty()) {
            row.refused = std::move(why);
            report.rows.push_back(std::move(row));
            continue;
        }
        LayerChain no_layers;
        if (!report.chain) {
            no_layers.device = device->device;
            for (const StepBounds& b : stepBounds(measured, device->device))
                if (b.forward_start && b.backward_start && b.backward_end)
                    no_layers.steps.push_back(
                        {b.start, b.end, *b.forward_start, *b.backward_start, *b.backward_end});
            if (no_layers.steps.empty()) {
                row.refused =
                    "no training step with both a forward and a backward phase (recorded or "
                    "inferred): there is no backward to move the optimizer into";
                report.rows.push_back(std::move(row));
                continue;
            }
        }
        const LayerChain& use = report.chain ? *report.chain : no_layers;
        auto sim = detail::simulatePolicy(measured, *device, use, policy, report.source);
        if (!sim) {
            row.refused = sim.message();
            report.rows.push_back(std::move(row));
            continue;
        }
        TimelineOptions topt;
        if (!options.keep_traces) topt.peak_top_stacks = 0;
        auto predicted = std::make_shared<const Trace>(std::move(sim->trace));
        // Only the cancel flag: progress counts policies, not events.
        TaskContext inner;
        inner.cancel = ctx.cancel;
        auto tl = Timeline::build(*predicted, inner, topt);
        if (!tl) return tl.error();
        const DeviceTimeline* d = (*tl)->device(device->device);
        if (!d) return makeError("the prediction lost the device's events");
        fillPeaks(row, *d);
        row.delta_bytes = row.peak_bytes - base.peak_bytes;
        const double recompute = meanAfterFirst(sim->recompute_per_step);
        row.recompute_ns = measured.metadata.time_base == TimeBase::Nanoseconds
                               ? static_cast<int64_t>(recompute)
                               : 0;
        row.step_time_ratio = step_time > 0 ? (step_time + recompute) / step_time : 1;
        row.step_ms = (step_time + recompute) / ns_per_ms;
        row.assumptions = std::move(sim->assumptions);
        if (options.keep_traces) {
            row.trace = std::move(predicted);
            row.timeline = std::move(*tl);
        }
        report.rows.push_back(std::move(row));
    }
    if (ctx.progress) ctx.progress(policies.size(), policies.size());

    std::vector<PolicyPoint> points;
    std::vector<size_t> at;
    for (size_t i = 0; i < report.rows.size(); ++i)
        if (!report.rows[i].refused) {
            points.push_back(
                {report.rows[i].policy, report.rows[i].peak_bytes, report.rows[i].step_ms});
            at.push_back(i);
        }
    const std::vector<bool> frontier = onFrontier(points);
    for (size_t k = 0; k < at.size(); ++k) report.rows[at[k]].on_frontier = frontier[k];
    return report;
}

WhatIfBudget whatIfBudget(const WhatIfReport& report, int64_t budget_bytes) {
    WhatIfBudget b;
    for (size_t i = 0; i < report.rows.size(); ++i)
        if (!report.rows[i].refused) {
            b.points.push_back(
                {report.rows[i].policy, report.rows[i].peak_bytes, report.rows[i].step_ms});
            b.rows.push_back(i);
        }
    b.answer = fitBudget(b.points, budget_bytes);
    b.line = describeBudget(b.points, b.answer);
    return b;
}

}  // namespace memscope
