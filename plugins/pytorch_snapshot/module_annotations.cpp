#include "module_annotations.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

namespace memscope::pytorch_snapshot {

std::optional<ModuleScopeKind> moduleScopeKind(std::string_view text) {
    for (int k = 0; k < kModuleScopeKindCount; ++k)
        if (toString(ModuleScopeKind(k)) == text) return ModuleScopeKind(k);
    return std::nullopt;
}

void addModuleScopes(Trace& trace, const std::vector<ModuleMark>& marks) {
    if (std::none_of(marks.begin(), marks.end(),
                     [](const ModuleMark& m) { return m.stage == AnnotationStage::Start; }))
        return;
    int64_t last = std::numeric_limits<int64_t>::min();
    for (const Event& e : trace.events) last = std::max(last, e.time);

    ModuleInterner interner(trace);
    // (root, path) string ids -> module: a path is interned once however
    // many scopes it has.
    std::unordered_map<uint64_t, ModuleId> ids;
    auto moduleOf = [&](const ModuleMark& m) {
        const uint64_t key = uint64_t(m.root.value) << 32 | m.path.value;
        auto [it, fresh] = ids.try_emplace(key);
        if (fresh)
            it->second =
                interner.intern(trace.string(m.root), trace.string(m.path), trace.string(m.type));
        return it->second;
    };
    // (module, kind) -> its open STARTs, latest last.
    std::unordered_map<uint64_t, std::vector<size_t>> open;
    std::vector<ModuleScope>& scopes = trace.modules.scopes;
    const size_t first = scopes.size();
    std::vector<uint8_t> closed;
    for (const ModuleMark& m : marks) {
        const ModuleId id = moduleOf(m);
        const uint64_t key = uint64_t(id.value) << 8 | uint8_t(m.kind);
        if (m.stage == AnnotationStage::Start) {
            open[key].push_back(scopes.size());
            scopes.push_back({m.time, m.time, id, m.kind});
            closed.push_back(0);
        } else if (m.stage == AnnotationStage::End) {
            auto it = open.find(key);
            if (it == open.end() || it->second.empty()) continue;  // an END without START
            const size_t s = it->second.back();
            it->second.pop_back();
            scopes[s].end = std::max(m.time, scopes[s].start);
            closed[s - first] = 1;
        }
    }
    for (size_t s = first; s < scopes.size(); ++s)
        if (!closed[s - first]) {
            const int64_t end = std::max(scopes[s].start, last);
            scopes[s].end = end < std::numeric_limits<int64_t>::max() ? end + 1 : end;
        }
    trace.modules.source = ModuleSource::Recorded;
}

}  // namespace memscope::pytorch_snapshot
