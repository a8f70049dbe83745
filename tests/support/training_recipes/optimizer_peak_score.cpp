#include "optimizer_peak_score.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "memscope/base/units.h"
#include "memscope/plugins/pytorch_snapshot.h"

namespace memscope::recipes {
namespace {

const DeviceTimeline* busiest(const Timeline& tl) {
    const DeviceTimeline* best = nullptr;
    for (const DeviceTimeline& d : tl.devices())
        if (!best || d.peak.bytes > best->peak.bytes) best = &d;
    return best;
}

}  // namespace

OptimizerPeakScore scoreAtOptimizerPeak(const DeviceTimeline& d, const TruthOf& truth) {
    OptimizerPeakScore s;
    const auto& optimizer = d.phase_peaks.by_phase[size_t(index(TrainingPhase::Optimizer))];
    s.in_optimizer_phase = optimizer.has_value();
    s.time = optimizer ? optimizer->time : d.peak.time;
    // A window can peak at its start, before the device's first event (a
    // zero_grad range that opens the history): then what is live is what
    // was alive before the history, every interval without an alloc.
    std::vector<uint32_t> live;
    if (s.time < d.start) {
        for (uint32_t i = 0; i < d.intervals.size(); ++i)
            if (d.intervals[i].alloc_event == kNoEvent) live.push_back(i);
    } else {
        live = d.liveAt(s.time);
    }
    std::map<std::pair<Category, Category>, int64_t> missed;
    for (uint32_t i : live) {
        const AllocationInterval& a = d.intervals[i];
        const auto bytes = int64_t(a.size);
        const Category t = truth(a);
        s.bytes += bytes;
        s.found[size_t(index(a.category))] += bytes;
        s.truth[size_t(index(t))] += bytes;
        s.right += t == a.category ? bytes : 0;
        if (t != a.category && t != Category::Unknown) missed[{t, a.category}] += bytes;
    }
    std::vector<std::pair<int64_t, std::pair<Category, Category>>> by_bytes;
    for (const auto& [pair, bytes] : missed) by_bytes.push_back({bytes, pair});
    std::sort(by_bytes.rbegin(), by_bytes.rend());
    for (size_t i = 0; i < by_bytes.size() && i < 3; ++i)
        s.misses += (i ? ", " : "") + std::string(toString(by_bytes[i].second.first)) + "->" +
                    std::string(toString(by_bytes[i].second.second)) + " " +
                    formatBytes(by_bytes[i].first);
    for (int c = 0; c < kCategoryCount; ++c)
        s.recorded[size_t(c)] = d.category_sources[size_t(c)].recorded;
    return s;
}

double OptimizerPeakScore::composition_right() const {
    if (bytes == 0) return 0.0;
    double off = 0;
    for (size_t c = 0; c < size_t(kCategoryCount); ++c)
        off += std::fabs(double(found[c] - truth[c]));
    return 1.0 - off / (2.0 * double(bytes));
}

double relativeError(int64_t found, int64_t truth) {
    if (truth == 0) return found == 0 ? 0.0 : 1.0;
    return std::fabs(double(found - truth)) / double(truth);
}

OptimizerPeakScore scoreAtOptimizerPeak(const OpenedTrace& opened) {
    const DeviceTimeline* d = busiest(*opened.timeline);
    if (!d) return {};
    return scoreAtOptimizerPeak(*d, [](const AllocationInterval&) { return Category::Unknown; });
}

Result<OptimizerPeakScore> scoreRecipe(const RecipeTrace& recipe, const std::string& scratch) {
    if (auto w = pytorch_snapshot::exportFile(recipe.trace, scratch); !w) return w.error();
    auto imported = pytorch_snapshot::importFile(scratch);
    if (!imported) return imported.error();
    auto opened = openTrace(std::move(*imported), scratch);
    if (!opened) return opened.error();
    const Trace& trace = *opened->trace;
    // The k-th alloc (free) in the import is the k-th of the recipe.
    std::vector<Category> alloc_truth, free_truth;
    for (size_t i = 0; i < recipe.trace.events.size(); ++i)
        (recipe.trace.events[i].kind == EventKind::Alloc ? alloc_truth : free_truth)
            .push_back(recipe.truth_of[i]);
    std::vector<Category> truth_of(trace.events.size(), Category::Unknown);
    size_t allocs = 0, frees = 0;
    for (uint64_t i = 0; i < trace.events.size(); ++i) {
        const EventKind k = trace.events[i].kind;
        if (k == EventKind::Alloc && allocs < alloc_truth.size())
            truth_of[i] = alloc_truth[allocs++];
        else if (k == EventKind::FreeCompleted && frees < free_truth.size())
            truth_of[i] = free_truth[frees++];
    }
    if (allocs != alloc_truth.size() || frees != free_truth.size())
        return makeError("the snapshot came back with other events than the recipe wrote");
    const DeviceTimeline* d = busiest(*opened->timeline);
    if (!d) return makeError("the snapshot came back without a device");
    return scoreAtOptimizerPeak(*d, [&](const AllocationInterval& a) {
        if (a.alloc_event != kNoEvent) return truth_of[a.alloc_event];
        if (a.free_event != kNoEvent) return truth_of[a.free_event];
        const auto it = recipe.blocks.find(a.address);
        return it == recipe.blocks.end() ? Category::Unknown : it->second;
    });
}

}  // namespace memscope::recipes
