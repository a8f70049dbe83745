#include "memscope/inference/module_inference.h"

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "block_modules.h"
#include "module_levels.h"
#include "module_walk.h"

namespace memscope {
namespace {

using detail::kNoLevel;
using detail::LevelNode;
using detail::ModuleLevels;
using detail::StackLevels;

constexpr uint32_t kNoInstance = UINT32_MAX;
// Instances (layer k of a class under one parent) kept at most: a loop of a
// million calls in one forward must not make a million modules.
constexpr size_t kMaxInstances = size_t(1) << 16;
// Bytes of a function or file name shown in a path component.
constexpr size_t kMaxNamePart = 64;

struct Instance {
    uint32_t parent = kNoInstance;
    uint32_t node = kNoLevel;
    uint32_t number = 0;
};

// One running call of a level: an instance, where its callee was at the last
// allocation, and the allocations' times.
struct Call {
    uint32_t node = kNoLevel;
    uint32_t instance = kNoInstance;
    uint32_t line = 0;
    int64_t first = 0, last = 0;
    ModuleScopeKind kind = ModuleScopeKind::Forward;
    std::unordered_map<uint32_t, uint32_t> calls_of;  // child node -> calls so far
};

struct RawScope {
    int64_t start, end;
    uint32_t instance;
    ModuleScopeKind kind;
};

class FrameWalk {
public:
    explicit FrameWalk(const Trace& trace) : trace_(trace), levels_(trace) {}

    void run(const TaskContext& ctx) {
        std::vector<uint64_t> allocs;
        for (uint64_t i = 0; i < trace_.events.size(); ++i)
            if (trace_.events[i].kind == EventKind::Alloc && !trace_.events[i].stack.isNull())
                allocs.push_back(i);
        auto earlier = [&](uint64_t a, uint64_t b) {
            return trace_.events[a].time < trace_.events[b].time;
        };
        // One device's events are in time order already: checking is a pass,
        // sorting 1.5 M allocations was a fifth of inference.
        if (!std::is_sorted(allocs.begin(), allocs.end(), earlier))
            std::stable_sort(allocs.begin(), allocs.end(), earlier);
        for (size_t k = 0; k < allocs.size(); ++k) {
            if ((k & 0xfff) == 0 && ctx.cancelled()) return;
            const Event& e = trace_.events[allocs[k]];
            step(open_[e.device], levels_.of(e.stack), e.time);
        }
        for (auto& [device, open] : open_) close(open, 0);
    }

    const std::vector<Instance>& instances() const { return instances_; }
    const std::vector<RawScope>& scopes() const { return scopes_; }
    const std::vector<LevelNode>& nodes() const { return levels_.nodes(); }
    bool capped() const { return levels_.capped() || instances_capped_; }

private:
    void close(std::vector<Call>& open, size_t from) {
        while (open.size() > from) {
            const Call& c = open.back();
            scopes_.push_back({c.first, c.last + 1, c.instance, c.kind});
            open.pop_back();
        }
    }

    uint32_t instance(uint32_t parent, uint32_t node, uint32_t number) {
        const Key key{parent, node, number};
        if (auto it = ids_.find(key); it != ids_.end()) return it->second;
        if (instances_.size() >= kMaxInstances) {
            instances_capped_ = true;
            return kNoInstance;
        }
        const auto id = uint32_t(instances_.size());
        instances_.push_back({parent, node, number});
        ids_.emplace(key, id);
        return id;
    }

    // The instance a new call of `node` is: below the innermost open call,
    // numbered by that call's calls of the node so far.
    uint32_t enter(std::vector<Call>& open, uint32_t node, ModuleScopeKind kind) {
        if (!open.empty()) {
            Call& parent = open.back();
            return instance(parent.instance, node, parent.calls_of[node]++);
        }
        Forward& f = forward_[node];
        if (kind == ModuleScopeKind::Recompute) {
            // Backward recomputes the last layer first: the j-th recompute
            // of a class is its (n-1-j)-th forward call of n.
            const uint32_t j = f.recomputed++;
            const uint32_t number = f.count > j ? f.count - 1 - j : j;
            return instance(f.parent, node, number);
        }
        return instance(kNoInstance, node, 0);  // an outermost module: one whatever its calls
    }

