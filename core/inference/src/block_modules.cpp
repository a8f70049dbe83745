#include "block_modules.h"

#include <algorithm>
#include <string>

namespace memscope::detail {
namespace {

// The scope kind of a block phase from the training phases around it: a
// block inside a recompute is recomputed, one inside backward (the trainer's
// checkpointed blocks hold their recompute and their backward) is backward.
ModuleScopeKind kindAround(const Trace& trace, uint32_t index) {
    bool forward = false, backward = false;
    uint32_t at = trace.phases[index].parent.value;
    // Parents are earlier phases; anything else ends the walk (a corrupt file).
    for (size_t guard = 0; at != 0 && at <= index && guard < trace.phases.size(); ++guard) {
        const Phase& p = trace.phases[at - 1];
        if (p.kind == PhaseKind::Recompute) return ModuleScopeKind::Recompute;
        forward |= p.kind == PhaseKind::Forward;
        backward |= p.kind == PhaseKind::Backward;
        index = at - 1;
        at = p.parent.value;
    }
    if (backward && !forward) return ModuleScopeKind::Backward;
    return ModuleScopeKind::Forward;
}

// A recorded phase of a model block (or its recompute): a module.
bool namesABlock(const Phase& p) {
    return !p.inferred && p.block >= 0 &&
           (p.kind == PhaseKind::Block || p.kind == PhaseKind::Recompute);
}

}  // namespace

bool hasBlockPhases(const Trace& trace) {
    return std::any_of(trace.phases.begin(), trace.phases.end(), namesABlock);
}

bool modulesFromBlockPhases(Trace& trace) {
    if (!hasBlockPhases(trace)) return false;
    int64_t last = 0;
    for (const Event& e : trace.events) last = std::max(last, e.time);
    ModuleInterner interner(trace);
    std::vector<ModuleScope> scopes;
    for (uint32_t i = 0; i < trace.phases.size(); ++i) {
        const Phase p = trace.phases[i];
        if (!namesABlock(p)) continue;
        ModuleScope s;
        s.module = interner.intern("model", "block " + std::to_string(p.block));
        s.start = p.start;
        // A phase still open when recording ended holds the last event.
        s.end = p.end > p.start ? p.end : std::max(p.start, last) + 1;
        s.kind = p.kind == PhaseKind::Recompute ? ModuleScopeKind::Recompute : kindAround(trace, i);
        scopes.push_back(s);
    }
    trace.modules.scopes.insert(trace.modules.scopes.end(), scopes.begin(), scopes.end());
    trace.modules.source = ModuleSource::Recorded;
    return true;
}

}  // namespace memscope::detail
