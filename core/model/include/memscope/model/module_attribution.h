#pragma once
// Which module an allocation belongs to: the innermost module scope running
// when it was made. The one rule every view and analysis uses (as
// phaseWithin is for phases), built once per trace.

#include <cstdint>
#include <optional>
#include <vector>

#include "memscope/model/innermost_scopes.h"
#include "memscope/model/module_scopes.h"

namespace memscope {

class Trace;

struct ModuleHit {
    ModuleId module;
    ModuleScopeKind kind = ModuleScopeKind::Forward;
    uint32_t scope = 0;  // index into Trace::modules.scopes
};

class ModuleAttribution {
public:
    ModuleAttribution() = default;
    // O(S log S) in the number of scopes. Scopes that end before they start,
    // or name an unknown module, are left out.
    explicit ModuleAttribution(const Trace& trace);

    // The innermost scope holding `time` (start <= time < end): the one that
    // started last, the deeper module on a tie. nullopt outside every scope.
    std::optional<ModuleHit> at(int64_t time) const;

    ModuleSource source() const { return source_; }
    bool empty() const { return innermost_.scope_of.empty(); }

private:
    ModuleSource source_ = ModuleSource::None;
    detail::InnermostScopes innermost_;
    std::vector<ModuleScope> scopes_;  // the trace's, for kind and module
};

}  // namespace memscope