    void step(std::vector<Call>& open, const StackLevels& stack, int64_t time) {
        const ModuleScopeKind kind =
            stack.recompute ? ModuleScopeKind::Recompute : ModuleScopeKind::Forward;
        size_t depth = 0;
        for (; depth < stack.levels.size(); ++depth) {
            const auto& level = stack.levels[depth];
            if (depth < open.size()) {
                Call& c = open[depth];
                if (c.node == level.node && c.kind == kind && level.line >= c.line) {
                    c.line = level.line;
                    c.last = time;
                    continue;
                }
                close(open, depth);
            }
            const uint32_t id = enter(open, level.node, kind);
            if (id == kNoInstance) break;
            const Instance& inst = instances_[id];
            if (kind == ModuleScopeKind::Forward && inst.parent != kNoInstance) {
                Forward& f = forward_[level.node];
                if (inst.number == 0) f.recomputed = 0;  // a new parent call: its own recompute
                f.count = inst.number + 1;
                f.parent = inst.parent;
            }
            Call c;
            c.node = level.node;
            c.instance = id;
            c.line = level.line;
            c.first = c.last = time;
            c.kind = kind;
            open.push_back(std::move(c));
        }
        // Calls deeper than this allocation's have returned.
        close(open, depth);
    }

    struct Key {
        uint32_t parent, node, number;
        bool operator==(const Key&) const = default;
    };
    struct KeyHash {
        size_t operator()(const Key& k) const {
            uint64_t h = (uint64_t(k.parent) << 32 | k.node) * 0x9E3779B97F4A7C15ull;
            return size_t((h ^ (h >> 31)) + k.number * 0xC2B2AE3D27D4EB4Full);
        }
    };
    // A class's last forward parent call: how many instances it had, under
    // which parent, and how many of them were recomputed since.
    struct Forward {
        uint32_t count = 0;
        uint32_t parent = kNoInstance;
        uint32_t recomputed = 0;
    };

