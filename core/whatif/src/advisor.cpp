#include "memscope/whatif/advisor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "memscope/base/units.h"
#include "memscope/whatif/policy_modules.h"

namespace memscope {
namespace {

// A layer's choice in a mix, by chain position.
enum class LayerChoice : uint8_t { None, Save, Whole };

// One step of the search: layer `pos` goes to `to`, predicted (from that
// layer alone) to lower the peak by `gain` bytes at `cost` ms of recompute.
struct Move {
    size_t pos = 0;
    LayerChoice to = LayerChoice::Whole;
    double gain = 0;
    double cost = 0;
};

constexpr size_t kFrontierSweep = 12;  // prefix lengths simulated for a frontier without budget

std::string ms(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f ms", v);
    return buf;
}

class Search {
public:
    Search(const Trace& measured, const Timeline& timeline, std::string source,
           const AdvisorOptions& options, const TaskContext& ctx)
        : measured_(measured),
          timeline_(timeline),
          source_(std::move(source)),
          options_(options),
          ctx_(ctx) {
        options_.whatif.keep_traces = false;
        asked_settings_ = options_.whatif.allocator_settings;
    }

    Result<Advice> run(std::optional<int64_t> budget) {
        Advice advice;
        advice.source = source_;
        advice.budget_bytes = budget;
        auto asked = searchUnder(budget, advice);
        if (!asked) return asked.error();
        // On a GPU run the allocator's settings are a choice too: expandable
        // segments cut what fragmentation reserves, so a faster mix may fit.
        if (by_reserved_ && options_.allocator_settings) {
            const AllocatorSettings base = options_.whatif.allocator_settings.value_or(
                allocatorSettingsOf(measured_).settings);
            if (!base.expandable_segments) {
                conf_ = "expandable_segments:True";
                options_.whatif.allocator_settings = *applyAllocatorConf(base, conf_);
                auto expandable = searchUnder(budget, advice);
                if (!expandable) return expandable.error();
            }
        }
        if (budget) decide(*budget, advice);
        advice.frontier = frontier();
        advice.simulations = simulations_;
        if (advice.choice && options_.keep_answer_trace) {
            WhatIfOptions keep = options_.whatif;
            keep.keep_traces = true;
            keep.allocator_settings = settingsFor(advice.choice->allocator_conf);
            const WhatIfPolicy p = advice.choice->policy;
            auto r = whatIf(measured_, timeline_, source_, std::span(&p, 1), keep, inner());
            if (!r) return r.error();
            if (r->rows.size() == 2 && !r->rows[1].refused) advice.choice->row = r->rows[1];
        }
        advice.line = describe(advice);
        return advice;
    }

private:
    // One search under the allocator settings options_.whatif holds (conf_
    // names them): the uniform policies, each layer alone, then the mixes.
    Result<void> searchUnder(std::optional<int64_t> budget, Advice& advice) {
        auto uniform = simulateReport(uniformPolicies());
        if (!uniform) return uniform.error();
        if (!uniform->chain)
            return makeError("no per-layer mix to search: " + uniform->chain_problem);
        const bool first = pool_.empty();
        AdvisedPolicy measured = advised(*parseWhatIfPolicy("opt-in-bwd"), uniform->rows.front());
        measured.policy.name = "full";
        measured.policy.policy.optimizer_in_backward = false;
        measured.uniform = true;
        if (first) {
            chain_ = *uniform->chain;
            by_reserved_ =
                std::all_of(uniform->rows.begin(), uniform->rows.end(),
                            [](const auto& r) { return r.refused || r.allocator.has_value(); });
            measured.judged_bytes = judged(uniform->rows.front());
            advice.by_reserved = by_reserved_;
            advice.measured = measured;
            measured_ms_ = uniform->rows.front().step_ms;
            if (!options_.optimizer_in_backward)
                advice.notes.push_back(
                    "the optimizer stays after backward (opt-in-bwd not allowed)");
        }
        pool_.push_back(measured);
        for (size_t i = 1; i < uniform->rows.size(); ++i) {
            if (uniform->rows[i].refused) continue;
            AdvisedPolicy a = advised(uniform_policies_[i - 1], uniform->rows[i]);
            a.uniform = true;
            if (uniform_policies_[i - 1].name == "opt-in-bwd") opt_allowed_ = true;
            pool_.push_back(std::move(a));
        }
        opt_allowed_ = opt_allowed_ && options_.optimizer_in_backward;

        auto moves = plannedMoves(first ? &advice.notes : nullptr);
        if (!moves) return moves.error();
        moves_ = std::move(*moves);
        for (bool opt : optimizerChoices()) {
            if (ctx_.cancelled()) return cancelledError();
            auto done = budget ? fitPrefix(*budget, opt) : sweep(opt);
            if (!done) return done.error();
        }
        return {};
    }

