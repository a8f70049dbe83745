#include "memscope/recording/phase_assignment.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace memscope {
namespace {

int64_t effectiveEnd(const Phase& p) {
    return p.end == p.start ? std::numeric_limits<int64_t>::max() : p.end;
}

// Phase indexes by start, longer first on a tie: an enclosing phase comes
// before what it encloses.
std::vector<uint32_t> byStart(const Trace& trace) {
    std::vector<uint32_t> order(trace.phases.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
        const Phase& pa = trace.phases[a];
        const Phase& pb = trace.phases[b];
        if (pa.start != pb.start) return pa.start < pb.start;
        return effectiveEnd(pa) > effectiveEnd(pb);
    });
    return order;
}

}  // namespace

void assignInnermostPhases(Trace& trace) {
    const std::vector<uint32_t> order = byStart(trace);
    std::vector<uint32_t> active;  // in start order; ended ones removed lazily
    size_t next = 0;
    for (Event& e : trace.events) {
        while (next < order.size() && trace.phases[order[next]].start <= e.time)
            active.push_back(order[next++]);
        // The innermost live phase: from the top, skipping (and dropping, when
        // on top) phases that have ended.
        while (!active.empty() && effectiveEnd(trace.phases[active.back()]) <= e.time)
            active.pop_back();
        e.phase = PhaseId();
        for (size_t i = active.size(); i-- > 0;) {
            if (effectiveEnd(trace.phases[active[i]]) > e.time) {
                e.phase = PhaseId(active[i] + 1);
                break;
            }
        }
    }
}

void nestPhasesByTime(Trace& trace) {
    const std::vector<uint32_t> order = byStart(trace);
    std::vector<uint32_t> open;
    for (uint32_t i : order) {
        Phase& p = trace.phases[i];
        while (!open.empty() && effectiveEnd(trace.phases[open.back()]) <= p.start) open.pop_back();
        if (p.parent.isNull() && !open.empty()) {
            const Phase& outer = trace.phases[open.back()];
            if (effectiveEnd(p) <= effectiveEnd(outer) &&
                (p.device < 0 || outer.device < 0 || p.device == outer.device))
                p.parent = PhaseId(open.back() + 1);
        }
        open.push_back(i);
    }
}

}  // namespace memscope
