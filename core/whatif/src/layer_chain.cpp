#include "memscope/whatif/layer_chain.h"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string_view>
#include <tuple>

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

// A candidate chain: module ids, and whether it joins several groups (then
// its order is the forward order and its indices are positions).
struct Candidate {
    std::vector<uint32_t> ids;
    bool joined = false;
};

// The groups of numbered siblings, and the candidate chains they make
// beyond a group alone: stages of blocks, and stacks side by side.
class ChainCandidates {
public:
    ChainCandidates(const Trace& trace, const std::vector<std::vector<const ModuleScope*>>& forward,
                    const std::vector<int64_t>& number,
                    const std::map<GroupKey, std::vector<uint32_t>>& groups)
        : trace_(trace), number_(number) {
        const size_t n = trace.modules.modules.size();
        member_of_.assign(n + 1, kNone);
        children_.assign(n + 1, 0);
        for (uint32_t id = 1; id <= n; ++id) ++children_[parentOf(id)];
        for (const auto& [key, ids] : groups) {
            Group g{key, {}, ids.size(), false, {}};
            for (uint32_t id : ids)
                if (!forward[id].empty()) g.ran.push_back(id);
            std::stable_sort(g.ran.begin(), g.ran.end(),
                             [&](uint32_t a, uint32_t b) { return number_[a] < number_[b]; });
            for (uint32_t id : g.ran) member_of_[id] = groups_.size();
            groups_.push_back(std::move(g));
        }
        // Each group that ran, under the members of the groups above it.
        for (size_t ci = 0; ci < groups_.size(); ++ci) {
            if (groups_[ci].ran.empty()) continue;
            for (uint32_t a = groups_[ci].key.parent; a != 0; a = parentOf(a))
                if (member_of_[a] != kNone && member_of_[a] != ci)
                    groups_[member_of_[a]].inner.push_back({ci, a});
        }
    }

    // The candidates: single groups first (ties keep the first, as before).
    std::vector<Candidate> candidates() {
        std::vector<Candidate> stages = outerGroups();
        std::vector<Candidate> out;
        for (const Group& g : groups_)
            if (!g.removed) out.push_back({g.ran, false});
        out.insert(out.end(), stages.begin(), stages.end());
        for (Candidate& c : parallelStacks()) out.push_back(std::move(c));
        return out;
    }

private:
    static constexpr size_t kNone = SIZE_MAX;
    struct Inner {
        size_t group = 0;     // a group beneath
        uint32_t member = 0;  // the member it lies in
    };
    struct Group {
        GroupKey key;
        std::vector<uint32_t> ran;  // members that ran, by number
        size_t size = 0;            // members, run or not
        bool removed = false;
        std::vector<Inner> inner;
    };
    const Trace& trace_;
    const std::vector<int64_t>& number_;
    std::vector<Group> groups_;
    std::vector<size_t> member_of_;  // the group a module that ran is a member of
    std::vector<uint32_t> children_;

    uint32_t parentOf(uint32_t id) const {
        const Module* m = trace_.modules.module(ModuleId(id));
        // Parents are earlier modules (ModuleTable::add), so walks up end.
        return m && m->parent.value < id ? m->parent.value : 0;
    }
    uint16_t depthOf(uint32_t id) const {
        const Module* m = trace_.modules.module(ModuleId(id));
        return m ? m->depth : 0;
    }
    std::string_view pathOf(uint32_t id) const {
        const Module* m = trace_.modules.module(ModuleId(id));
        return m ? trace_.string(m->path) : std::string_view();
    }

    // From the outermost groups in:
    //  - a group whose members are all pure stages of blocks (a ResNet's
    //    layer1 … layer4, each a Sequential of numbered blocks and nothing
    //    else): one candidate of every stage's blocks, in forward order,
    //    instead of the stages or one stage's blocks;
    //  - a group at least half of whose members (2 or more) hold a group
    //    at the same place (a Sequential(stem, stage1, stage2, …) body's
    //    stages, transformer layers' experts): the groups held are parts of
    //    its members, no chain of their own.
    std::vector<Candidate> outerGroups() {
        std::vector<size_t> order(groups_.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
            return depthOf(groups_[a].key.parent) < depthOf(groups_[b].key.parent);
        });
        std::vector<Candidate> out;
        for (size_t gi : order) {
            Group& g = groups_[gi];
            if (g.removed || g.ran.size() < 2) continue;
            std::vector<size_t> stages;
            for (uint32_t m : g.ran) {
                size_t found = 0, at = 0;
                for (const Inner& in : g.inner)
                    if (in.member == m && groups_[in.group].key.parent == m) ++found, at = in.group;
                if (found == 1 && groups_[at].size == children_[m] &&
                    (stages.empty() || groups_[at].key.stem == groups_[stages.front()].key.stem))
                    stages.push_back(at);
            }
            size_t blocks = 0;
            for (size_t ci : stages) blocks += groups_[ci].ran.size();
            // Stages of one block each add nothing (an inferred frame under
            // each layer): the group itself stays the candidate.
            if (stages.size() == g.ran.size() && blocks > stages.size()) {
                Candidate c{{}, true};
                for (size_t ci : stages) {
                    c.ids.insert(c.ids.end(), groups_[ci].ran.begin(), groups_[ci].ran.end());
                    groups_[ci].removed = true;
                }
                g.removed = true;
                out.push_back(std::move(c));
                continue;
            }
            // Groups beneath, by where they lie in a member and their stem.
            std::map<std::pair<std::string, std::string>, std::vector<Inner>> places;
            for (const Inner& in : g.inner) {
                std::string_view at = pathOf(groups_[in.group].key.parent);
                at.remove_prefix(std::min(at.size(), pathOf(in.member).size()));
                places[{std::string(at), groups_[in.group].key.stem}].push_back(in);
            }
            for (const auto& [place, inners] : places) {
                std::vector<uint32_t> holders;
                for (const Inner& in : inners) holders.push_back(in.member);
                std::sort(holders.begin(), holders.end());
                const size_t held = static_cast<size_t>(
                    std::unique(holders.begin(), holders.end()) - holders.begin());
                if (held >= 2 && held * 2 >= g.ran.size())
                    for (const Inner& in : inners) groups_[in.group].removed = true;
            }
        }
        return out;
    }

    // Stacks of the same kind side by side (an encoder's and a decoder's
    // "layers", T5's "block"s): groups of one root and stem whose parents
    // have the same last name and lie in no numbered module. One chain, in
    // forward order, each layer keeping its full name.
    std::vector<Candidate> parallelStacks() const {
        std::map<std::tuple<uint32_t, std::string, std::string>, std::vector<size_t>> stacks;
        for (size_t gi = 0; gi < groups_.size(); ++gi) {
            const Group& g = groups_[gi];
            if (g.removed || g.ran.empty() || g.key.parent == 0) continue;
            bool nested = false;
            for (uint32_t m = g.key.parent; m != 0 && !nested; m = parentOf(m))
                nested = number_[m] >= 0;
            if (nested) continue;
            const std::string last(lastPathComponent(pathOf(g.key.parent)));
            stacks[{g.key.root, g.key.stem, last}].push_back(gi);
        }
        std::vector<Candidate> out;
        for (const auto& [key, members] : stacks) {
            if (members.size() < 2) continue;
            Candidate c{{}, true};
            for (size_t gi : members)
                c.ids.insert(c.ids.end(), groups_[gi].ran.begin(), groups_[gi].ran.end());
            out.push_back(std::move(c));
        }
        return out;
    }
};

