#include "policy_simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <unordered_map>

#include "memscope/base/units.h"
#include "memscope/model/phases.h"
#include "memscope/whatif/attention_core.h"
#include "memscope/whatif/checkpoint_regions.h"
#include "memscope/whatif/op_index.h"
#include "memscope/whatif/op_labels.h"
#include "trace_rewrite.h"

namespace memscope::detail {
namespace {

std::string modelName(const Trace& trace) {
    return trace.metrics && trace.metrics->model ? trace.metrics->model->name : std::string();
}

// memscope-train's mlp, told by its op phases: its selective recomputation
// keeps the matmul outputs and recomputes the norm and the GELU (the
// trainer's definition). Every other run's selective recomputes the
// attention cores its ops show.
bool trainerMlp(const Trace& measured, const OpIndex& ops) {
    return ops.source() == OpIndexSource::Phases && modelName(measured) == "mlp";
}

OpSelection keptOps(const Policy& policy, const Trace& measured, const OpIndex& ops) {
    if (policy.recompute == Recompute::Save) return OpSelection::of(policy);
    if (policy.recompute == Recompute::Selective && trainerMlp(measured, ops))
        return {kSaveMatmul, {}};
    return {};
}

// "matmul,aten::_softmax": the ops a selection keeps, as a save list names them.
std::string selectionName(const OpSelection& keep) {
    Policy p{Recompute::Save};
    p.save_ops = keep.kinds;
    p.save_op_names = keep.names;
    return policyName(p).substr(5);
}

bool persistent(Category c) {
    return c == Category::Parameter || c == Category::OptimizerState || c == Category::Gradient ||
           c == Category::Input;
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
    Simulation(const Trace& measured, const DeviceTimeline& device, const LayerChain& chain,
               CheckpointStyle style)
        : measured_(measured),
          device_(device),
          chain_(chain),
          reentrant_(style == CheckpointStyle::Reentrant),
          rewrite_(measured, device) {}

    Result<SimulatedRun> run(const WhatIfPolicy& policy, const std::string& source) {
        SimulatedRun out;
        out.recompute_per_step.assign(chain_.steps.size(), 0);
        auto windows = checkpointWindows(policy, chain_, measured_);
        if (!windows) return windows.error();
        // The run's ops, read only for the policies that keep or recompute by op.
        if (policy.policy.recompute == Recompute::Selective ||
            !OpSelection::of(policy.policy).empty())
            ops_.emplace(measured_, device_.device);
        const OpIndex& ops = ops_ ? *ops_ : no_ops_;
        const bool attention_only =
            policy.policy.recompute == Recompute::Selective && !trainerMlp(measured_, ops);
        const OpSelection keep = keptOps(policy.policy, measured_, ops);
        const OpIndex::Kept kept = ops.kept(keep);
        for (size_t si = 0; si < chain_.steps.size(); ++si) {
            if (attention_only) {
                out.recompute_per_step[si] += checkpointAttention(si);
                continue;
            }
            for (const CheckpointWindow& w : *windows) {
                if (w.step != si) continue;
                // A mix keeps the save list's ops only in its save_layers.
                const bool saving = !keep.empty() && (policy.plan != RegionPlan::Layers ||
                                                      savesOpsIn(policy, w.block));
                out.recompute_per_step[si] +=
                    checkpoint(w, saving ? &kept : nullptr,
                               saving && policy.policy.recompute == Recompute::Save);
            }
        }
        if (!keep.empty())
            assumptions_.push_back(
                "the outputs of the ops kept (" + selectionName(keep) + ", as " +
                std::string(ops.describe()) +
                " name them) stay as measured, not run again; everything else the layer's "
                "forward made is recomputed");
        if (attention_only) noteAttentionCores();
        if ((!keep.empty() || attention_only) && ops.source() == OpIndexSource::Inferred)
            assumptions_.push_back(
                "ops inferred per allocation give no time range: an op is taken to run from "
                "its first allocation to the next allocation another op made");
        if (policy.policy.optimizer_in_backward) {
            auto done = optimizerInBackward();
            if (!done) return done.error();
        }
        assumptions_.insert(assumptions_.begin(), chain_.assumptions.begin(),
                            chain_.assumptions.end());
        if (!windows->empty()) {
            assumptions_.push_back(
                "the recompute replays the layer's measured forward, allocation for allocation, "
                "and takes its measured forward time");
            assumptions_.push_back(
                reentrant_ ? "checkpointed as torch.utils.checkpoint(use_reentrant=True) does: "
                             "the recomputed output is kept until the last tensor the layer "
                             "saved is freed"
                           : "checkpointed as torch.utils.checkpoint(use_reentrant=False) does: "
                             "the recomputed output, which the layer's backward does not need, "
                             "is freed when the recompute ends");
        }

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
    const bool reentrant_;
    std::optional<OpIndex> ops_;
    const OpIndex no_ops_;
    TraceRewrite rewrite_;
    std::vector<std::string> assumptions_;
    // Selective: how the first attention core was found, and the layers that have none.
    std::string core_found_;
    std::vector<std::string> layers_without_core_;
    bool noted_output_ = false;
    bool noted_inputs_ = false;
    bool noted_span_ = false;

    // A stretch of one step's forward that is checkpointed as one region.
    struct Window {
        int64_t fs = 0, fe = 0;  // the region's forward [fs, fe)
        size_t step = 0;
        std::string name;  // "block 3", "h.0–h.3", "attention of block 3"
        int32_t block = -1;
        std::pair<size_t, size_t> layers{0, 0};  // whose forward scopes are replayed
        const OpIndex::Kept* keep = nullptr;     // the ops whose outputs are kept, not recomputed
        // A save list's cache holds a kept matmul's output from the forward to
        // the recompute, even one the forward used only once (a selective
        // region's output is not held).
        bool hold_outputs = false;
    };

    // Checkpoints window `w`, keeping the outputs of the `keep` ops (none:
    // null); returns the recompute time added.
    int64_t checkpoint(const CheckpointWindow& w, const OpIndex::Kept* keep, bool hold) {
        return checkpointWindow({w.forward_start,
                                 w.forward_end,
                                 w.step,
                                 w.name,
                                 w.block,
                                 {w.layers.first, w.layers.last},
                                 keep,
                                 hold});
    }

    // Checkpoints only each layer's attention core in step si (Megatron's
    // selective recomputation): what attention_core.h finds in its forward.
    // Its inputs (q, k, v) were made before it and stay as measured.
    int64_t checkpointAttention(size_t si) {
        int64_t added = 0;
        for (size_t l = 0; l < chain_.layers.size(); ++l) {
            const ChainLayer& layer = chain_.layers[l];
            const LayerRun* run = runIn(layer, si);
            if (!run) continue;
            const auto core = attentionCoreIn(*ops_, run->forward_start, run->forward_end);
            if (!core) {
                if (std::find(layers_without_core_.begin(), layers_without_core_.end(),
                              layer.name) == layers_without_core_.end())
                    layers_without_core_.push_back(layer.name);
                continue;
            }
            if (core_found_.empty()) core_found_ = layer.name + ": " + core->ops;
            added += checkpointWindow({core->start,
                                       core->end,
                                       si,
                                       "attention of " + layer.name,
                                       static_cast<int32_t>(layer.index),
                                       {l, l},
                                       nullptr,
                                       false});
        }
        return added;
    }

    void noteAttentionCores() {
        assumptions_.push_back(
            "selective recomputation (Megatron's): only each layer's attention core (scores "
            "matmul through softmax and dropout to the weighted-sum matmul, or a fused "
            "scaled_dot_product_attention) is recomputed, found from " +
            std::string(ops_->describe()) +
            (core_found_.empty() ? std::string() : " (" + core_found_ + ")") +
            "; its inputs (q, k, v) and output are kept");
        if (layers_without_core_.empty()) return;
        std::string names;
        for (const std::string& n : layers_without_core_) names += (names.empty() ? "" : ", ") + n;
        assumptions_.push_back(
            "no attention core (no softmax or scaled_dot_product_attention op) "
            "in " +
            names + ": nothing is recomputed there");
    }

    int64_t checkpointWindow(const Window& w) {
        const ChainStep& step = chain_.steps[w.step];
        const int64_t fs = w.fs, fe = w.fe;
        if (fe <= fs) return 0;
        const auto& iv = device_.intervals;
        // The kept op call that made an allocation, if a kept op did.
        auto keptCall = [&](const AllocationInterval& a) -> std::optional<OpRun> {
            if (!w.keep) return std::nullopt;
            return w.keep->madeBy(a.alloc_event, a.start);
        };
        auto stored = [&](const AllocationInterval& a) { return keptCall(a).has_value(); };

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
            if (a.alloc_event == kNoEvent || persistent(a.category) || a.free_event == kNoEvent ||
                stored(a))
                continue;
            if (a.end >= fe && a.end <= step.backward_end &&
                (!output || a.start >= iv[*output].start))
                output = static_cast<uint32_t>(i);
        }
        std::vector<uint32_t> temps, kept, saved, stored_temps;
        // A kept op run with autograd (the attention core) keeps what its
        // backward needs, its input too.
        std::vector<uint32_t> kept_inputs;
        if (w.keep) kept_inputs = keptOpInputs(w, step);
        int64_t saved_done = downstream_done;
        for (size_t i = firstStartingAt(iv, fs); i < iv.size() && iv[i].start < fe; ++i) {
            const AllocationInterval& a = iv[i];
            if (a.alloc_event == kNoEvent || persistent(a.category)) continue;
            const uint32_t id = static_cast<uint32_t>(i);
            // What a kept op made stays as measured, it is not run again;
            // but what it made only for the forward's next op (a temporary
            // there) is now held by the save list until the recompute takes it.
            if (const auto call = keptCall(a)) {
                if (w.hold_outputs && a.free_event != kNoEvent && a.end < fe &&
                    heldUntilRecompute(*call, a))
                    stored_temps.push_back(id);
                continue;
            }
            if (std::find(kept_inputs.begin(), kept_inputs.end(), id) != kept_inputs.end())
                continue;
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
        // What the window read that was made before it (an attention core's
        // q, k, v buffer) is an input the checkpoint holds until the
        // region's backward is done. Measured, it was freed in forward: by
        // its last reader inside the window, or, for a window inside a
        // layer (an attention core), when the layer's code let go of it.
        const int64_t layer_start = layerStartOf(w);
        for (size_t i = firstStartingAt(iv, step.forward_start); i < iv.size() && iv[i].start < fs;
             ++i) {
            const AllocationInterval& a = iv[i];
            if (a.alloc_event == kNoEvent || a.free_event == kNoEvent || persistent(a.category) ||
                a.end < fs || a.end >= step.backward_start ||
                (a.end >= fe && a.start < layer_start))
                continue;
            rewrite_.moveFree(static_cast<uint32_t>(i), std::max(saved_done, a.end));
            if (!noted_inputs_) {
                noted_inputs_ = true;
                assumptions_.push_back(
                    "what a checkpointed region reads that was made before it, and that its "
                    "measured forward freed (the tensor the region was called with), is held by "
                    "the checkpoint until the region's backward is done");
            }
        }
        if (!noted_output_ && output) {
            noted_output_ = true;
            const std::string& name = w.name;
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

        // The replay, inserted after downstream_done; kept ops take no time.
        const int64_t duration = fe - fs - keptOpTime(w);
        const TraceRewrite::Gap gap = rewrite_.insertGap(downstream_done, duration);
        const PhaseId recompute = rewrite_.addRecomputePhase(
            gap, "recompute " + w.name, w.block,
            phaseHolding(measured_, PhaseKind::Backward, device_.device, downstream_done));
        // The replay's times, compressed by the kept ops' share.
        const double scale = static_cast<double>(duration) / static_cast<double>(fe - fs);
        auto offset = [&](int64_t t) {
            return static_cast<int64_t>(static_cast<double>(t - fs) * scale);
        };
        for (uint32_t id : temps)
            rewrite_.addCopy(id, gap, offset(iv[id].start), TraceRewrite::At::InGap,
                             offset(iv[id].end), recompute);
        for (uint32_t id : kept) {
            // Measured, the region's own backward held it too (a ReLU keeps
            // its result); checkpointed, only the layers after it hold the
            // original, and they are done.
            if (iv[id].end > downstream_done) rewrite_.moveFree(id, downstream_done);
            if (reentrant_)
                rewrite_.addCopy(id, gap, offset(iv[id].start), TraceRewrite::At::Measured,
                                 saved_done, recompute);
            else
                rewrite_.addCopy(id, gap, offset(iv[id].start), TraceRewrite::At::InGap, duration,
                                 recompute);
        }
        for (uint32_t id : saved)
            rewrite_.addCopy(id, gap, offset(iv[id].start), TraceRewrite::At::Measured, iv[id].end,
                             recompute);
        for (uint32_t id : stored_temps) rewrite_.moveFreeIntoGap(id, gap, offset(iv[id].end));
        rewrite_.addRecomputeScopes(gap, fs, fe, scale);
        return duration;
    }

    // Whether a kept op's allocation that the forward freed is held by the
    // save list's cache until the recompute takes it: an output (freed after
    // its op ended), not the op's own scratch, and not an attention op's
    // (kept whole with its autograd, as memscope-train runs it). The
    // trainer's phases: what its "matmul" phases made, as before.
    bool heldUntilRecompute(const OpRun& call, const AllocationInterval& a) const {
        if (ops_->source() == OpIndexSource::Phases) return (call.kind & kSaveMatmul) != 0;
        return !(call.kind & kSaveAttention) && a.end >= call.end;
    }

    // Where the layer holding window `w` began its forward, for a window
    // inside one layer (an attention core); else the window's own start.
    int64_t layerStartOf(const Window& w) const {
        if (w.layers.first != w.layers.second || w.layers.first >= chain_.layers.size())
            return w.fs;
        const LayerRun* run = runIn(chain_.layers[w.layers.first], w.step);
        return run && run->forward_start <= w.fs ? run->forward_start : w.fs;
    }

    // Time spent in the window inside ops whose outputs are kept: the
    // outermost calls of them, which the recompute does not run again.
    int64_t keptOpTime(const Window& w) const { return w.keep ? w.keep->timeIn(w.fs, w.fe) : 0; }

    // The inputs of each kept attention op of window `w`: the last tensor
    // made before the op began that lives into backward (its q, k, v buffer),
    // which the op, run once with autograd, keeps for its own backward.
    std::vector<uint32_t> keptOpInputs(const Window& w, const ChainStep& step) const {
        std::vector<uint32_t> inputs;
        const auto& iv = device_.intervals;
        for (const OpRun& p : w.keep->attentionIn(w.fs, w.fe)) {
            for (size_t i = firstStartingAt(iv, p.start); i-- > firstStartingAt(iv, w.fs);) {
                const AllocationInterval& a = iv[i];
                if (a.alloc_event == kNoEvent || persistent(a.category) || a.free_event == kNoEvent)
                    continue;
                if (a.end >= step.backward_start && a.end <= step.backward_end) {
                    inputs.push_back(static_cast<uint32_t>(i));
                    break;
                }
            }
        }
        return inputs;
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

    Result<void> optimizerInBackward() {
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
        // The policy frees gradients as backward makes them. Gradients that
        // live across steps (alive before the trace began, or kept by
        // zero_grad(set_to_none=False)) are not made in backward, and what
        // fusing would do to them is not in the trace.
        int64_t made = 0, kept = 0;
        for (uint32_t id : grads) made += static_cast<int64_t>(iv[id].size);
        for (const AllocationInterval& a : iv)
            if (a.category == Category::Gradient && a.alloc_event == kNoEvent)
                kept += static_cast<int64_t>(a.size);
        if (made == 0 || kept > made)
            return makeError(
                "the run's gradients are not made in backward (" + formatBytes(kept) +
                " of them were alive before the trace began, " + formatBytes(made) +
                " made in backward): fusing the optimizer into backward cannot be predicted "
                "from it; record from the first step");
        const TemporaryShare share = temporaryRatio(temps, windows);
        const double ratio = share.ratio;
        for (uint32_t id : temps) rewrite_.drop(id);

        // Each gradient: its parameter's optimizer work right after it is made.
        const int64_t first_backward_end = chain_.steps.front().backward_end;
        std::unordered_map<uint64_t, std::vector<uint32_t>> first_grads_by_size;
        for (uint32_t id : grads) {
            const AllocationInterval& g = iv[id];
            const uint64_t temp = static_cast<uint64_t>(ratio * static_cast<double>(g.size));
            if (temp > 0) rewrite_.addTemporaryAfter(id, roundUp512(temp));
            rewrite_.freeWhenComplete(id);
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
            rewrite_.moveBirthToCompletion(id, it->second[k]);
        }

        assumptions_.push_back(
            "each gradient made in backward is taken as complete when the op that made it has "
            "finished (before the next allocation), and freed right after its parameter's "
            "optimizer step");
        if (ratio > 0)
            assumptions_.push_back(
                "the optimizer step's temporaries become per-parameter ones, right after each "
                "gradient: " +
                std::to_string(std::lround(ratio * 100)) +
                "% of its bytes, the measured step's peak of them over " +
                (share.one_at_a_time ? "the largest gradient (it updated one parameter at a time)"
                                     : "the gradients it served (it updated them all at once)"));
        assumptions_.push_back(
            "the optimizer state is born in the first backward, with the first gradient of its "
            "size" +
            std::string(unmatched ? " (" + std::to_string(unmatched) +
                                        " state tensors of no gradient's size: at the first "
                                        "backward's start)"
                                  : std::string()));
        assumptions_.push_back("the optimizer's time is taken as unchanged, moved into backward");
        return {};
    }

    // How many bytes of temporaries the optimizer step makes per gradient
    // byte: its live temporaries' peak over the gradients they served then.
    // A step that updates one parameter at a time (a for-loop optimizer,
    // 1.13's CPU default) holds one parameter's temporaries at its peak: the
    // largest gradient's; one that updates all at once (foreach) holds all.
    struct TemporaryShare {
        double ratio = 0;
        bool one_at_a_time = false;
    };
    TemporaryShare temporaryRatio(const std::vector<uint32_t>& temps,
                                  const std::vector<std::pair<int64_t, int64_t>>& windows) const {
        const auto& iv = device_.intervals;
        TemporaryShare best;
        for (const auto& w : windows) {
            // Live temporary bytes (and how many) over the window: a sweep of
            // births and deaths.
            std::vector<std::pair<int64_t, int64_t>> steps;
            for (uint32_t id : temps)
                if (iv[id].start >= w.first && iv[id].start <= w.second) {
                    steps.emplace_back(iv[id].start, static_cast<int64_t>(iv[id].size));
                    steps.emplace_back(iv[id].end, -static_cast<int64_t>(iv[id].size));
                }
            std::sort(steps.begin(), steps.end());
            int64_t live = 0, peak = 0, count = 0, count_at_peak = 0;
            for (const auto& [t, d] : steps) {
                live += d;
                count += d > 0 ? 1 : -1;
                if (live > peak) peak = live, count_at_peak = count;
            }
            // The gradients the step served: those alive at its start.
            int64_t grads = 0, largest = 0, n = 0;
            for (const auto& a : device_.liveAt(w.first))
                if (iv[a].category == Category::Gradient) {
                    grads += static_cast<int64_t>(iv[a].size);
                    largest = std::max(largest, static_cast<int64_t>(iv[a].size));
                    ++n;
                }
            if (grads == 0) continue;
            const bool one = n > 2 && count_at_peak * 2 < n;
            const double ratio =
                static_cast<double>(peak) / static_cast<double>(one ? largest : grads);
            if (ratio > best.ratio) best = {ratio, one};
        }
        return best;
    }

    static uint64_t roundUp512(uint64_t n) { return (n + 511) / 512 * 512; }
};

// Why the ops of the run cannot tell what a save list or selective keeps.
std::string opRefusal(const Trace& measured, const WhatIfPolicy& policy, const LayerChain& chain) {
    const OpSelection keep = OpSelection::of(policy.policy);
    const bool selective = policy.policy.recompute == Recompute::Selective;
    if (!selective && keep.empty()) return {};
    const OpIndex ops(measured, chain.device);
    if (ops.empty())
        return "the trace does not say which op made each allocation, so what a save list or "
               "selective recompute keeps cannot be told from what it recomputes: record with "
               "`memscope-cli record` (ops recorded via the capture library, or --ops "
               "dispatch), or a snapshot with C++ frames (stacks=\"all\")";
    if (!keep.empty()) {
        const std::vector<std::string> missing = ops.neverRan(keep);
        if (missing.empty()) return {};
        std::string names, top;
        for (const std::string& m : missing) names += (names.empty() ? "" : ", ") + m;
        for (const OpBytes& o : ops.topAllocating(5))
            top += (top.empty() ? "" : ", ") + o.name + " (" +
                   formatBytes(static_cast<int64_t>(o.bytes)) + ")";
        return "the trace never ran " + names + " (by " + std::string(ops.describe()) +
               "): nothing of it to keep" +
               (top.empty() ? std::string() : "; the ops that allocate most: " + top);
    }
    if (trainerMlp(measured, ops)) return {};
    for (const ChainLayer& layer : chain.layers)
        for (const LayerRun& run : layer.runs)
            if (attentionCoreIn(ops, run.forward_start, run.forward_end)) return {};
    return "selective recomputes each layer's attention core, and no layer has one: no softmax "
           "or scaled_dot_product_attention op in any layer (" +
           std::string(ops.describe()) + "); name the ops to keep instead (save:OPS)";
}

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
    std::string ops_refused = opRefusal(measured, policy, chain);
    if (!ops_refused.empty()) return ops_refused;
    if (policy.policy.recompute == Recompute::Segments &&
        policy.policy.segments > static_cast<int>(chain.layers.size()))
        return "segments:" + std::to_string(policy.policy.segments) +
               " needs at least that many "
               "layers; the trace has " +
               std::to_string(chain.layers.size());
    return {};
}

Result<SimulatedRun> simulatePolicy(const Trace& measured, const DeviceTimeline& device,
                                    const LayerChain& chain, const WhatIfPolicy& policy,
                                    const std::string& source, CheckpointStyle style) {
    Simulation sim(measured, device, chain, style);
    return sim.run(policy, source);
}

CheckpointStyle resolveCheckpointStyle(const Trace& measured, const WhatIfPolicy& policy,
                                       CheckpointStyle asked) {
    if (asked != CheckpointStyle::Auto) return asked;
    // checkpoint_sequential checkpoints reentrantly (1.13 always; 2.x by default).
    if (policy.plan == RegionPlan::Sequential) return CheckpointStyle::Reentrant;
    // memscope-train's regions are autograd Functions that re-run and
    // differentiate the region in backward, as the reentrant checkpoint does.
    if (!modelName(measured).empty()) return CheckpointStyle::Reentrant;
    return CheckpointStyle::NonReentrant;
}

}  // namespace memscope::detail
