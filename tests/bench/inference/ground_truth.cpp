#include "ground_truth.h"

#include <algorithm>
#include <map>
#include <vector>

#include "memscope/base/units.h"
#include "memscope/open/open_run.h"
#include "memscope/plugins/pytorch_snapshot.h"

namespace memscope::ground_truth {
namespace {

// What a user's snapshot would hold: events without categories or phases,
// no annotations, no metadata, an empty end state (no memscope-only keys).
Trace blind(const Trace& labelled) {
    Trace t;
    t.metadata.time_base = labelled.metadata.time_base;
    t.events = labelled.events;
    for (Event& e : t.events) {
        e.category = Category::Unknown;
        e.phase = PhaseId();
        e.stack = StackId();
    }
    t.allocator_state = AllocatorState{};
    return t;
}

}  // namespace

Result<Score> scoreInference(const Trace& labelled, const std::string& scratch) {
    if (auto w = pytorch_snapshot::exportFile(blind(labelled), scratch); !w) return w.error();
    auto imported = pytorch_snapshot::importFile(scratch);
    if (!imported) return imported.error();
    auto opened = openTrace(std::move(*imported), scratch);
    if (!opened) return opened.error();
    const Trace& trace = *opened->trace;
    // The k-th alloc of a device in the import is the k-th of the original.
    std::map<int16_t, std::vector<Category>> truth;
    for (const Event& e : labelled.events)
        if (e.kind == EventKind::Alloc) truth[e.device].push_back(e.category);
    std::map<int16_t, size_t> next;
    std::vector<Category> truth_of(trace.events.size(), Category::Unknown);
    for (uint64_t i = 0; i < trace.events.size(); ++i) {
        const Event& e = trace.events[i];
        if (e.kind != EventKind::Alloc) continue;
        const size_t k = next[e.device]++;
        const auto& list = truth[e.device];
        if (k >= list.size()) return makeError("the exported snapshot has more allocations");
        truth_of[i] = list[k];
    }
    Score score;
    for (const Phase& p : trace.phases) score.steps_found += p.kind == PhaseKind::Step;
    const DeviceTimeline* tl = nullptr;
    for (const DeviceTimeline& d : opened->timeline->devices())
        if (!tl || d.peak.bytes > tl->peak.bytes) tl = &d;
    if (!tl) return makeError("no device timeline");
    score.peak_bytes = tl->peak.bytes;
    std::map<std::pair<int, int>, int64_t> misses;
    int64_t right = 0, all = 0;
    for (uint32_t i : tl->peak.live_intervals) {
        const AllocationInterval& a = tl->intervals[i];
        const Category t = a.alloc_event == kNoEvent ? Category::Unknown : truth_of[a.alloc_event];
        const auto bytes = int64_t(a.size);
        score.truth_at_peak[size_t(index(t))] += bytes;
        score.inferred_at_peak[size_t(index(a.category))] += bytes;
        all += bytes;
        if (t == a.category)
            right += bytes;
        else
            misses[{index(t), index(a.category)}] += bytes;
    }
    score.peak_correct = all ? double(right) / double(all) : 1.0;
    long double tr = 0, ta = 0;
    for (const AllocationInterval& a : tl->intervals) {
        const Category t = a.alloc_event == kNoEvent ? Category::Unknown : truth_of[a.alloc_event];
        const long double w =
            (long double)a.size * (long double)std::max<int64_t>(1, a.end - a.start);
        ta += w;
        if (t == a.category) tr += w;
    }
    score.timeline_correct = ta > 0 ? double(tr / ta) : 1.0;
    std::vector<std::pair<int64_t, std::pair<int, int>>> sorted;
    for (const auto& [k, v] : misses) sorted.push_back({v, k});
    std::sort(sorted.rbegin(), sorted.rend());
    for (size_t i = 0; i < sorted.size() && i < 3; ++i) {
        if (!score.wrong.empty()) score.wrong += ", ";
        score.wrong += std::string(toString(Category(sorted[i].second.first))) + "->" +
                       std::string(toString(Category(sorted[i].second.second))) + " " +
                       formatBytes(sorted[i].first);
    }
    return score;
}

}  // namespace memscope::ground_truth
