#include "policy_simulator.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_map>

#include "memscope/base/units.h"
#include "memscope/model/phases.h"
#include "trace_rewrite.h"

namespace memscope::detail {
namespace {

bool persistent(Category c) {
    return c == Category::Parameter || c == Category::OptimizerState || c == Category::Gradient ||
           c == Category::Input;
}

// Checkpointed regions as [first, last) positions in chain.layers.
Result<std::vector<std::pair<size_t, size_t>>> regionsOf(const WhatIfPolicy& policy,
                                                         const LayerChain& chain) {
    std::vector<std::pair<size_t, size_t>> regions;
    const size_t n = chain.layers.size();
    if (policy.explicit_layers) {
        for (int64_t want : policy.layers) {
            auto it = std::find_if(chain.layers.begin(), chain.layers.end(),
                                   [&](const ChainLayer& l) { return l.index == want; });
            if (it == chain.layers.end()) {
                std::string known;
                for (const ChainLayer& l : chain.layers)
                    known += (known.empty() ? "" : ",") + std::to_string(l.index);
                return makeError("policy '" + policy.name + "': no layer " + std::to_string(want) +
                                 " (the layers are " + known + ")");
            }
            const size_t at = static_cast<size_t>(it - chain.layers.begin());
            regions.emplace_back(at, at + 1);
        }
        return regions;
    }
    auto plan = segmentPlan(policy.policy, static_cast<int64_t>(n));
    if (!plan) return makeError("policy '" + policy.name + "': " + plan.message());
    for (const CheckpointSegment& s : *plan)
        if (s.checkpointed)
            regions.emplace_back(static_cast<size_t>(s.begin), static_cast<size_t>(s.end));
    return regions;
}

std::string regionName(const LayerChain& chain, std::pair<size_t, size_t> r) {
    if (r.second - r.first == 1) return chain.layers[r.first].name;
    return chain.layers[r.first].name + "–" + chain.layers[r.second - 1].name;
}

// The first interval (sorted by start) starting at or after t.
size_t firstStartingAt(const std::vector<AllocationInterval>& intervals, int64_t t) {
    return static_cast<size_t>(
        std::lower_bound(intervals.begin(), intervals.end(), t,
                         [](const AllocationInterval& a, int64_t x) { return a.start < x; }) -
        intervals.begin());
}

// The innermost phase of `kind` on `device` that holds time t.
PhaseId phaseHolding(const Trace& trace, PhaseKind kind, int16_t device, int64_t t) {
    PhaseId best;
    int64_t best_start = std::numeric_limits<int64_t>::min();
    for (uint32_t i = 0; i < trace.phases.size(); ++i) {
        const Phase& p = trace.phases[i];
        if (p.kind != kind || !phaseOnDevice(p, device)) continue;
        if (p.start <= t && t <= p.end && p.start >= best_start)
            best = PhaseId(i + 1), best_start = p.start;
    }
    return best;
}

class Simulation {
public:
    Simulation(const Trace& measured, const DeviceTimeline& device, const Timeline& timeline,
               const LayerChain& chain)
        : measured_(measured),
          device_(device),
          chain_(chain),
          rewrite_(measured, timeline, device) {}

    Result<SimulatedRun> run(const WhatIfPolicy& policy, const std::string& source) {
        SimulatedRun out;
        out.recompute_per_step.assign(chain_.steps.size(), 0);
        auto regions = regionsOf(policy, chain_);
        if (!regions) return regions.error();
        for (const auto& r : *regions)
            for (size_t si = 0; si < chain_.steps.size(); ++si)
                out.recompute_per_step[si] += checkpoint(r, si);
        if (policy.policy.optimizer_in_backward) optimizerInBackward();
        assumptions_.insert(assumptions_.begin(), chain_.assumptions.begin(),
                            chain_.assumptions.end());
        if (!regions->empty()) {
            assumptions_.push_back(
                "the recompute replays the layer's measured forward, allocation for allocation, "
                "and takes its measured forward time");
            assumptions_.push_back(
                "the recomputed output is kept until the last tensor the layer saved is freed");
        }
        assumptions_.push_back(
            "reserved memory (the caching allocator's segments) is not predicted: segment events "
            "are the measured run's");

        Prediction prediction;
        prediction.source = source;
        prediction.measured_policy = measured_.metrics ? measured_.metrics->policy : std::string();
        prediction.policy = policy.name;
        prediction.layers_source = std::string(toString(chain_.source));
        prediction.assumptions = assumptions_;
        out.trace = rewrite_.build(prediction, out.recompute_per_step);
        out.assumptions = std::move(assumptions_);
        return out;
    }

private:
    const Trace& measured_;
    const DeviceTimeline& device_;
    const LayerChain& chain_;
    TraceRewrite rewrite_;
    std::vector<std::string> assumptions_;
    bool noted_output_ = false;
    bool noted_span_ = false;

