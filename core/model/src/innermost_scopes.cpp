#include "memscope/model/innermost_scopes.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace memscope::detail {

InnermostScopes innermostScopes(const std::vector<ScopeSpan>& spans) {
    InnermostScopes out;
    struct Edge {
        int64_t time;
        bool start;
        uint32_t scope;
    };
    std::vector<Edge> edges;
    edges.reserve(spans.size() * 2);
    for (uint32_t i = 0; i < spans.size(); ++i) {
        if (spans[i].end <= spans[i].start) continue;
        edges.push_back({spans[i].start, true, i});
        edges.push_back({spans[i].end, false, i});
    }
    if (edges.empty()) return out;
    // Ends before starts at one time: [start, end) is half open.
    std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
        return std::tie(a.time, a.start, a.scope) < std::tie(b.time, b.start, b.scope);
    });
    // Open spans ordered by how inner they are: later start, then higher
    // rank, then later in the list. The innermost is the last.
    auto inner = [&](uint32_t a, uint32_t b) {
        return std::make_tuple(spans[a].start, spans[a].rank, a) <
               std::make_tuple(spans[b].start, spans[b].rank, b);
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
        if (!out.scope_of.empty() && out.scope_of.back() == now) continue;
        out.bounds.push_back(t);
        out.scope_of.push_back(now);
    }
    return out;
}

uint32_t InnermostScopes::at(int64_t time) const {
    // The last boundary at or before `time`.
    auto it = std::upper_bound(bounds.begin(), bounds.end(), time);
    if (it == bounds.begin()) return 0;
    return scope_of[static_cast<size_t>(it - bounds.begin()) - 1];
}

}  // namespace memscope::detail