    std::optional<AllocatorSettings> settingsFor(const std::string& conf) const {
        if (conf.empty() || conf != conf_) return asked_settings_;
        return options_.whatif.allocator_settings;
    }

    const Trace& measured_;
    const Timeline& timeline_;
    std::string source_;
    AdvisorOptions options_;
    const TaskContext& ctx_;
    LayerChain chain_;
    bool by_reserved_ = false;
    bool opt_allowed_ = false;
    bool save_allowed_ = false;
    double measured_ms_ = 0;
    std::vector<WhatIfPolicy> uniform_policies_;
    std::vector<Move> moves_;
    std::vector<AdvisedPolicy> pool_;  // every policy simulated, measured run first
    // The allocator settings of the search under way ("" = as asked), and
    // those asked for.
    std::string conf_;
    std::optional<AllocatorSettings> asked_settings_;
    size_t simulations_ = 0;

    TaskContext inner() const {
        TaskContext c;
        c.cancel = ctx_.cancel;
        return c;
    }

    int64_t judged(const WhatIfRow& row) const {
        if (by_reserved_ && row.allocator)
            return row.allocator->failure ? std::numeric_limits<int64_t>::max()
                                          : int64_t(row.allocator->reserved_peak_bytes);
        return row.peak_bytes;
    }

    AdvisedPolicy advised(WhatIfPolicy policy, const WhatIfRow& row) const {
        AdvisedPolicy a;
        a.policy = std::move(policy);
        a.row = row;
        a.row.trace.reset();
        a.row.timeline.reset();
        a.judged_bytes = judged(row);
        a.allocator_conf = conf_;
        return a;
    }

    Result<WhatIfReport> simulateReport(const std::vector<WhatIfPolicy>& policies) {
        if (ctx_.cancelled()) return cancelledError();
        auto r = whatIf(measured_, timeline_, source_, policies, options_.whatif, inner());
        if (!r) return r.error();
        simulations_ += policies.size();
        if (ctx_.progress) ctx_.progress(simulations_, estimate());
        return r;
    }

    // One policy, whole; nullopt when refused.
    Result<std::optional<AdvisedPolicy>> simulate(const WhatIfPolicy& policy) {
        for (const AdvisedPolicy& a : pool_)
            if (a.policy.name == policy.name && a.allocator_conf == conf_)
                return std::optional<AdvisedPolicy>(a);
        auto r = simulateReport({policy});
        if (!r) return r.error();
        if (r->rows.size() != 2 || r->rows[1].refused) return std::optional<AdvisedPolicy>();
        AdvisedPolicy a = advised(policy, r->rows[1]);
        pool_.push_back(a);
        return std::optional<AdvisedPolicy>(std::move(a));
    }

    size_t estimate() const {
        const size_t layers = std::max<size_t>(chain_.layers.size(), 1);
        return uniform_policies_.size() + 2 * layers + 2 * (layers + 8);
    }

    std::vector<WhatIfPolicy> uniformPolicies() {
        uniform_policies_.clear();
        for (const char* name : {"block", "sqrt", "segments:2", "segments:4", "every:2", "every:3",
                                 "save:matmul", "selective", "opt-in-bwd"}) {
            const bool optimizer = std::string_view(name) == "opt-in-bwd";
            if (optimizer && !options_.optimizer_in_backward) continue;
            uniform_policies_.push_back(*parseWhatIfPolicy(name));
            if (!optimizer && options_.optimizer_in_backward)
                uniform_policies_.push_back(*parseWhatIfPolicy(std::string(name) + "+opt-in-bwd"));
        }
        return uniform_policies_;
    }

    std::vector<bool> optimizerChoices() const {
        return opt_allowed_ ? std::vector<bool>{false, true} : std::vector<bool>{false};
    }

    Policy saveList() const {
        if (options_.save_list) return *options_.save_list;
        Policy p{Recompute::Save};
        p.save_ops = kSaveMatmul;
        return p;
    }