    // Checkpoints region r in step si; returns the recompute time added.
    int64_t checkpoint(std::pair<size_t, size_t> r, size_t si) {
        const ChainStep& step = chain_.steps[si];
        const LayerRun* first = runIn(chain_.layers[r.first], si);
        const LayerRun* last = runIn(chain_.layers[r.second - 1], si);
        if (!first || !last) return 0;
        const int64_t fs = first->forward_start, fe = last->forward_end;
        if (fe <= fs) return 0;
        const auto& iv = device_.intervals;

        // When the layers after the region have finished their backward: the
        // last free, inside backward, of what their forward made.
        int64_t downstream_done = step.backward_start;
        for (size_t i = firstStartingAt(iv, fe); i < iv.size() && iv[i].start < step.backward_start;
             ++i) {
            const AllocationInterval& a = iv[i];
            if (a.alloc_event == kNoEvent || a.free_event == kNoEvent) continue;
            if (a.end >= step.backward_start && a.end <= step.backward_end)
                downstream_done = std::max(downstream_done, a.end);
        }

        // The region's output, which the checkpoint keeps: the last tensor
        // its forward made that outlived the forward (a block's residual sum).
        std::optional<uint32_t> output;
        for (size_t i = firstStartingAt(iv, fs); i < iv.size() && iv[i].start < fe; ++i) {
            const AllocationInterval& a = iv[i];
            if (a.alloc_event == kNoEvent || persistent(a.category) || a.free_event == kNoEvent)
                continue;
            if (a.end >= fe && a.end <= step.backward_end &&
                (!output || a.start >= iv[*output].start))
                output = static_cast<uint32_t>(i);
        }
        std::vector<uint32_t> temps, kept, saved;
        int64_t saved_done = downstream_done;
        for (size_t i = firstStartingAt(iv, fs); i < iv.size() && iv[i].start < fe; ++i) {
            const AllocationInterval& a = iv[i];
            if (a.alloc_event == kNoEvent || persistent(a.category)) continue;
            const uint32_t id = static_cast<uint32_t>(i);
            if (a.free_event != kNoEvent && a.end < fe) {
                temps.push_back(id);
            } else if (a.free_event != kNoEvent && (id == output || a.end <= downstream_done)) {
                kept.push_back(id);  // the output, and what the layers after it hold
            } else if (a.free_event != kNoEvent && a.end <= step.backward_end) {
                saved.push_back(id);
                saved_done = std::max(saved_done, a.end);
            }
            // Anything else outlives backward: the policy does not change it.
        }
        if (saved.empty()) return 0;
        if (!noted_output_ && output) {
            noted_output_ = true;
            const std::string name = regionName(chain_, r);
            assumptions_.push_back("the output of " + name +
                                   " is taken as the last tensor its forward made that "
                                   "outlived it (" +
                                   formatBytes(static_cast<int64_t>(iv[*output].size)) +
                                   "), kept with what the layers after it freed in their backward");
        }

        // The forward, run without saving: a saved tensor lives as long as
        // the region's own temporaries do, counted in allocations made
        // meanwhile (their median), the last ones until the forward ends.
        std::vector<int64_t> births;
        for (const auto* set : {&temps, &kept, &saved})
            for (uint32_t id : *set) births.push_back(iv[id].start);
        std::sort(births.begin(), births.end());
        const size_t span = lifetimeInAllocations(temps, births);
        for (uint32_t id : saved) {
            const size_t at = static_cast<size_t>(
                std::upper_bound(births.begin(), births.end(), iv[id].start) - births.begin());
            const int64_t until = at + span - 1 < births.size() ? births[at + span - 1] : fe;
            rewrite_.moveFree(id, std::max(until, iv[id].start));
        }
        if (!noted_span_) {
            noted_span_ = true;
            assumptions_.push_back(
                "a checkpointed layer's forward, run without saving, frees each tensor it would "
                "have saved after " +
                std::to_string(span) +
                " more allocations: the mean lifetime of its measured temporaries");
        }

        // The replay, inserted after downstream_done.
        const int64_t duration = fe - fs;
        const TraceRewrite::Gap gap = rewrite_.insertGap(downstream_done, duration);
        const PhaseId recompute = rewrite_.addRecomputePhase(
            gap, "recompute " + regionName(chain_, r),
            static_cast<int32_t>(chain_.layers[r.first].index),
            phaseHolding(measured_, PhaseKind::Backward, device_.device, downstream_done));
        auto offset = [&](int64_t t) { return t - fs; };
        for (uint32_t id : temps)
            rewrite_.addCopy(id, gap, offset(iv[id].start), TraceRewrite::At::InGap,
                             offset(iv[id].end), recompute);
        for (uint32_t id : kept)
            rewrite_.addCopy(id, gap, offset(iv[id].start), TraceRewrite::At::Measured, saved_done,
                             recompute);
        for (uint32_t id : saved)
            rewrite_.addCopy(id, gap, offset(iv[id].start), TraceRewrite::At::Measured, iv[id].end,
                             recompute);
        for (size_t l = r.first; l < r.second; ++l)
            if (const LayerRun* run = runIn(chain_.layers[l], si))
                rewrite_.addRecomputeScopes(gap, fs, run->forward_start, run->forward_end);
        return duration;
    }

