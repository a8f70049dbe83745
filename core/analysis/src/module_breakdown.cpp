#include "memscope/analysis/module_breakdown.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <unordered_map>

#include "memscope/analysis/peak_explainer.h"

namespace memscope {
namespace {

// Magnitudes as unsigned: |INT64_MIN| does not fit int64.
uint64_t magnitude(int64_t v) {
    return v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
}

// "h.11" -> ("h.", 11); nullopt when the last component is not a number.
struct Numbered {
    std::string_view prefix;
    uint64_t number = 0;
};
std::optional<Numbered> splitNumbered(std::string_view path) {
    const std::string_view last = lastPathComponent(path);
    if (last.empty() || last.size() > 18 || last.size() == path.size()) return std::nullopt;
    Numbered n;
    const auto [end, ec] = std::from_chars(last.data(), last.data() + last.size(), n.number);
    if (ec != std::errc() || end != last.data() + last.size()) return std::nullopt;
    n.prefix = path.substr(0, path.size() - last.size());
    return n;
}

// The category that leads a change, with its sign.
std::pair<Category, bool> leadingChange(const std::array<int64_t, kCategoryCount>& d) {
    size_t best = 0;
    for (size_t i = 1; i < d.size(); ++i)
        if (magnitude(d[i]) > magnitude(d[best])) best = i;
    return {Category(best), d[best] > 0};
}

}  // namespace

ModuleHit moduleOfInterval(const ModuleAttribution& attribution, const AllocationInterval& a) {
    if (a.alloc_event == kNoEvent) return {};
    return attribution.at(a.start).value_or(ModuleHit{});
}

ModuleId moduleGroup(const Trace& trace, ModuleId id, ModuleGroupingSpec spec) {
    if (id.isNull()) return id;
    switch (spec.by) {
        case ModuleGrouping::Layer:
            return layerOf(trace, id);
        case ModuleGrouping::Depth:
            return ancestorAtDepth(trace, id, spec.depth);
        case ModuleGrouping::Exact:
            return id;
    }
    return id;
}

ModuleBreakdown modulesOf(const Trace& trace, const ModuleAttribution& attribution,
                          const DeviceTimeline& tl, std::span<const uint32_t> live,
                          ModuleGroupingSpec spec) {
    ModuleBreakdown out;
    out.source = attribution.empty() ? ModuleSource::None : attribution.source();
    // Groups are memoized per innermost module: a peak holds many
    // allocations of few modules.
    std::unordered_map<uint32_t, uint32_t> group_of;
    std::unordered_map<uint32_t, size_t> row_of;  // group module -> row
    for (uint32_t i : live) {
        if (i >= tl.intervals.size()) continue;
        const AllocationInterval& a = tl.intervals[i];
        const ModuleHit hit = moduleOfInterval(attribution, a);
        auto [g, fresh] = group_of.try_emplace(hit.module.value);
        if (fresh) g->second = moduleGroup(trace, hit.module, spec).value;
        auto [r, new_row] = row_of.try_emplace(g->second, out.rows.size());
        if (new_row) {
            ModuleBytes row;
            row.module = ModuleId(g->second);
            row.largest = i;
            out.rows.push_back(std::move(row));
        }
        ModuleBytes& row = out.rows[r->second];
        if (a.size > tl.intervals[row.largest].size) row.largest = i;
        row.bytes += int64_t(a.size);
        row.count += 1;
        row.by_category[size_t(index(a.category))] += int64_t(a.size);
        if (!hit.module.isNull() && hit.kind == ModuleScopeKind::Recompute)
            row.recomputed_bytes += int64_t(a.size);
        out.total += int64_t(a.size);
    }
    for (ModuleBytes& row : out.rows)
        row.path =
            row.module.isNull() ? std::string(kOutsideModulesLabel) : modulePath(trace, row.module);
    std::sort(out.rows.begin(), out.rows.end(), [](const ModuleBytes& a, const ModuleBytes& b) {
        return a.bytes != b.bytes ? a.bytes > b.bytes : a.path < b.path;
    });
    return out;
}

ModuleBreakdown modulesAtPeak(const Trace& trace, const ModuleAttribution& attribution,
                              const DeviceTimeline& tl, ModuleGroupingSpec spec) {
    return modulesOf(trace, attribution, tl, tl.peak.live_intervals, spec);
}

ModuleBreakdown modulesAt(const Trace& trace, const ModuleAttribution& attribution,
                          const DeviceTimeline& tl, int64_t x, ModuleGroupingSpec spec) {
    const std::vector<uint32_t> live = tl.liveAt(x);
    return modulesOf(trace, attribution, tl, live, spec);
}

std::vector<ModuleDelta> compareModules(Baseline<ModuleBreakdown> baseline,
                                        Candidate<ModuleBreakdown> candidate) {
    std::map<std::string, ModuleDelta> by_path;
    for (const ModuleBytes& r : baseline.value.rows) {
        ModuleDelta& d = by_path[r.path];
        d.path = r.path;
        d.baseline_bytes += r.bytes;
        for (size_t c = 0; c < d.delta_by_category.size(); ++c)
            d.delta_by_category[c] -= r.by_category[c];
    }
    for (const ModuleBytes& r : candidate.value.rows) {
        ModuleDelta& d = by_path[r.path];
        d.path = r.path;
        d.candidate_bytes += r.bytes;
        for (size_t c = 0; c < d.delta_by_category.size(); ++c)
            d.delta_by_category[c] += r.by_category[c];
    }
    std::vector<ModuleDelta> out;
    out.reserve(by_path.size());
    for (auto& [path, d] : by_path) {
        d.delta = d.candidate_bytes - d.baseline_bytes;
        out.push_back(std::move(d));
    }
    std::stable_sort(out.begin(), out.end(), [](const ModuleDelta& a, const ModuleDelta& b) {
        return magnitude(a.delta) > magnitude(b.delta);
    });
    return out;
}

std::vector<std::string> describeModuleChanges(std::span<const ModuleDelta> deltas, size_t top) {
    // Rows in path order, numbered siblings by number, so that a run of
    // layers ("h.0" … "h.11") lies together.
    std::vector<const ModuleDelta*> order;
    for (const ModuleDelta& d : deltas)
        if (d.delta != 0 || std::any_of(d.delta_by_category.begin(), d.delta_by_category.end(),
                                        [](int64_t v) { return v != 0; }))
            order.push_back(&d);
    auto key = [](const ModuleDelta* d) {
        const auto n = splitNumbered(d->path);
        return n ? std::make_tuple(n->prefix, uint64_t(1), n->number)
                 : std::make_tuple(std::string_view(d->path), uint64_t(0), uint64_t(0));
    };
    std::sort(order.begin(), order.end(),
              [&](const ModuleDelta* a, const ModuleDelta* b) { return key(a) < key(b); });
    struct Group {
        std::string first, last;
        std::array<int64_t, kCategoryCount> by_category{};
        int64_t delta = 0;
    };
    std::vector<Group> groups;
    std::optional<Numbered> previous;
    std::pair<Category, bool> previous_lead{};
    for (const ModuleDelta* d : order) {
        const auto n = splitNumbered(d->path);
        const auto lead = leadingChange(d->delta_by_category);
        const bool joins = n && previous && !groups.empty() && n->prefix == previous->prefix &&
                           n->number == previous->number + 1 && lead == previous_lead;
        if (!joins) groups.push_back(Group{d->path, d->path, {}, 0});
        Group& g = groups.back();
        g.last = d->path;
        g.delta += d->delta;
        for (size_t c = 0; c < g.by_category.size(); ++c)
            g.by_category[c] += d->delta_by_category[c];
        previous = n;
        previous_lead = lead;
    }
    std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
        return magnitude(a.delta) > magnitude(b.delta);
    });
    std::vector<std::string> out;
    for (const Group& g : groups) {
        if (out.size() >= top) break;
        std::string name = g.first;
        if (g.last != g.first) name += "\u2013" + g.last;  // an en dash for a range
        out.push_back(name + ": " + describeChange(g.by_category, 2));
    }
    return out;
}

}  // namespace memscope
