#include "memscope/model/module_attribution.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "memscope/model/trace.h"

namespace memscope {

ModuleAttribution::ModuleAttribution(const Trace& trace) : source_(trace.modules.source) {
    const ModuleTable& table = trace.modules;
    scopes_ = table.scopes;
    // Boundaries: every start and end of a usable scope.
    struct Edge {
        int64_t time;
        bool start;
        uint32_t scope;
    };
    std::vector<Edge> edges;
    edges.reserve(scopes_.size() * 2);
    for (uint32_t i = 0; i < scopes_.size(); ++i) {
        const ModuleScope& s = scopes_[i];
        if (s.end <= s.start || !table.module(s.module)) continue;
        edges.push_back({s.start, true, i});
        edges.push_back({s.end, false, i});
    }
    if (edges.empty()) return;
    // Ends before starts at one time: [start, end) is half open.
    std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
        return std::tie(a.time, a.start, a.scope) < std::tie(b.time, b.start, b.scope);
    });
    // Open scopes ordered by how inner they are: later start, then deeper
    // module, then later in the list. The innermost is the last.
    auto depth = [&](uint32_t i) { return table.module(scopes_[i].module)->depth; };
    auto inner = [&](uint32_t a, uint32_t b) {
        return std::make_tuple(scopes_[a].start, depth(a), a) <
               std::make_tuple(scopes_[b].start, depth(b), b);
    };
    std::set<uint32_t, decltype(inner)> open(inner);
    size_t i = 0;
    while (i < edges.size()) {
        const int64_t t = edges[i].time;
        for (; i < edges.size() && edges[i].time == t; ++i) {
            if (edges[i].start)
                open.insert(edges[i].scope);
            else
                open.erase(edges[i].scope);
        }
        const uint32_t now = open.empty() ? 0 : *open.rbegin() + 1;
        if (!scope_of_.empty() && scope_of_.back() == now) continue;
        bounds_.push_back(t);
        scope_of_.push_back(now);
    }
}

std::optional<ModuleHit> ModuleAttribution::at(int64_t time) const {
    // The last boundary at or before `time`.
    auto it = std::upper_bound(bounds_.begin(), bounds_.end(), time);
    if (it == bounds_.begin()) return std::nullopt;
    const uint32_t s = scope_of_[static_cast<size_t>(it - bounds_.begin()) - 1];
    if (s == 0) return std::nullopt;
    const ModuleScope& scope = scopes_[s - 1];
    return ModuleHit{scope.module, scope.kind, s - 1};
}

}  // namespace memscope
