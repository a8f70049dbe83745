#include "memscope/whatif/policy_modules.h"

#include <algorithm>
#include <map>

#include "memscope/whatif/checkpoint_regions.h"
#include "memscope/whatif/op_index.h"
#include "policy_simulator.h"

namespace memscope {
namespace {

// The device whose layers the policy names: the one with the most
// allocations (a job's GPU, or the host on a CPU run).
int16_t busiestDevice(const Trace& trace) {
    std::map<int16_t, size_t> allocations;
    for (const Event& e : trace.events)
        if (e.kind == EventKind::Alloc) ++allocations[e.device];
    int16_t best = 0;
    size_t most = 0;
    for (const auto& [device, n] : allocations)
        if (n > most) best = device, most = n;
    return best;
}

CheckpointedModule moduleOf(const Trace& trace, ModuleId id) {
    CheckpointedModule m;
    if (const Module* mod = trace.modules.module(id)) {
        m.root = std::string(trace.string(mod->root));
        m.path = std::string(trace.string(mod->path));
        m.type = mod->type.isNull() ? std::string() : std::string(trace.string(mod->type));
    }
    return m;
}

// sequential:K: the container the chain's layers are the children of.
Result<SequentialCheckpoint> sequentialOf(const WhatIfPolicy& policy, const LayerChain& chain,
                                          const Trace& trace) {
    const Module* first = trace.modules.module(chain.layers.front().module);
    const ModuleId parent = first ? first->parent : ModuleId();
    const bool siblings =
        std::all_of(chain.layers.begin(), chain.layers.end(), [&](const ChainLayer& l) {
            const Module* m = trace.modules.module(l.module);
            return m && m->parent == parent;
        });
    const Module* container = trace.modules.module(parent);
    if (!siblings || !container)
        return makeError("policy '" + policy.name +
                         "': the layers are not the children of one container, so there is no "
                         "nn.Sequential to run under checkpoint_sequential; use layers:LIST or "
                         "every:N instead");
    const std::string type =
        container->type.isNull() ? std::string() : std::string(trace.string(container->type));
    // A ModuleList has no forward to replace: checkpoint_sequential needs
    // the container to be what the model calls.
    if (type != "Sequential")
        return makeError(
            "policy '" + policy.name + "': the layers' container " +
            std::string(trace.string(container->path)) + " is " +
            (type.empty() ? std::string("of a class the trace does not record") : "a " + type) +
            ", not an nn.Sequential the model calls, which checkpoint_sequential "
            "needs; use layers:LIST or every:N instead");
    return SequentialCheckpoint{std::string(trace.string(container->root)),
                                std::string(trace.string(container->path)), type, policy.count};
}

// module:CLASS: every module of that class that ran as the outermost of its
// class in a training step's forward.
Result<std::vector<CheckpointedModule>> classModules(const WhatIfPolicy& policy,
                                                     const LayerChain& chain, const Trace& trace) {
    auto windows = checkpointWindows(policy, chain, trace);
    if (!windows) return windows.error();
    // The windows by start: a scope is one of them when it starts there under its name.
    std::multimap<int64_t, const CheckpointWindow*> by_start;
    for (const CheckpointWindow& w : *windows) by_start.emplace(w.forward_start, &w);
    std::vector<CheckpointedModule> out;
    for (const ModuleScope& s : trace.modules.scopes) {
        if (s.kind != ModuleScopeKind::Forward) continue;
        const auto [first, last] = by_start.equal_range(s.start);
        const bool checkpointed = std::any_of(first, last, [&](const auto& w) {
            return w.second->name == modulePath(trace, s.module);
        });
        if (!checkpointed) continue;
        CheckpointedModule m = moduleOf(trace, s.module);
        if (std::none_of(out.begin(), out.end(), [&](const CheckpointedModule& o) {
                return o.root == m.root && o.path == m.path;
            }))
            out.push_back(std::move(m));
    }
    return out;
}

}  // namespace

std::vector<std::string> saveListOps(const Policy& policy) {
    std::vector<std::string> ops;
    for (SaveOp kind : {kSaveMatmul, kSaveAttention})
        if (policy.save_ops & kind)
            for (std::string_view name : atenNamesOfKind(kind)) ops.emplace_back(name);
    for (const std::string& name : policy.save_op_names)
        if (std::find(ops.begin(), ops.end(), name) == ops.end()) ops.push_back(name);
    return ops;
}

Result<PolicyModules> policyModules(const WhatIfPolicy& policy, const Trace& measured,
                                    CheckpointStyle style) {
    PolicyModules out;
    out.policy = policy.name;
    out.optimizer_in_backward = policy.policy.optimizer_in_backward;
    out.reentrant =
        detail::resolveCheckpointStyle(measured, policy, style) == CheckpointStyle::Reentrant;
    const bool recomputes =
        policy.policy.recompute != Recompute::None || policy.plan != RegionPlan::Chain;
    if (!recomputes && !policy.policy.optimizer_in_backward)
        return makeError("policy '" + policy.name +
                         "' changes nothing (every activation kept, the optimizer after "
                         "backward): there is nothing to apply");
    if (!recomputes) return out;  // opt-in-bwd alone
    if (policy.policy.recompute == Recompute::Selective)
        return makeError("policy '" + policy.name +
                         "' recomputes each layer's attention core, which is no module the hook "
                         "can wrap; apply save:OPS (a selective-checkpoint policy) or "
                         "module:CLASS of the attention module instead");
    auto chain = findLayerChain(measured, busiestDevice(measured));
    if (!chain && policy.plan != RegionPlan::Module)
        return makeError("policy '" + policy.name + "': " + chain.message());
    const LayerChain none;
    const LayerChain& layers = chain ? *chain : none;
    if (policy.plan == RegionPlan::Module) {
        auto modules = classModules(policy, layers, measured);
        if (!modules) return modules.error();
        out.modules = std::move(*modules);
        return out;
    }
    if (policy.plan == RegionPlan::Sequential) {
        if (static_cast<size_t>(policy.count) > layers.layers.size())
            return makeError("policy '" + policy.name + "': K is above the chain's " +
                             std::to_string(layers.layers.size()) + " layers");
        auto seq = sequentialOf(policy, layers, measured);
        if (!seq) return seq.error();
        out.sequential = std::move(*seq);
        out.reentrant = true;  // checkpoint_sequential is reentrant (1.13; 2.x's default)
        return out;
    }
    auto regions = layerRegions(policy, layers);
    if (!regions) return regions.error();
    const std::vector<std::string> save = saveListOps(policy.policy);
    for (const LayerRegion& r : *regions) {
        if (r.last - r.first != 1)
            return makeError("policy '" + policy.name + "' checkpoints " +
                             layers.layers[r.first].name + " to " + layers.layers[r.last - 1].name +
                             " as one region, which no single module's forward covers; apply it "
                             "as sequential:K on an nn.Sequential, or pick layers:LIST, block, "
                             "every:N or first:N");
        const ChainLayer& layer = layers.layers[r.first];
        CheckpointedModule m = moduleOf(measured, layer.module);
        if (savesOpsIn(policy, layer.index)) m.save_ops = save;
        out.modules.push_back(std::move(m));
    }
    return out;
}

}  // namespace memscope
