#include "memscope/model/module_attribution.h"

#include "memscope/model/trace.h"

namespace memscope {

ModuleAttribution::ModuleAttribution(const Trace& trace) : source_(trace.modules.source) {
    const ModuleTable& table = trace.modules;
    scopes_ = table.scopes;
    std::vector<detail::ScopeSpan> spans;
    spans.reserve(scopes_.size());
    for (const ModuleScope& s : scopes_) {
        const Module* m = table.module(s.module);
        // A scope naming an unknown module is left out (an empty span).
        spans.push_back(m ? detail::ScopeSpan{s.start, s.end, m->depth} : detail::ScopeSpan{});
    }
    innermost_ = detail::innermostScopes(spans);
}

std::optional<ModuleHit> ModuleAttribution::at(int64_t time) const {
    const uint32_t s = innermost_.at(time);
    if (s == 0) return std::nullopt;
    const ModuleScope& scope = scopes_[s - 1];
    return ModuleHit{scope.module, scope.kind, s - 1};
}

}  // namespace memscope
