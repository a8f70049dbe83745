#include "memscope/view/module_stack.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

namespace memscope {

namespace {

struct Delta {
    int64_t time;
    int64_t bytes;
};

// A step series from +/- byte changes (any order) and the bytes live from
// the start; one point per distinct time, so the value at a time is the
// one after every change at it (liveAtX's half-open [start, end)).
StepSeries seriesOf(std::vector<Delta>& deltas, int64_t initial, int64_t& max_bytes) {
    std::sort(deltas.begin(), deltas.end(),
              [](const Delta& a, const Delta& b) { return a.time < b.time; });
    StepSeries s;
    s.initial = initial;
    s.reserve(deltas.size());
    int64_t v = initial;
    max_bytes = std::max<int64_t>(0, v);
    for (size_t i = 0; i < deltas.size();) {
        const int64_t t = deltas[i].time;
        for (; i < deltas.size() && deltas[i].time == t; ++i) v += deltas[i].bytes;
        s.append(t, v);
        max_bytes = std::max(max_bytes, v);
    }
    s.finalize();
    return s;
}

}  // namespace

ModuleStack buildModuleStack(const Trace& trace, const ModuleAttribution& attribution,
                             const DeviceTimeline& timeline, ModuleGroupingSpec spec,
                             size_t max_bands) {
    ModuleStack out;
    // As core's breakdown: an attribution without usable scopes is no modules.
    out.source = attribution.empty() ? ModuleSource::None : attribution.source();
    out.spec = spec;
    const size_t n = timeline.intervals.size();
    out.group_of.resize(n);
    out.band_of.resize(n);

    // Every group: its byte changes and its ghost bytes. Index 0 is "outside".
    struct Acc {
        ModuleId module;
        std::vector<Delta> deltas;
        int64_t initial = 0;
    };
    std::vector<Acc> acc(1);
    std::unordered_map<uint32_t, uint32_t> slot;  // module id -> index into acc
    std::vector<uint32_t> slot_of(n);
    std::unordered_map<uint32_t, ModuleId> group_memo;  // innermost module -> group
    for (size_t i = 0; i < n; ++i) {
        const AllocationInterval& a = timeline.intervals[i];
        // Memoized per innermost module, as core's breakdown does: many
        // allocations, few modules.
        const ModuleId inner = moduleOfInterval(attribution, a).module;
        auto [memo, fresh] = group_memo.try_emplace(inner.value);
        if (fresh) memo->second = moduleGroup(trace, inner, spec);
        const ModuleId g = memo->second;
        out.group_of[i] = g;
        uint32_t k = 0;
        if (!g.isNull()) {
            auto [it, added] = slot.try_emplace(g.value, uint32_t(acc.size()));
            if (added) acc.push_back({g, {}, 0});
            k = it->second;
        }
        slot_of[i] = k;
        const int64_t size = int64_t(a.size);
        if (a.alloc_event == kNoEvent)
            acc[k].initial += size;
        else
            acc[k].deltas.push_back({a.start, size});
        if (a.free_event != kNoEvent) acc[k].deltas.push_back({a.end, -size});
    }

    // Each group's series and own peak; the largest keep a band of their own.
    std::vector<StepSeries> series(acc.size());
    std::vector<int64_t> peak(acc.size(), 0);
    for (size_t k = 0; k < acc.size(); ++k)
        if (k == 0 || !acc[k].deltas.empty() || acc[k].initial != 0)
            series[k] = seriesOf(acc[k].deltas, acc[k].initial, peak[k]);
    std::vector<uint32_t> named(acc.size() - 1);
    std::iota(named.begin(), named.end(), 1u);
    const size_t keep = std::min(named.size(), max_bands);
    std::partial_sort(
        named.begin(), named.begin() + ptrdiff_t(keep), named.end(),
        [&](uint32_t a, uint32_t b) { return peak[a] != peak[b] ? peak[a] > peak[b] : a < b; });
    std::vector<uint32_t> kept(named.begin(), named.begin() + ptrdiff_t(keep));
    // Drawn in model order: a module's id follows the order it was first seen.
    std::sort(kept.begin(), kept.end(),
              [&](uint32_t a, uint32_t b) { return acc[a].module.value < acc[b].module.value; });

    std::vector<uint32_t> band(acc.size(), UINT32_MAX);
    auto addGroup = [&](ModuleStackGroup g) {
        out.groups.push_back(std::move(g));
        return uint32_t(out.groups.size() - 1);
    };
    if (peak[0] > 0 || !acc[0].deltas.empty() || acc[0].initial != 0 || kept.empty()) {
        band[0] = addGroup(
            {{}, std::string(kOutsideModulesLabel), false, 1, peak[0], std::move(series[0])});
    }
    for (uint32_t k : kept)
        band[k] = addGroup({acc[k].module, modulePath(trace, acc[k].module), false, 1, peak[k],
                            std::move(series[k])});
    if (kept.size() < named.size()) {
        std::vector<Delta> merged;
        int64_t initial = 0;
        uint32_t members = 0;
        for (size_t j = keep; j < named.size(); ++j) {
            const Acc& a = acc[named[j]];
            merged.insert(merged.end(), a.deltas.begin(), a.deltas.end());
            initial += a.initial;
            ++members;
        }
        int64_t max_bytes = 0;
        StepSeries s = seriesOf(merged, initial, max_bytes);
        const uint32_t other =
            addGroup({{}, "other modules", true, members, max_bytes, std::move(s)});
        for (size_t j = keep; j < named.size(); ++j) band[named[j]] = other;
    }
    // The outside band exists whenever an interval falls outside (above).
    for (size_t i = 0; i < n; ++i) out.band_of[i] = band[slot_of[i]];
    return out;
}

std::vector<uint32_t> moduleStackedAt(const DeviceTimeline& timeline, const ModuleStack& stack,
                                      int64_t x) {
    std::vector<uint32_t> live = timeline.liveAt(x);
    if (stack.band_of.size() != timeline.intervals.size()) return {};
    std::sort(live.begin(), live.end(), [&](uint32_t a, uint32_t b) {
        const uint32_t ba = stack.band_of[a], bb = stack.band_of[b];
        if (ba != bb) return ba < bb;
        const int64_t sa = timeline.intervals[a].start, sb = timeline.intervals[b].start;
        return sa != sb ? sa < sb : a < b;
    });
    return live;
}

std::optional<uint32_t> moduleAllocationAt(const DeviceTimeline& timeline, const ModuleStack& stack,
                                           int64_t x, double y) {
    if (y < 0) return std::nullopt;
    double top = 0;
    for (uint32_t i : moduleStackedAt(timeline, stack, x)) {
        top += double(timeline.intervals[i].size);
        if (y < top) return i;
    }
    return std::nullopt;
}

std::vector<uint32_t> intervalsOfGroup(const ModuleStack& stack, ModuleId group) {
    std::vector<uint32_t> out;
    for (size_t i = 0; i < stack.group_of.size(); ++i)
        if (stack.group_of[i] == group) out.push_back(uint32_t(i));
    return out;
}

}  // namespace memscope