    // The mix of per-layer choices `state` (by chain position).
    WhatIfPolicy mix(const std::vector<LayerChoice>& state, bool opt) const {
        WhatIfPolicy w;
        w.plan = RegionPlan::Layers;
        w.explicit_layers = true;
        const Policy list = saveList();
        for (size_t p = 0; p < state.size(); ++p) {
            if (state[p] == LayerChoice::Whole) w.layers.push_back(chain_.layers[p].index);
            if (state[p] == LayerChoice::Save) w.save_layers.push_back(chain_.layers[p].index);
        }
        std::sort(w.layers.begin(), w.layers.end());
        std::sort(w.save_layers.begin(), w.save_layers.end());
        if (w.layers.empty() && w.save_layers.empty()) {
            // Nothing checkpointed: the measured run, or the optimizer alone.
            WhatIfPolicy none = *parseWhatIfPolicy("opt-in-bwd");
            if (!opt) none.name = "full";
            none.policy.optimizer_in_backward = opt;
            return none;
        }
        w.policy.recompute = w.save_layers.empty() ? Recompute::Block : Recompute::Save;
        w.policy.save_ops = list.save_ops;
        w.policy.save_op_names = list.save_op_names;
        w.policy.optimizer_in_backward = opt;
        w.name = mixName(w);
        return w;
    }

    std::vector<LayerChoice> stateOf(size_t prefix) const {
        std::vector<LayerChoice> state(chain_.layers.size(), LayerChoice::None);
        for (size_t i = 0; i < prefix && i < moves_.size(); ++i)
            state[moves_[i].pos] = moves_[i].to;
        return state;
    }

    // Each layer alone, checkpointed whole and with the save list, orders
    // the moves: the most bytes per ms of recompute first, a layer's save
    // list before its upgrade to whole where that is the cheaper way to its
    // first bytes. Layers that lower the peak alone by nothing come last,
    // cheapest first: together they may.
    Result<std::vector<Move>> plannedMoves(std::vector<std::string>* notes) {
        std::vector<WhatIfPolicy> singles;
        const size_t n = chain_.layers.size();
        for (size_t p = 0; p < n; ++p) {
            std::vector<LayerChoice> whole(n, LayerChoice::None), save(n, LayerChoice::None);
            whole[p] = LayerChoice::Whole;
            save[p] = LayerChoice::Save;
            singles.push_back(mix(whole, false));
            singles.push_back(mix(save, false));
        }
        auto r = simulateReport(singles);
        if (!r) return r.error();
        // The full run under these allocator settings.
        const AdvisedPolicy& base = *std::find_if(pool_.begin(), pool_.end(), [&](const auto& a) {
            return a.policy.name == "full" && a.allocator_conf == conf_;
        });
        std::vector<Move> moves, idle;
        for (size_t p = 0; p < n; ++p) {
            const WhatIfRow& w = r->rows[1 + 2 * p];
            const WhatIfRow& s = r->rows[2 + 2 * p];
            if (w.refused) continue;
            const double gw = double(base.judged_bytes - judged(w)), cw = w.step_ms - measured_ms_;
            // A save list that keeps nothing in this layer (a conv block has
            // no matmul) is the whole checkpoint under a longer name.
            const bool save_ok = !s.refused && s.step_ms < w.step_ms;
            save_allowed_ = save_allowed_ || save_ok;
            const double gs = save_ok ? double(base.judged_bytes - judged(s)) : 0;
            const double cs = save_ok ? s.step_ms - measured_ms_ : 0;
            auto ratio = [](double g, double c) { return g / std::max(c, 1e-9); };
            if (save_ok && gs > 0 && gw > gs && ratio(gw - gs, cw - cs) <= ratio(gs, cs)) {
                moves.push_back({p, LayerChoice::Save, gs, cs});
                moves.push_back({p, LayerChoice::Whole, gw - gs, cw - cs});
            } else if (save_ok && gs > 0 && gs >= gw) {
                moves.push_back({p, LayerChoice::Save, gs, cs});
            } else if (gw > 0) {
                moves.push_back({p, LayerChoice::Whole, gw, cw});
            } else {
                idle.push_back({p, LayerChoice::Whole, 0, cw});
            }
        }
        if (!save_allowed_ && notes)
            notes->push_back("layers are only checkpointed whole: the save list (" +
                             policyName(saveList()) +
                             ") keeps nothing in any layer, or the run's ops are not known");
        // Stable, so that a layer's save list stays before its upgrade (whose
        // ratio is at most the save list's, by the test above).
        std::stable_sort(moves.begin(), moves.end(), [](const Move& a, const Move& b) {
            return a.gain / std::max(a.cost, 1e-9) > b.gain / std::max(b.cost, 1e-9);
        });
        std::stable_sort(idle.begin(), idle.end(),
                         [](const Move& a, const Move& b) { return a.cost < b.cost; });
        moves.insert(moves.end(), idle.begin(), idle.end());
        return moves;
    }