// Layers whose spans overlap in a step's forward: a layer called more than
// once around others (a weight-shared layer) is taken as one span from its
// first call to its last, which then covers the others.
void noteOverlaps(LayerChain& chain) {
    for (size_t si = 0; si < chain.steps.size(); ++si) {
        std::vector<std::pair<const LayerRun*, const ChainLayer*>> runs;
        for (const ChainLayer& l : chain.layers)
            for (const LayerRun& r : l.runs)
                if (r.step == static_cast<int32_t>(si)) runs.emplace_back(&r, &l);
        std::sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) {
            return a.first->forward_start < b.first->forward_start;
        });
        for (size_t i = 1; i < runs.size(); ++i)
            if (runs[i].first->forward_start < runs[i - 1].first->forward_end) {
                chain.assumptions.push_back(
                    "layers " + runs[i - 1].second->name + " and " + runs[i].second->name +
                    " overlap in a step's forward (a layer called more than once around others, "
                    "e.g. shared weights): each is checkpointed over its whole span, and what "
                    "they share is replayed by both");
                return;
            }
    }
}

// The earliest forward start of a module.
int64_t firstForward(const std::vector<const ModuleScope*>& scopes) {
    int64_t first = INT64_MAX;
    for (const ModuleScope* s : scopes) first = std::min(first, s->start);
    return first;
}

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

    // The chain: the candidate with the most members that ran (ties: the first).
    ChainCandidates found(trace, forward, number, groups);
    const std::vector<Candidate> candidates = found.candidates();
    const Candidate* best = nullptr;
    for (const Candidate& c : candidates)
        if (!best || c.ids.size() > best->ids.size()) best = &c;
    if (!best || best->ids.size() < 2) {
        // One module called again and again (shared weights) is no chain of
        // layers: more forward calls than the trace has steps.
        const size_t steps = std::max<size_t>(1, stepBounds(trace, device).size());
        for (const Candidate& c : candidates)
            if (c.ids.size() == 1 && forward[c.ids.front()].size() > steps)
                return makeError(
                    "the only repeated layer, " + modulePath(trace, ModuleId(c.ids.front())) +
                    ", is one module with " + std::to_string(forward[c.ids.front()].size()) +
                    " forward calls (shared weights?): layer policies need a chain of distinct "
                    "modules; module:CLASS checkpoints each call");
        return makeError(
            "no chain of repeated layers in the trace's modules (modules named like h.0, h.1, … "
            "or block 0, block 1, … of one parent, each run in forward): nothing to checkpoint");
    }

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

    std::vector<uint32_t> ids = best->ids;
    if (best->joined)
        std::stable_sort(ids.begin(), ids.end(), [&](uint32_t a, uint32_t b) {
            return firstForward(forward[a]) < firstForward(forward[b]);
        });
    for (uint32_t id : ids) {
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
    if (best->joined) {
        // Layers of several groups share numbers ("layer1.0", "layer2.0"):
        // their index for layers:LIST is their position in forward order.
        for (size_t i = 0; i < chain.layers.size(); ++i)
            chain.layers[i].index = static_cast<int64_t>(i);
        chain.indices_are_positions = true;
        chain.assumptions.push_back(
            "the layers are " + std::to_string(chain.layers.size()) +
            " modules of several numbered groups (" + chain.layers.front().name + " … " +
            chain.layers.back().name +
            "), in forward order; layers:LIST numbers them by that order from 0");
    } else {
        std::stable_sort(
            chain.layers.begin(), chain.layers.end(),
            [](const ChainLayer& a, const ChainLayer& b) { return a.index < b.index; });
    }
    noteOverlaps(chain);
    if (chain.layers.size() < 2)
        return makeError("fewer than 2 of the trace's layers ran in a training step's forward");
    return chain;
}

}  // namespace memscope