    const Trace& trace_;
    ModuleLevels levels_;
    std::unordered_map<int16_t, std::vector<Call>> open_;  // per device: its thread's calls
    std::vector<Instance> instances_;
    std::unordered_map<Key, uint32_t, KeyHash> ids_;
    std::unordered_map<uint32_t, Forward> forward_;
    std::vector<RawScope> scopes_;
    bool instances_capped_ = false;
};

// At most `max` bytes, not cutting a UTF-8 sequence.
std::string_view cut(std::string_view s, size_t max) {
    if (s.size() <= max) return s;
    while (max > 0 && (static_cast<unsigned char>(s[max]) & 0xC0) == 0x80) --max;
    return s.substr(0, max);
}

std::string_view baseName(std::string_view file) {
    const size_t slash = file.find_last_of("/\\");
    return slash == std::string_view::npos ? file : file.substr(slash + 1);
}

// A part of a dotted module path: no dots inside ("model.py" reads "model").
std::string pathPart(std::string_view s) {
    if (s.ends_with(".py")) s.remove_suffix(3);
    std::string out(cut(s, kMaxNamePart));
    std::replace(out.begin(), out.end(), '.', '_');
    return out;
}

// Names of the level nodes, unique among the children of one parent.
class Names {
public:
    Names(const Trace& trace, const std::vector<LevelNode>& nodes) {
        component_.resize(nodes.size());
        type_.resize(nodes.size());
        std::unordered_map<uint32_t, std::unordered_set<std::string>> taken;  // parent -> names
        for (size_t i = 0; i < nodes.size(); ++i) {
            const LevelNode& n = nodes[i];
            const std::string fn(cut(trace.string(n.callee_function), kMaxNamePart));
            const std::string_view file = trace.string(n.callee_file);
            const std::string line = n.min_line == UINT32_MAX ? "?" : std::to_string(n.min_line);
            type_[i] = (fn.empty() ? std::string("??") : fn) + ", " +
                       std::string(cut(baseName(file), kMaxNamePart)) + ":" + line;
            std::string name =
                pathPart(fn.empty() ? "??" : fn) + "@" + pathPart(baseName(file)) + ":" + line;
            auto& used = taken[n.parent];
            if (used.count(name)) name += " from " + site(trace, n.call_site);
            for (int k = 2; used.count(name); ++k) name += "~" + std::to_string(k);
            used.insert(name);
            component_[i] = std::move(name);
        }
    }
    const std::string& component(uint32_t node) const { return component_[node]; }
    const std::string& type(uint32_t node) const { return type_[node]; }

private:
    static std::string site(const Trace& trace, uint32_t call_site) {
        if (call_site == detail::kCheckpointSite) return "checkpoint";
        if (call_site == 0 || call_site > trace.frames().size()) return "?";
        const Frame& f = trace.frame(FrameId(call_site));
        return pathPart(baseName(trace.string(f.file))) + ":" + std::to_string(f.line);
    }
    std::vector<std::string> component_, type_;
};

size_t countLayers(const Trace& trace, const std::vector<ModuleScope>& scopes) {
    std::unordered_set<uint32_t> layers;
    for (const ModuleScope& s : scopes) layers.insert(layerOf(trace, s.module).value);
    return layers.size();
}

// The scopes of a finished walk over `trace`'s frames, written into it.
ModuleInferenceReport fromWalk(Trace& trace, const FrameWalk& walk, const TaskContext& ctx) {
    ModuleInferenceReport report;
    report.capped = walk.capped();
    if (ctx.cancelled() || walk.scopes().empty()) return report;

    const std::vector<Instance>& instances = walk.instances();
    // A class is numbered where some parent call entered it more than once.
    std::vector<uint8_t> numbered(walk.nodes().size(), 0);
    for (const Instance& i : instances)
        if (i.number > 0) numbered[i.node] = 1;
    const Names names(trace, walk.nodes());
    ModuleInterner interner(trace);
    std::vector<ModuleId> module_of(instances.size());
    std::vector<uint32_t> chain;
    for (uint32_t id = 0; id < instances.size(); ++id) {
        // Outermost first; instances' parents come before them.
        chain.clear();
        for (uint32_t at = id; at != kNoInstance && chain.size() <= detail::kMaxModuleLevels;
             at = instances[at].parent)
            chain.push_back(at);
        std::reverse(chain.begin(), chain.end());
        const std::string& root = names.component(instances[chain.front()].node);
        std::string path;
        for (size_t k = 1; k < chain.size(); ++k) {
            const Instance& i = instances[chain[k]];
            if (!path.empty()) path += '.';
            path += names.component(i.node);
            if (numbered[i.node]) path += "." + std::to_string(i.number);
        }
        module_of[id] = interner.intern(root, path, names.type(instances[id].node));
    }
    std::vector<ModuleScope>& scopes = trace.modules.scopes;
    for (const RawScope& s : walk.scopes())
        scopes.push_back({s.start, s.end, module_of[s.instance], s.kind});
    trace.modules.source = ModuleSource::Inferred;
    ModuleInferenceReport out = countModules(trace);
    out.capped = report.capped;
    return out;
}

}  // namespace

ModuleInferenceReport countModules(const Trace& trace) {
    ModuleInferenceReport report;
    report.source = trace.modules.source;
    report.scopes = trace.modules.scopes.size();
    std::unordered_set<uint32_t> modules;
    for (const ModuleScope& s : trace.modules.scopes) modules.insert(s.module.value);
    report.modules = modules.size();
    report.layers = countLayers(trace, trace.modules.scopes);
    return report;
}

ModuleInferenceReport inferModules(Trace& trace, const TaskContext& ctx) {
    if (trace.modules.source != ModuleSource::None || !trace.modules.empty())
        return countModules(trace);
    if (detail::modulesFromBlockPhases(trace)) return countModules(trace);
    FrameWalk walk(trace);
    walk.run(ctx);
    return fromWalk(trace, walk, ctx);
}

namespace detail {

bool modulesNeedFrameWalk(const Trace& trace) {
    return trace.modules.source == ModuleSource::None && trace.modules.empty() &&
           !hasBlockPhases(trace);
}

struct ModuleFrameWalk::Impl {
    explicit Impl(const Trace& trace) : walk(trace) {}
    FrameWalk walk;
};

ModuleFrameWalk::ModuleFrameWalk(const Trace& trace) : impl_(std::make_unique<Impl>(trace)) {}
ModuleFrameWalk::~ModuleFrameWalk() = default;

void ModuleFrameWalk::run(const TaskContext& ctx) {
    impl_->walk.run(ctx);
}

ModuleInferenceReport ModuleFrameWalk::apply(Trace& trace, const TaskContext& ctx) {
    return fromWalk(trace, impl_->walk, ctx);
}

}  // namespace detail

}  // namespace memscope