    // The shortest prefix of the moves that fits, then each chosen layer
    // made cheaper where the whole run still fits.
    Result<void> fitPrefix(int64_t budget, bool opt) {
        auto at = [&](size_t k) -> Result<std::optional<AdvisedPolicy>> {
            return simulate(mix(stateOf(k), opt));
        };
        auto all = at(moves_.size());
        if (!all) return all.error();
        if (!*all || (*all)->judged_bytes > budget) return {};
        size_t lo = 0, hi = moves_.size();  // hi fits; find the smallest that does
        while (lo < hi) {
            const size_t mid = lo + (hi - lo) / 2;
            auto r = at(mid);
            if (!r) return r.error();
            if (*r && (*r)->judged_bytes <= budget)
                hi = mid;
            else
                lo = mid + 1;
        }
        // Prune: the most expensive choices first, each dropped (a whole
        // layer to its save list where it has one, else to none) if the
        // whole run still fits and is faster.
        std::vector<LayerChoice> state = stateOf(hi);
        auto best = at(hi);
        if (!best) return best.error();
        if (!*best) return {};
        std::vector<size_t> order;
        for (size_t p = 0; p < state.size(); ++p)
            if (state[p] != LayerChoice::None) order.push_back(p);
        std::vector<double> cost(state.size(), 0);
        for (size_t i = 0; i < hi; ++i) cost[moves_[i].pos] += moves_[i].cost;
        std::stable_sort(order.begin(), order.end(),
                         [&](size_t a, size_t b) { return cost[a] > cost[b]; });
        for (size_t p : order) {
            std::vector<LayerChoice> cheaper = state;
            cheaper[p] = state[p] == LayerChoice::Whole && save_allowed_ ? LayerChoice::Save
                                                                         : LayerChoice::None;
            auto r = simulate(mix(cheaper, opt));
            if (!r) return r.error();
            if (*r && (*r)->judged_bytes <= budget && (*r)->row.step_ms < (**best).row.step_ms) {
                state = std::move(cheaper);
                best = std::move(r);
            }
        }
        return {};
    }

    // Without a budget: prefixes of the moves, at most kFrontierSweep of them.
    Result<void> sweep(bool opt) {
        const size_t n = moves_.size();
        const size_t points = std::min(n + 1, kFrontierSweep);
        for (size_t i = 0; i < points; ++i) {
            const size_t k = points == 1 ? 0 : (i * n + (points - 1) / 2) / (points - 1);
            auto r = simulate(mix(stateOf(k), opt));
            if (!r) return r.error();
        }
        return {};
    }

    // The fastest fitting policy that record --apply and --emit can apply
    // by module; a faster one that only code of the user's own can apply (a
    // chunk of several layers as one region) is said beside it.
    void decide(int64_t budget, Advice& advice) const {
        auto faster = [](const AdvisedPolicy& a, const AdvisedPolicy& b) {
            if (a.row.step_ms != b.row.step_ms) return a.row.step_ms < b.row.step_ms;
            if (a.judged_bytes != b.judged_bytes) return a.judged_bytes < b.judged_bytes;
            return simpler(a, b);
        };
        std::vector<const AdvisedPolicy*> fitting;
        for (const AdvisedPolicy& a : pool_) {
            if (a.judged_bytes <= budget) {
                fitting.push_back(&a);
                if (a.uniform && (!advice.best_uniform || faster(a, *advice.best_uniform)))
                    advice.best_uniform = a;
            } else if (!advice.closest || a.judged_bytes < advice.closest->judged_bytes ||
                       (a.judged_bytes == advice.closest->judged_bytes &&
                        a.row.step_ms < advice.closest->row.step_ms)) {
                advice.closest = a;
            }
        }
        std::stable_sort(
            fitting.begin(), fitting.end(),
            [&](const AdvisedPolicy* a, const AdvisedPolicy* b) { return faster(*a, *b); });
        for (const AdvisedPolicy* a : fitting) {
            if (a->changesNoCode()) {  // fits as it is: nothing to apply
                advice.choice = *a;
                break;
            }
            auto modules = policyModules(a->policy, measured_, options_.whatif.checkpoint_style);
            if (modules) {
                advice.choice = *a;
                break;
            }
            if (!advice.by_hand) {
                advice.by_hand = *a;
                advice.by_hand_reason = modules.message();
            }
        }
        if (advice.choice || advice.by_hand)
            advice.closest.reset();
        else if (advice.closest)
            advice.short_by_bytes = advice.closest->judged_bytes - budget;
    }

