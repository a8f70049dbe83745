#include "memscope/analysis/peak_explainer.h"

#include <algorithm>
#include <unordered_map>

#include "memscope/base/units.h"
#include "memscope/inference/frames.h"

namespace memscope {

std::vector<SiteAtPeak> sitesOf(const Trace& trace, const DeviceTimeline& tl,
                                std::span<const uint32_t> live, size_t top) {
    // Sites by frame; a stack's site is looked up once.
    std::unordered_map<uint32_t, std::optional<FrameId>> site_of_stack;
    FrameRoleCache roles(trace);
    struct Acc {
        SiteAtPeak s;
        std::array<int64_t, kCategoryCount> by_category{};
    };
    std::unordered_map<uint32_t, Acc> by_site;  // key: FrameId value, 0 = no site
    // Each site's bytes by op (key: the op's StringId value), where the
    // trace has ops.
    const std::optional<OpAttribution> ops =
        trace.ops.empty() ? std::nullopt : std::optional<OpAttribution>(trace);
    std::unordered_map<uint32_t, std::unordered_map<uint32_t, int64_t>> op_bytes;
    for (uint32_t i : live) {
        if (i >= tl.intervals.size()) continue;
        const AllocationInterval& a = tl.intervals[i];
        auto [it, fresh] = site_of_stack.try_emplace(a.stack.value);
        if (fresh) it->second = siteFrame(trace, a.stack, roles);
        const uint32_t key = it->second ? it->second->value : 0;
        Acc& acc = by_site[key];
        if (acc.s.count == 0 || a.size > tl.intervals[acc.s.largest].size) acc.s.largest = i;
        acc.s.site = it->second;
        acc.s.bytes += int64_t(a.size);
        acc.s.count += 1;
        acc.by_category[size_t(index(a.category))] += int64_t(a.size);
        if (!ops) continue;
        if (const auto op = opOfInterval(*ops, a)) op_bytes[key][op->name.value] += int64_t(a.size);
    }
    std::vector<SiteAtPeak> out;
    out.reserve(by_site.size());
    for (auto& [key, acc] : by_site) {
        acc.s.label = acc.s.site ? frameText(trace, *acc.s.site) : std::string("(no stack)");
        acc.s.category = Category(std::max_element(acc.by_category.begin(), acc.by_category.end()) -
                                  acc.by_category.begin());
        if (const auto it = op_bytes.find(key); it != op_bytes.end()) {
            // Most bytes, then the smaller name id: the same op on every run.
            const auto most = std::max_element(
                it->second.begin(), it->second.end(), [](const auto& x, const auto& y) {
                    return x.second != y.second ? x.second < y.second : x.first > y.first;
                });
            acc.s.op = AllocationOp{StringId{most->first}, ops->source()};
        }
        out.push_back(std::move(acc.s));
    }
    std::sort(out.begin(), out.end(), [](const SiteAtPeak& a, const SiteAtPeak& b) {
        return a.bytes != b.bytes ? a.bytes > b.bytes : a.label < b.label;
    });
    if (out.size() > top) out.resize(top);
    return out;
}

std::vector<SiteAtPeak> sitesAtPeak(const Trace& trace, const DeviceTimeline& tl, size_t top) {
    return sitesOf(trace, tl, tl.peak.live_intervals, top);
}

std::vector<SiteAtPeak> sitesAt(const Trace& trace, const DeviceTimeline& tl, int64_t x,
                                size_t top) {
    const std::vector<uint32_t> live = tl.liveAt(x);
    return sitesOf(trace, tl, live, top);
}

std::array<int64_t, kCategoryCount> recomputedBytesAt(const Trace& trace, const DeviceTimeline& tl,
                                                      int64_t x) {
    std::array<int64_t, kCategoryCount> out{};
    // Whether each phase is, or lies inside, a recompute (memoized per phase).
    std::vector<int8_t> inside(trace.phases.size() + 1, -1);
    auto recompute = [&](PhaseId id) {
        if (id.value == 0 || id.value > trace.phases.size()) return false;
        int8_t& memo = inside[id.value];
        if (memo < 0) {
            memo = 0;
            uint32_t up = id.value;
            for (int depth = 0; up != 0 && up <= trace.phases.size() && depth < 64; ++depth) {
                if (trace.phases[up - 1].kind == PhaseKind::Recompute) {
                    memo = 1;
                    break;
                }
                up = trace.phases[up - 1].parent.value;
            }
        }
        return memo == 1;
    };
    for (uint32_t i : tl.liveAt(x)) {
        const AllocationInterval& a = tl.intervals[i];
        if (recompute(a.phase))
            out[size_t(index(a.category))] += int64_t(std::min<uint64_t>(a.size, INT64_MAX / 2));
    }
    return out;
}

std::string describeChange(const std::array<int64_t, kCategoryCount>& delta, size_t top,
                           const std::array<int64_t, kCategoryCount>* recomputed) {
    std::vector<Category> changed;
    for (Category c : kAllCategories)
        if (delta[size_t(index(c))] != 0) changed.push_back(c);
    // Magnitudes as unsigned: |INT64_MIN| does not fit int64.
    auto magnitude = [&](Category c) {
        const int64_t v = delta[size_t(index(c))];
        return v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
    };
    std::stable_sort(changed.begin(), changed.end(),
                     [&](Category a, Category b) { return magnitude(a) > magnitude(b); });
    if (changed.empty()) return "no change";
    std::string out;
    for (size_t i = 0; i < changed.size() && i < top; ++i) {
        const int64_t d = delta[size_t(index(changed[i]))];
        if (!out.empty()) out += ", ";
        // A real minus sign reads better than a hyphen in a sentence.
        const std::string magnitude =
            formatBytes(d).substr(d < 0 ? 1 : 0);  // no negation: INT64_MIN
        out += (d > 0 ? "+" : "\u2212") + magnitude + " " + std::string(toString(changed[i]));
        if (recomputed && d > 0 && (*recomputed)[size_t(index(changed[i]))] >= d / 2)
            out += " (recompute)";
    }
    return out;
}

}  // namespace memscope