    // The mean number of allocations made while a temporary lived (born
    // after it, up to its free), rounded up; 1 when there are none. A
    // saved tensor's consumers in the forward are not recorded; the
    // temporaries show how long the forward's ops keep their inputs.
    size_t lifetimeInAllocations(const std::vector<uint32_t>& temps,
                                 const std::vector<int64_t>& births) const {
        const auto& iv = device_.intervals;
        std::vector<size_t> spans;
        for (uint32_t id : temps) {
            const auto from = std::upper_bound(births.begin(), births.end(), iv[id].start);
            const auto to = std::upper_bound(births.begin(), births.end(), iv[id].end);
            spans.push_back(static_cast<size_t>(std::max<ptrdiff_t>(to - from, 0)));
        }
        if (spans.empty()) return 1;
        size_t sum = 0;
        for (size_t s : spans) sum += s;
        return std::max<size_t>(1, (sum + spans.size() - 1) / spans.size());
    }

    const LayerRun* runIn(const ChainLayer& layer, size_t si) const {
        for (const LayerRun& run : layer.runs)
            if (run.step == static_cast<int32_t>(si)) return &run;
        return nullptr;
    }

    // The optimizer's windows on the device: [start, end] of each Optimizer phase.
    std::vector<std::pair<int64_t, int64_t>> optimizerWindows() const {
        std::vector<std::pair<int64_t, int64_t>> w;
        for (const Phase& p : measured_.phases)
            if (p.kind == PhaseKind::Optimizer && phaseOnDevice(p, device_.device) &&
                p.end > p.start)
                w.emplace_back(p.start, p.end);
        std::sort(w.begin(), w.end());
        return w;
    }

    void optimizerInBackward() {
        const auto& iv = device_.intervals;
        const auto windows = optimizerWindows();
        auto windowOf = [&](int64_t t) -> const std::pair<int64_t, int64_t>* {
            auto it =
                std::upper_bound(windows.begin(), windows.end(), std::make_pair(t, INT64_MAX));
            if (it == windows.begin()) return nullptr;
            --it;
            return t <= it->second ? &*it : nullptr;
        };
        auto inBackward = [&](int64_t t) {
            for (const ChainStep& s : chain_.steps)
                if (t >= s.backward_start && t <= s.backward_end) return true;
            return false;
        };

        // The optimizer step's temporaries, as a fraction of the gradients
        // they serve: the highest live temporary bytes of any step.
        std::vector<uint32_t> grads, temps, states;
        for (uint32_t i = 0; i < iv.size(); ++i) {
            const AllocationInterval& a = iv[i];
            if (a.alloc_event == kNoEvent) continue;
            if (a.category == Category::Gradient && inBackward(a.start)) {
                grads.push_back(i);
                continue;
            }
            const auto* w = windowOf(a.start);
            if (!w) continue;
            if (a.category == Category::OptimizerState &&
                (a.free_event == kNoEvent || a.end > w->second))
                states.push_back(i);
            else if (!persistent(a.category) && a.free_event != kNoEvent && a.end <= w->second)
                temps.push_back(i);
        }
        const double ratio = temporaryRatio(temps, windows);
        for (uint32_t id : temps) rewrite_.drop(id);

        // Each gradient: its parameter's optimizer work right after it is made.
        const int64_t first_backward_end = chain_.steps.front().backward_end;
        std::unordered_map<uint64_t, std::vector<uint32_t>> first_grads_by_size;
        for (uint32_t id : grads) {
            const AllocationInterval& g = iv[id];
            const uint64_t temp = static_cast<uint64_t>(ratio * static_cast<double>(g.size));
            if (temp > 0) rewrite_.addTemporaryAfter(id, roundUp512(temp));
            rewrite_.freeRightAfterBirth(id);
            if (g.start <= first_backward_end) first_grads_by_size[g.size].push_back(id);
        }

        // The optimizer state: born with its parameter's first gradient.
        std::unordered_map<uint64_t, size_t> taken;
        std::unordered_map<uint64_t, size_t> states_of_size;
        for (uint32_t id : states) ++states_of_size[iv[id].size];
        size_t unmatched = 0;
        for (uint32_t id : states) {
            const uint64_t size = iv[id].size;
            auto it = first_grads_by_size.find(size);
            if (it == first_grads_by_size.end()) {
                ++unmatched;
                rewrite_.moveBirth(id, chain_.steps.front().backward_start);
                continue;
            }
            const size_t per = std::max<size_t>(1, states_of_size[size] / it->second.size());
            const size_t k = std::min(taken[size]++ / per, it->second.size() - 1);
            rewrite_.moveBirthAfter(id, it->second[k]);
        }

        assumptions_.push_back(
            "each gradient made in backward is taken as complete when it is made, and freed "
            "right after its parameter's optimizer step");
        if (ratio > 0)
            assumptions_.push_back(
                "the optimizer step's temporaries (" +
                std::to_string(static_cast<int>(ratio * 100 + 0.5)) +
                "% of the gradients' bytes at most, measured) become "
                "per-parameter ones of the same share, right after each gradient");
        assumptions_.push_back(
            "the optimizer state is born in the first backward, with the first gradient of its "
            "size" +
            std::string(unmatched ? " (" + std::to_string(unmatched) +
                                        " state tensors of no gradient's size: at the first "
                                        "backward's start)"
                                  : std::string()));
        assumptions_.push_back("the optimizer's time is taken as unchanged, moved into backward");
    }

