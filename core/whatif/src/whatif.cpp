#include "memscope/whatif/whatif.h"

#include <algorithm>

#include "memscope/allocator/modelled_trace.h"
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

// The assumption a row states about reserved memory.
std::string reservedAssumption(bool gpu, const AllocatorSettings& settings, AllocatorStart start) {
    if (!gpu) return "reserved memory is not predicted: a host (CPU) run has no caching allocator";
    return "reserved memory is predicted by the caching-allocator model (" +
           describeAllocatorSettings(settings) + "), from " +
           (start == AllocatorStart::FreshCache
                ? "a fresh cache holding only what was live at the first event"
                : "the cache the measured run began with") +
           ", emptying the cache where the measured run freed segments";
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

    // The caching allocator, on a GPU run: the measured run replayed under the
    // settings asked for, and each prediction from the same starting cache (by
    // default a fresh one, the measured row's too: a run under another policy
    // grows its own cache, and the rows compare like with like).
    const bool gpu = hasCachingAllocator(measured, device->device);
    AllocatorModelOptions model;
    model.start = options.allocator_start;
    model.settings = options.allocator_settings;
    model.device_capacity = options.device_capacity;
    if (gpu) {
        if (model.start == AllocatorStart::RecordedCache) {
            // The measured run's cache, for the predictions too (theirs would
            // be rebuilt from their rewritten end state).
            auto start = allocatorStartState(measured, *device);
            if (!start) return start.error();
            model.start_state = std::move(*start);
        }
        auto replay = replayAllocatorModel(measured, *device, model);
        if (!replay) return replay.error();
        base.allocator = std::move(*replay);
    }
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
        // opt-in-bwd alone needs no layers, only the training phases;
        // module:CLASS takes its windows from the module scopes.
        if (!report.chain && policy.plan == RegionPlan::Module)
            why = detail::refusal(measured, policy, LayerChain{});
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
        auto sim = detail::simulatePolicy(
            measured, *device, use, policy, report.source,
            detail::resolveCheckpointStyle(measured, policy, options.checkpoint_style));
        if (!sim) {
            row.refused = sim.message();
            report.rows.push_back(std::move(row));
            continue;
        }
        TimelineOptions topt;
        if (!options.keep_traces) topt.peak_top_stacks = 0;
        // Only the cancel flag: progress counts policies, not events.
        TaskContext inner;
        inner.cancel = ctx.cancel;
        const std::string reserved_line = reservedAssumption(
            gpu, model.settings.value_or(allocatorSettingsOf(measured).settings), model.start);
        sim->assumptions.push_back(reserved_line);
        auto tl = Timeline::build(sim->trace, inner, topt);
        if (!tl) return tl.error();
        const DeviceTimeline* d = (*tl)->device(device->device);
        if (!d) return makeError("the prediction lost the device's events");
        if (gpu && options.keep_traces) {
            // The predicted run's own segments, so that its views show the
            // allocator the model predicts rather than the measured run's.
            auto applied = applyAllocatorModel(sim->trace, *d, model, inner);
            if (!applied) return applied.error();
            applied->end_state.reset();
            row.allocator = std::move(*applied);
            if (sim->trace.prediction) sim->trace.prediction->assumptions.push_back(reserved_line);
            tl = Timeline::build(sim->trace, inner, topt);
            if (!tl) return tl.error();
            d = (*tl)->device(device->device);
            if (!d) return makeError("the prediction lost the device's events");
        } else if (gpu) {
            auto replay = replayAllocatorModel(sim->trace, *d, model, inner);
            if (!replay) return replay.error();
            row.allocator = std::move(*replay);
        }
        auto predicted = std::make_shared<const Trace>(std::move(sim->trace));
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
    // A GPU run OOMs on what the allocator reserves: judge by the model's
    // reserved peak wherever every row has one.
    b.by_reserved = std::all_of(report.rows.begin(), report.rows.end(), [](const WhatIfRow& r) {
        return r.refused || r.allocator.has_value();
    });
    for (size_t i = 0; i < report.rows.size(); ++i) {
        const WhatIfRow& r = report.rows[i];
        if (r.refused) continue;
        // A run the capped allocator fails (--device-memory) fits no budget.
        if (b.by_reserved && r.allocator->failure) continue;
        b.points.push_back(
            {r.policy, b.by_reserved ? int64_t(r.allocator->reserved_peak_bytes) : r.peak_bytes,
             r.step_ms});
        b.rows.push_back(i);
    }
    b.answer = fitBudget(b.points, budget_bytes);
    b.line = describeBudget(b.points, b.answer);
    if (b.by_reserved && !b.points.empty()) {
        // "budget 180 MiB of reserved memory: block is the fastest policy that fits (peak …"
        if (const size_t colon = b.line.find(": "); colon != std::string::npos)
            b.line.insert(colon, " of reserved memory");
    }
    return b;
}

std::string_view toString(CheckpointStyle style) {
    switch (style) {
        case CheckpointStyle::Auto:
            return "auto";
        case CheckpointStyle::NonReentrant:
            return "non-reentrant";
        case CheckpointStyle::Reentrant:
            return "reentrant";
    }
    return "auto";
}

}  // namespace memscope
