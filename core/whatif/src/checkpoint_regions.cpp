#include "memscope/whatif/checkpoint_regions.h"

#include <algorithm>
#include <map>
#include <string_view>

namespace memscope {
namespace {

std::string chainCount(size_t n) {
    return "the chain has " + std::to_string(n) + " layer" + (n == 1 ? "" : "s");
}

// layers:LIST's and a mix's layers (whole and with the save list), each its
// own region, in forward order.
Result<std::vector<LayerRegion>> listedLayers(const WhatIfPolicy& policy, const LayerChain& chain) {
    std::vector<LayerRegion> regions;
    std::vector<int64_t> listed = policy.layers;
    listed.insert(listed.end(), policy.save_layers.begin(), policy.save_layers.end());
    for (int64_t want : listed) {
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
        regions.push_back({at, at + 1});
    }
    std::sort(regions.begin(), regions.end(),
              [](const LayerRegion& a, const LayerRegion& b) { return a.first < b.first; });
    return regions;
}

// segmentPlan's checkpointed segments (block, sqrt, segments:K, sequential:K).
Result<std::vector<LayerRegion>> planned(const Policy& policy, const std::string& name, size_t n) {
    auto plan = segmentPlan(policy, static_cast<int64_t>(n));
    if (!plan) return makeError("policy '" + name + "': " + plan.message());
    std::vector<LayerRegion> regions;
    for (const CheckpointSegment& s : *plan)
        if (s.checkpointed)
            regions.push_back({static_cast<size_t>(s.begin), static_cast<size_t>(s.end)});
    return regions;
}

std::string regionName(const LayerChain& chain, LayerRegion r) {
    if (r.last - r.first == 1) return chain.layers[r.first].name;
    return chain.layers[r.first].name + "–" + chain.layers[r.last - 1].name;
}

const LayerRun* runIn(const ChainLayer& layer, size_t si) {
    for (const LayerRun& run : layer.runs)
        if (run.step == static_cast<int32_t>(si)) return &run;
    return nullptr;
}

// "Linear (48), LayerNorm (25), Block (12), …": the classes the trace's
// modules have, most common first.
std::string classesOf(const Trace& trace) {
    std::map<std::string, size_t> count;
    for (const Module& m : trace.modules.modules)
        if (!m.type.isNull() && !trace.string(m.type).empty())
            ++count[std::string(trace.string(m.type))];
    std::vector<std::pair<std::string, size_t>> by(count.begin(), count.end());
    std::stable_sort(by.begin(), by.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string out;
    constexpr size_t kShown = 6;
    for (size_t i = 0; i < by.size() && i < kShown; ++i)
        out += (i ? ", " : "") + by[i].first + " (" + std::to_string(by[i].second) + ")";
    if (by.size() > kShown) out += ", …";
    return out;
}

Result<std::vector<CheckpointWindow>> moduleWindows(const WhatIfPolicy& policy,
                                                    const LayerChain& chain, const Trace& trace) {
    const ModuleTable& table = trace.modules;
    std::vector<bool> match(table.modules.size() + 1, false);
    bool any = false;
    for (uint32_t id = 1; id <= table.modules.size(); ++id) {
        const Module& m = table.modules[id - 1];
        match[id] = !m.type.isNull() && trace.string(m.type) == policy.module_type;
        any |= match[id];
    }
    if (!any) {
        const std::string classes = classesOf(trace);
        return makeError("policy '" + policy.name + "': no module of class " + policy.module_type +
                         " in the trace" +
                         (classes.empty()
                              ? std::string(" (it records no module classes; memscope-cli "
                                            "record's hook records them)")
                              : " (its classes: " + classes + ")"));
    }
    // Their forward calls; a call inside another one (a class nested in
    // itself) is part of the outer region, as a checkpoint around the outer
    // call recomputes the inner one.
    std::vector<const ModuleScope*> calls;
    for (const ModuleScope& s : table.scopes)
        if (s.kind == ModuleScopeKind::Forward && s.end > s.start && s.module.value >= 1 &&
            s.module.value <= table.modules.size() && match[s.module.value])
            calls.push_back(&s);
    std::sort(calls.begin(), calls.end(), [](const ModuleScope* a, const ModuleScope* b) {
        return a->start != b->start ? a->start < b->start : a->end > b->end;
    });
    std::vector<const ModuleScope*> outer;
    for (const ModuleScope* s : calls)
        if (outer.empty() || s->start >= outer.back()->end) outer.push_back(s);

    std::vector<CheckpointWindow> windows;
    for (size_t si = 0; si < chain.steps.size(); ++si) {
        const ChainStep& step = chain.steps[si];
        for (const ModuleScope* s : outer) {
            // A call of this step's forward (a recompute is not Forward).
            if (s->start < step.forward_start || s->start >= step.backward_start) continue;
            CheckpointWindow w;
            w.step = si;
            w.forward_start = s->start;
            w.forward_end = std::min(s->end, step.backward_start);
            w.name = modulePath(trace, s->module);
            for (size_t l = 0; l < chain.layers.size(); ++l) {
                const LayerRun* run = runIn(chain.layers[l], si);
                if (run && run->forward_start <= w.forward_start &&
                    w.forward_end <= run->forward_end) {
                    w.block = static_cast<int32_t>(chain.layers[l].index);
                    w.layers = {l, l + 1};
                    break;
                }
            }
            windows.push_back(std::move(w));
        }
    }
    if (windows.empty())
        return makeError("policy '" + policy.name + "': no module of class " + policy.module_type +
                         " ran in a training step's forward");
    return windows;
}

}  // namespace

Result<std::vector<LayerRegion>> layerRegions(const WhatIfPolicy& policy, const LayerChain& chain) {
    const size_t n = chain.layers.size();
    auto tooMany = [&](std::string_view what) {
        return makeError("policy '" + policy.name + "': " + std::string(what) + " " +
                         std::to_string(policy.count) + " needs at least that many layers; " +
                         chainCount(n));
    };
    std::vector<LayerRegion> regions;
    switch (policy.plan) {
        case RegionPlan::Chain: {
            if (policy.policy.recompute == Recompute::None) return regions;
            // A selective recomputation that keeps ops (an mlp's) checkpoints each block.
            Policy plan_policy = policy.policy;
            if (plan_policy.recompute == Recompute::Selective)
                plan_policy.recompute = Recompute::Block;
            return planned(plan_policy, policy.name, n);
        }
        case RegionPlan::Layers:
            return listedLayers(policy, chain);
        case RegionPlan::Sequential: {
            // torch.utils.checkpoint.checkpoint_sequential (1.13 and 2.x):
            // segment_size = L // K; [0, s), [s, 2s), … up to s*(K-1)
            // checkpointed, the rest run normally: segmentPlan's Segments.
            if (static_cast<size_t>(policy.count) > n) return tooMany("K =");
            Policy p{Recompute::Segments, false, static_cast<int>(policy.count)};
            return planned(p, policy.name, n);
        }
        case RegionPlan::Every:
            // torchtitan counts the layers it wraps from 1 and wraps when the
            // count is a multiple of N: 0-based layers N-1, 2N-1, …
            if (static_cast<size_t>(policy.count) > n) return tooMany("N =");
            for (size_t i = 0; i < n; ++i)
                if ((i + 1) % static_cast<size_t>(policy.count) == 0) regions.push_back({i, i + 1});
            return regions;
        case RegionPlan::Uniform:
            if (static_cast<size_t>(policy.count) > n) return tooMany("N =");
            for (size_t i = 0; i < n; i += static_cast<size_t>(policy.count))
                regions.push_back({i, std::min(n, i + static_cast<size_t>(policy.count))});
            return regions;
        case RegionPlan::First:
            if (static_cast<size_t>(policy.count) > n) return tooMany("N =");
            for (size_t i = 0; i < static_cast<size_t>(policy.count); ++i)
                regions.push_back({i, i + 1});
            return regions;
        case RegionPlan::Module:
            return regions;
    }
    return regions;
}

Result<std::vector<CheckpointWindow>> checkpointWindows(const WhatIfPolicy& policy,
                                                        const LayerChain& chain,
                                                        const Trace& trace) {
    if (policy.plan == RegionPlan::Module) return moduleWindows(policy, chain, trace);
    auto regions = layerRegions(policy, chain);
    if (!regions) return regions.error();
    std::vector<CheckpointWindow> windows;
    for (size_t si = 0; si < chain.steps.size(); ++si)
        for (const LayerRegion& r : *regions) {
            const LayerRun* first = runIn(chain.layers[r.first], si);
            const LayerRun* last = runIn(chain.layers[r.last - 1], si);
            if (!first || !last) continue;
            windows.push_back({si, first->forward_start, last->forward_end, regionName(chain, r),
                               static_cast<int32_t>(chain.layers[r.first].index), r});
        }
    return windows;
}

}  // namespace memscope