    double temporaryRatio(const std::vector<uint32_t>& temps,
                          const std::vector<std::pair<int64_t, int64_t>>& windows) const {
        const auto& iv = device_.intervals;
        double best = 0;
        for (const auto& w : windows) {
            // Live temporary bytes over the window (a sweep of births and deaths).
            std::vector<std::pair<int64_t, int64_t>> steps;
            for (uint32_t id : temps)
                if (iv[id].start >= w.first && iv[id].start <= w.second) {
                    steps.emplace_back(iv[id].start, static_cast<int64_t>(iv[id].size));
                    steps.emplace_back(iv[id].end, -static_cast<int64_t>(iv[id].size));
                }
            std::sort(steps.begin(), steps.end());
            int64_t live = 0, peak = 0;
            for (const auto& [t, d] : steps) peak = std::max(peak, live += d);
            // The gradients the step served: those alive at its start.
            int64_t grads = 0;
            for (const auto& a : device_.liveAt(w.first))
                if (iv[a].category == Category::Gradient) grads += static_cast<int64_t>(iv[a].size);
            if (grads > 0)
                best = std::max(best, static_cast<double>(peak) / static_cast<double>(grads));
        }
        return best;
    }

    static uint64_t roundUp512(uint64_t n) { return (n + 511) / 512 * 512; }
};

}  // namespace

std::string refusal(const Trace& measured, const WhatIfPolicy& policy, const LayerChain& chain) {
    const std::string measured_policy = measured.metrics ? measured.metrics->policy : std::string();
    if (!measured_policy.empty() && measured_policy != "full")
        return "predictions start from a full-save run; this run's policy is " + measured_policy;
    const bool recomputes =
        std::any_of(measured.modules.scopes.begin(), measured.modules.scopes.end(),
                    [](const ModuleScope& s) { return s.kind == ModuleScopeKind::Recompute; });
    if (measured_policy.empty() && recomputes)
        return "this run already recomputes layers (checkpointing): predictions start from a "
               "full-save run";
    if (policy.policy.recompute == Recompute::Selective ||
        policy.policy.recompute == Recompute::Save)
        return "the trace does not say which op made each allocation, so what a save list or "
               "selective recompute keeps cannot be told apart (this version predicts layer "
               "sets and opt-in-bwd only)";
    if (policy.policy.recompute == Recompute::Segments &&
        policy.policy.segments > static_cast<int>(chain.layers.size()))
        return "segments:" + std::to_string(policy.policy.segments) +
               " needs at least that many "
               "layers; the trace has " +
               std::to_string(chain.layers.size());
    return {};
}

Result<SimulatedRun> simulatePolicy(const Trace& measured, const DeviceTimeline& device,
                                    const Timeline& timeline, const LayerChain& chain,
                                    const WhatIfPolicy& policy, const std::string& source) {
    Simulation sim(measured, device, timeline, chain);
    return sim.run(policy, source);
}

}  // namespace memscope::detail
