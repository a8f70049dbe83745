#include "memscope/whatif/layer_chain.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <string_view>

#include "memscope/model/phases.h"

namespace memscope {
namespace {

// "h.3" -> ("h.", 3); "block 12" -> ("block ", 12); no trailing number -> nullopt.
struct NumberedName {
    std::string_view stem;  // the name without its number
    int64_t index = 0;
};
std::optional<NumberedName> numberedName(std::string_view last) {
    size_t digits = 0;
    while (digits < last.size() && digits < 9 &&
           std::isdigit(static_cast<unsigned char>(last[last.size() - 1 - digits])))
        ++digits;
    if (digits == 0) return std::nullopt;
    NumberedName n;
    n.stem = last.substr(0, last.size() - digits);
    std::from_chars(last.data() + last.size() - digits, last.data() + last.size(), n.index);
    return n;
}

// Sibling modules that differ only in their number: one candidate chain.
struct GroupKey {
    uint32_t parent = 0;
    uint32_t root = 0;
    std::string stem;
    bool operator<(const GroupKey& o) const {
        return std::tie(parent, root, stem) < std::tie(o.parent, o.root, o.stem);
    }
};

}  // namespace

Result<LayerChain> findLayerChain(const Trace& trace, int16_t device) {
    const ModuleTable& table = trace.modules;
    if (table.empty() || table.source == ModuleSource::None)
        return makeError(
            "the trace has no modules (record with `memscope-cli record`, whose hook records "
            "them, or a snapshot with Python frames): no layers to checkpoint");

    std::map<GroupKey, std::vector<uint32_t>> groups;  // -> module ids
    std::vector<int64_t> number(table.modules.size() + 1, -1);
    for (uint32_t id = 1; id <= table.modules.size(); ++id) {
        const Module& m = table.modules[id - 1];
        const std::string_view last = lastPathComponent(trace.string(m.path));
        const auto n = numberedName(last);
        if (!n || m.path.isNull()) continue;
        number[id] = n->index;
        groups[{m.parent.value, m.root.value, std::string(n->stem)}].push_back(id);
    }

    // Forward scopes per module: which modules ran, and when.
    std::vector<std::vector<const ModuleScope*>> forward(table.modules.size() + 1);
    for (const ModuleScope& s : table.scopes)
        if (s.kind == ModuleScopeKind::Forward && s.module.value >= 1 &&
            s.module.value <= table.modules.size() && s.end > s.start)
            forward[s.module.value].push_back(&s);

    // The chain: the group with the most members that ran (ties: the first).
    const std::vector<uint32_t>* best = nullptr;
    size_t best_count = 0;
    for (const auto& [key, ids] : groups) {
        const size_t ran = static_cast<size_t>(std::count_if(
            ids.begin(), ids.end(), [&](uint32_t id) { return !forward[id].empty(); }));
        if (ran > best_count) best = &ids, best_count = ran;
    }
    if (!best || best_count < 2)
        return makeError(
            "no chain of repeated layers in the trace's modules (modules named like h.0, h.1, … "
            "or block 0, block 1, … of one parent, each run in forward): nothing to checkpoint");

    LayerChain chain;
    chain.device = device;
    chain.source = table.source;
    for (const StepBounds& b : stepBounds(trace, device)) {
        if (!b.forward_start || !b.backward_start || !b.backward_end) continue;
        chain.steps.push_back(
            {b.start, b.end, *b.forward_start, *b.backward_start, *b.backward_end});
    }
    if (chain.steps.empty())
        return makeError(
            "no training step with both a forward and a backward phase (recorded or inferred): "
            "a prediction replays layers between their forward and their backward");

    for (uint32_t id : *best) {
        if (forward[id].empty()) continue;
        ChainLayer layer;
        layer.module = ModuleId(id);
        layer.name = modulePath(trace, layer.module);
        layer.index = number[id];
        bool merged = false;
        for (size_t si = 0; si < chain.steps.size(); ++si) {
            const ChainStep& step = chain.steps[si];
            LayerRun run{static_cast<int32_t>(si), 0, 0};
            int calls = 0;
            for (const ModuleScope* s : forward[id]) {
                // A forward scope of this step's forward (a recompute is not Forward).
                if (s->start < step.forward_start || s->start >= step.backward_start) continue;
                run.forward_start = calls == 0 ? s->start : std::min(run.forward_start, s->start);
                run.forward_end = calls == 0 ? s->end : std::max(run.forward_end, s->end);
                ++calls;
            }
            merged |= calls > 1;
            if (calls > 0) layer.runs.push_back(run);
        }
        if (merged)
            chain.assumptions.push_back("layer " + layer.name +
                                        " ran more than once in a step's forward: its calls are "
                                        "taken as one span, from the first call's start to the "
                                        "last one's end");
        if (!layer.runs.empty()) chain.layers.push_back(std::move(layer));
    }
    std::stable_sort(chain.layers.begin(), chain.layers.end(),
                     [](const ChainLayer& a, const ChainLayer& b) { return a.index < b.index; });
    if (chain.layers.size() < 2)
        return makeError("fewer than 2 of the trace's layers ran in a training step's forward");
    return chain;
}

}  // namespace memscope
