#include "memscope/model/module_scopes.h"

#include <algorithm>
#include <unordered_map>

#include "memscope/model/module_bounds.h"
#include "memscope/model/trace.h"

namespace memscope {
namespace {

// Bounded walks: a corrupt parent chain must not hang a view.
constexpr size_t kWalkLimit = kMaxModuleDepth + 1;

std::string_view clampedPath(std::string_view path, std::string& storage) {
    if (path.size() <= kMaxModulePathBytes) return path;
    size_t cut = kMaxModulePathBytes - 3;
    // Do not cut a UTF-8 sequence in two.
    while (cut > 0 && (static_cast<unsigned char>(path[cut]) & 0xC0) == 0x80) --cut;
    storage.assign(path.substr(0, cut));
    storage += "\xE2\x80\xA6";  // …
    return storage;
}

bool isNumber(std::string_view s) {
    if (s.empty()) return false;
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::string_view toString(ModuleScopeKind kind) {
    switch (kind) {
        case ModuleScopeKind::Forward:
            return "forward";
        case ModuleScopeKind::Recompute:
            return "recompute";
        case ModuleScopeKind::Backward:
            return "backward";
    }
    return "forward";
}

std::string_view toString(ModuleSource source) {
    switch (source) {
        case ModuleSource::None:
            return "none";
        case ModuleSource::Recorded:
            return "recorded";
        case ModuleSource::Inferred:
            return "inferred";
    }
    return "none";
}

ModuleId ModuleTable::add(Module m) {
    const uint32_t own = static_cast<uint32_t>(modules.size() + 1);
    if (m.parent.value >= own) m.parent = ModuleId();
    if (const Module* parent = module(m.parent))
        m.depth = static_cast<uint16_t>(std::min<int>(parent->depth + 1, kMaxModuleDepth));
    else
        m.depth = 0;
    if (!modules.empty() && modules.front().root != m.root) several_roots_ = true;
    modules.push_back(m);
    return ModuleId(own);
}

ModuleId ModuleInterner::intern(std::string_view root, std::string_view path,
                                std::string_view type) {
    std::string storage;
    path = clampedPath(path, storage);
    std::string root_storage;
    root = clampedPath(root, root_storage);
    const Key key{trace_.internString(root).value, trace_.internString(path).value};
    if (auto it = ids_.find(key); it != ids_.end()) {
        Module& m = trace_.modules.modules[it->second.value - 1];
        if (m.type.isNull() && !type.empty()) m.type = trace_.internString(type);
        return it->second;
    }
    ModuleId parent;
    const size_t dot = path.rfind('.');
    if (!path.empty()) {
        // Parents first, iteratively bounded by the depth cap: a 100,000-level
        // path must not recurse 100,000 deep.
        size_t dots = static_cast<size_t>(std::count(path.begin(), path.end(), '.'));
        if (dots >= kMaxModuleDepth) {
            // Too deep: the module takes its deepest allowed ancestor's place.
            size_t pos = 0;
            for (uint16_t d = 0; d < kMaxModuleDepth; ++d) pos = path.find('.', pos) + 1;
            return intern(root, path.substr(0, pos - 1), {});
        }
        parent =
            intern(root, dot == std::string_view::npos ? std::string_view() : path.substr(0, dot));
    }
    Module m;
    m.root = StringId(key.root);
    m.path = StringId(key.path);
    m.type = type.empty() ? StringId() : trace_.internString(type);
    m.parent = parent;
    const ModuleId id = trace_.modules.add(m);
    ids_.emplace(key, id);
    return id;
}

size_t boundModuleStrings(Trace& trace) {
    // Each long string is cut and interned once, however many modules share
    // it: 300 modules naming one 16 MiB string take one 4 KiB copy.
    std::unordered_map<uint32_t, StringId> cut;
    const auto bounded = [&](StringId id) {
        if (trace.string(id).size() <= kMaxModulePathBytes) return id;
        if (auto it = cut.find(id.value); it != cut.end()) return it->second;
        std::string storage;
        const StringId shorter = trace.internString(clampedPath(trace.string(id), storage));
        cut.emplace(id.value, shorter);
        return shorter;
    };
    size_t changed = 0;
    for (Module& m : trace.modules.modules) {
        const Module before = m;
        m.path = bounded(m.path);
        m.root = bounded(m.root);
        m.type = bounded(m.type);
        changed += before.path != m.path || before.root != m.root || before.type != m.type;
    }
    return changed;
}

bool hasSeveralRoots(const Trace& trace) {
    return trace.modules.severalRoots();
}

std::string modulePath(const Trace& trace, ModuleId id) {
    const Module* m = trace.modules.module(id);
    if (!m) return {};
    const std::string_view root = trace.string(m->root);
    const std::string_view path = trace.string(m->path);
    if (path.empty()) return root.empty() ? std::string("(model)") : std::string(root);
    if (!hasSeveralRoots(trace)) return std::string(path);
    std::string out(root);
    out += '/';
    out += path;
    return out;
}

std::string_view lastPathComponent(std::string_view path) {
    const size_t dot = path.rfind('.');
    return dot == std::string_view::npos ? path : path.substr(dot + 1);
}

ModuleId ancestorAtDepth(const Trace& trace, ModuleId id, uint16_t depth) {
    for (size_t guard = 0; guard < kWalkLimit; ++guard) {
        const Module* m = trace.modules.module(id);
        if (!m || m->depth <= depth || m->parent.isNull()) return id;
        id = m->parent;
    }
    return id;
}

ModuleId layerOf(const Trace& trace, ModuleId id) {
    // Walk outwards, keeping the shallowest numbered module seen.
    ModuleId numbered, depth_one;
    ModuleId at = id;
    for (size_t guard = 0; guard < kWalkLimit; ++guard) {
        const Module* m = trace.modules.module(at);
        if (!m) break;
        if (isNumber(lastPathComponent(trace.string(m->path)))) numbered = at;
        if (m->depth == 1) depth_one = at;
        if (m->parent.isNull()) break;
        at = m->parent;
    }
    if (!numbered.isNull()) return numbered;
    if (!depth_one.isNull()) return depth_one;
    return at;
}

bool moduleWithin(const Trace& trace, ModuleId id, ModuleId ancestor) {
    for (size_t guard = 0; !id.isNull() && guard < kWalkLimit; ++guard) {
        if (id == ancestor) return true;
        const Module* m = trace.modules.module(id);
        if (!m) return false;
        id = m->parent;
    }
    return false;
}

}  // namespace memscope
