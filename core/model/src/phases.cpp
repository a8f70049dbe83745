// Phase queries shared by per-phase peaks, compare alignment and the views.
#include "memscope/model/phases.h"

#include <algorithm>

namespace memscope {

std::string_view toString(PhaseKind kind) {
    switch (kind) {
        case PhaseKind::Step:
            return "step";
        case PhaseKind::Forward:
            return "forward";
        case PhaseKind::Backward:
            return "backward";
        case PhaseKind::Optimizer:
            return "optimizer";
        case PhaseKind::Block:
            return "block";
        case PhaseKind::Recompute:
            return "recompute";
        case PhaseKind::Range:
            return "range";
    }
    return "range";
}

std::vector<StepBounds> stepBounds(const Trace& trace, int16_t device) {
    std::vector<StepBounds> steps;
    const auto& phases = trace.phases;
    std::vector<uint32_t> step_ids;  // PhaseId values
    for (uint32_t i = 0; i < phases.size(); ++i)
        if (phases[i].kind == PhaseKind::Step && phaseOnDevice(phases[i], device) &&
            phases[i].end > phases[i].start)
            step_ids.push_back(i + 1);
    std::sort(step_ids.begin(), step_ids.end(),
              [&](uint32_t a, uint32_t b) { return phases[a - 1].start < phases[b - 1].start; });
    steps.reserve(step_ids.size());
    for (uint32_t id : step_ids)
        steps.push_back({phases[id - 1].start, phases[id - 1].end, {}, {}, {}});
    // A sub-phase belongs to the step whose range holds its start; the first
    // forward and backward of a step are its boundaries.
    for (const Phase& p : phases) {
        if (!phaseOnDevice(p, device)) continue;
        if (p.kind != PhaseKind::Forward && p.kind != PhaseKind::Backward) continue;
        auto it = std::upper_bound(steps.begin(), steps.end(), p.start,
                                   [](int64_t t, const StepBounds& s) { return t < s.start; });
        if (it == steps.begin()) continue;
        StepBounds& s = *std::prev(it);
        if (p.start >= s.end) continue;
        if (p.kind == PhaseKind::Forward) {
            if (!s.forward_start || p.start < *s.forward_start) s.forward_start = p.start;
        } else {
            if (!s.backward_start || p.start < *s.backward_start) s.backward_start = p.start;
            const int64_t e = std::min(p.end, s.end);
            if (!s.backward_end || e > *s.backward_end) s.backward_end = e;
        }
    }
    return steps;
}

std::optional<PhaseId> findPhase(const Trace& trace, PhaseKind kind, int32_t step) {
    for (size_t i = 0; i < trace.phases.size(); ++i)
        if (trace.phases[i].kind == kind && trace.phases[i].step == step)
            return PhaseId(static_cast<uint32_t>(i + 1));
    return std::nullopt;
}

bool phaseWithin(const Trace& trace, PhaseId phase, PhaseId ancestor) {
    for (size_t guard = 0; !phase.isNull() && guard < 64; ++guard) {
        if (phase == ancestor) return true;
        const Phase* p = trace.phase(phase);
        if (!p) return false;
        phase = p->parent;
    }
    return false;
}

std::string phasePath(const Trace& trace, PhaseId phase) {
    std::vector<std::string_view> names;
    // Bounded walk: a corrupt parent cycle must not hang the GUI.
    for (size_t guard = 0; !phase.isNull() && guard < 64; ++guard) {
        const Phase* p = trace.phase(phase);
        if (!p) break;
        names.push_back(trace.string(p->name));
        phase = p->parent;
    }
    // Some producers (memscope-train) already name a phase by its whole path
    // ("step 1 / backward"): a name that extends the path so far replaces it.
    std::string out;
    for (auto it = names.rbegin(); it != names.rend(); ++it) {
        if (!out.empty() && it->starts_with(out)) {
            out = *it;
            continue;
        }
        if (!out.empty()) out += " / ";
        out += *it;
    }
    return out;
}

}  // namespace memscope