    // Of policies predicted alike (peak and time), the one that changes the
    // least: uniform before a mix, the optimizer left where it is.
    static bool simpler(const AdvisedPolicy& a, const AdvisedPolicy& b) {
        if (a.allocator_conf.empty() != b.allocator_conf.empty()) return a.allocator_conf.empty();
        if (a.uniform != b.uniform) return a.uniform;
        return !a.policy.policy.optimizer_in_backward && b.policy.policy.optimizer_in_backward;
    }

    std::vector<AdvisedPolicy> frontier() const {
        std::vector<AdvisedPolicy> pool = pool_;
        std::stable_sort(pool.begin(), pool.end(), simpler);
        std::vector<PolicyPoint> points;
        for (const AdvisedPolicy& a : pool)
            points.push_back({a.policy.name, a.judged_bytes, a.row.step_ms});
        const std::vector<bool> on = onFrontier(points);
        std::vector<AdvisedPolicy> out;
        for (size_t i = 0; i < pool.size(); ++i) {
            const bool alike = std::any_of(out.begin(), out.end(), [&](const AdvisedPolicy& o) {
                return o.judged_bytes == pool[i].judged_bytes &&
                       o.row.step_ms == pool[i].row.step_ms;
            });
            if (on[i] && !alike) out.push_back(pool[i]);
        }
        std::sort(out.begin(), out.end(), [](const AdvisedPolicy& a, const AdvisedPolicy& b) {
            return a.judged_bytes > b.judged_bytes;
        });
        return out;
    }

    std::string describe(const Advice& a) const {
        const std::string kind = by_reserved_ ? " of reserved memory" : "";
        if (!a.budget_bytes)
            return std::to_string(a.frontier.size()) +
                   " policies on the predicted memory/time "
                   "frontier, from " +
                   std::to_string(simulations_) + " simulated runs";
        const std::string budget = "budget " + formatBytes(*a.budget_bytes) + kind;
        if (!a.choice && a.by_hand)
            return budget + ": only " + a.by_hand->label() + " fits (peak " +
                   formatBytes(a.by_hand->judged_bytes) + ", " + ms(a.by_hand->row.step_ms) +
                   " per step), and it needs code of your own: " + a.by_hand_reason;
        if (!a.choice) {
            if (!a.closest) return budget + ": nothing could be predicted";
            return budget + ": nothing fits; the smallest peak found, " + a.closest->label() +
                   "'s " + formatBytes(a.closest->judged_bytes) + ", is " +
                   formatBytes(a.short_by_bytes) + " over";
        }
        if (a.choice->changesNoCode())
            return budget + ": the run fits " +
                   (a.choice->allocator_conf.empty()
                        ? std::string("as it is")
                        : "with PYTORCH_CUDA_ALLOC_CONF=" + a.choice->allocator_conf) +
                   " (peak " + formatBytes(a.choice->judged_bytes) + "): no code to change";
        std::string line = budget + ": " + a.choice->label() + " (peak " +
                           formatBytes(a.choice->judged_bytes) + ", " + ms(a.choice->row.step_ms) +
                           " per step, " + ms(a.choice->row.step_ms - measured_ms_) +
                           " of it recompute)";
        if (a.best_uniform && a.best_uniform->label() != a.choice->label())
            line += "; the fastest uniform policy that fits, " + a.best_uniform->label() +
                    ", takes " + ms(a.best_uniform->row.step_ms) + " (peak " +
                    formatBytes(a.best_uniform->judged_bytes) + ")";
        else if (!a.best_uniform)
            line += "; no uniform policy fits";
        if (a.by_hand)
            line += "; faster still, " + a.by_hand->label() + " (" + ms(a.by_hand->row.step_ms) +
                    ") needs code of your own: " + a.by_hand_reason;
        return line;
    }
};

}  // namespace

Result<Advice> advise(const Trace& measured, const Timeline& timeline, std::string source,
                      std::optional<int64_t> budget_bytes, const AdvisorOptions& options,
                      const TaskContext& ctx) {
    if (budget_bytes && *budget_bytes <= 0)
        return makeError("the budget must be more than 0 bytes");
    Search search(measured, timeline, std::move(source), options, ctx);
    return search.run(budget_bytes);
}

}  // namespace memscope
