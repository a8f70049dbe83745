#include "memscope/recording/recorded_modules.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>

namespace memscope {

RecordedModulesStats addRecordedModules(Trace& trace, const std::vector<HookModule>& modules,
                                        const std::vector<HookModuleScope>& scopes) {
    RecordedModulesStats stats;
    if (modules.empty()) {
        stats.unknown_module = scopes.size();
        return stats;
    }
    ModuleInterner interner(trace);
    std::unordered_map<uint32_t, ModuleId> ids;  // the hook's id -> the trace's
    ids.reserve(modules.size());
    for (const HookModule& m : modules) ids.emplace(m.id, interner.intern(m.root, m.path, m.type));
    stats.modules = trace.modules.modules.size();

    std::vector<ModuleScope> out;
    out.reserve(scopes.size());
    for (const HookModuleScope& s : scopes) {
        auto it = ids.find(s.module);
        if (it == ids.end()) {
            ++stats.unknown_module;
            continue;
        }
        out.push_back({s.start_ns, s.end_ns, it->second, s.kind});
    }
    auto key = [](const ModuleScope& s) {
        // Start first; on a tie the longer (enclosing) scope first.
        return std::tuple(s.start, -s.end, s.module.value, uint8_t(s.kind));
    };
    std::sort(out.begin(), out.end(),
              [&](const ModuleScope& a, const ModuleScope& b) { return key(a) < key(b); });
    out.erase(
        std::unique(out.begin(), out.end(),
                    [&](const ModuleScope& a, const ModuleScope& b) { return key(a) == key(b); }),
        out.end());
    stats.scopes = out.size();
    trace.modules.source = ModuleSource::Recorded;
    trace.modules.scopes.insert(trace.modules.scopes.end(), out.begin(), out.end());
    return stats;
}

}  // namespace memscope
