#include "ground_truth.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "memscope/base/units.h"
#include "memscope/open/open_run.h"
#include "memscope/plugins/pytorch_snapshot.h"
#include "optimizer_peak_score.h"

namespace memscope::ground_truth {
namespace {

using DeviceAddress = std::pair<int16_t, uint64_t>;

// A user's snapshot of the labelled run, and what each of its allocations,
// frees and end-state blocks truly is.
struct Blinded {
    Trace trace;
    std::map<int16_t, std::vector<Category>> alloc_truth;  // per device, k-th Alloc
    std::map<int16_t, std::vector<Category>> free_truth;   // per device, k-th FreeCompleted
    std::map<DeviceAddress, Category> block_truth;         // blocks alive at the end
    size_t steps = 0;
};

std::vector<const Phase*> stepsByStart(const Trace& t) {
    std::vector<const Phase*> steps;
    for (const Phase& p : t.phases)
        if (p.kind == PhaseKind::Step && !p.inferred) steps.push_back(&p);
    std::stable_sort(steps.begin(), steps.end(),
                     [](const Phase* a, const Phase* b) { return a->start < b->start; });
    return steps;
}

// What a user's snapshot would hold: events without categories, phases or
// stacks, no metadata; with a style, the optimizer's annotations and the
// history cut to the steps asked for, the rest alive then in the end state.
Result<Blinded> blind(const Trace& labelled, const ExportStyle& style) {
    Blinded out;
    Trace& t = out.trace;
    t.metadata.time_base = labelled.metadata.time_base;
    const std::vector<const Phase*> steps = stepsByStart(labelled);
    int64_t from = std::numeric_limits<int64_t>::min(), to = std::numeric_limits<int64_t>::max();
    if (style.first_step > 0) {
        if (size_t(style.first_step) >= steps.size())
            return makeError("the run has no step " + std::to_string(style.first_step));
        from = steps[size_t(style.first_step)]->start;
    }
    const size_t last =
        style.steps < 0
            ? steps.size()
            : std::min(steps.size(), size_t(std::max(0, style.first_step) + style.steps));
    if (style.steps >= 0 && last > 0) to = steps[last - 1]->end;
    out.steps = last > size_t(std::max(0, style.first_step))
                    ? last - size_t(std::max(0, style.first_step))
                    : 0;
    const bool whole = style.first_step <= 0 && style.steps < 0;

    struct Live {
        Category category;
        uint64_t size;
    };
    std::map<DeviceAddress, Live> live;
    for (const Event& src : labelled.events) {
        if (src.time > to) break;
        const DeviceAddress key{src.device, src.address};
        const bool kept = src.time >= from;
        if (src.kind == EventKind::Alloc) {
            live[key] = {src.category, src.size};
            if (kept) out.alloc_truth[src.device].push_back(src.category);
        } else if (src.kind == EventKind::FreeCompleted) {
            const auto it = live.find(key);
            if (kept)
                out.free_truth[src.device].push_back(it == live.end() ? Category::Unknown
                                                                      : it->second.category);
            if (it != live.end()) live.erase(it);
        }
        if (!kept) continue;
        Event e = src;
        e.category = Category::Unknown;
        e.phase = PhaseId();
        e.stack = StackId();
        t.events.push_back(e);
    }
    // The end state: empty for the whole run (no memscope-only keys, as
    // before), else every block alive at the end, one segment each.
    t.allocator_state = AllocatorState{};
    if (!whole) {
        for (const auto& [key, alive] : live) {
            const uint64_t size = alive.size;
            Segment s;
            s.address = key.second;
            s.total_size = size;
            s.device = key.first;
            s.first_block = uint32_t(t.allocator_state->blocks.size());
            s.block_count = 1;
            t.allocator_state->segments.push_back(s);
            t.allocator_state->blocks.push_back(
                Block{key.second, size, size, StackId(), BlockState::ActiveAllocated});
            out.block_truth[key] = alive.category;
        }
    }
    if (style.optimizer_annotations) {
        // PyTorch's optimizers wrap each step() in record_function: one
        // range per optimizer phase (per parameter where it runs in backward).
        const StringId name = t.internString("Optimizer.step#Adam.step");
        const int16_t device = t.events.empty() ? 0 : t.events.front().device;
        auto range = [&](StringId what, int64_t start, int64_t end) {
            t.annotations.push_back({start, what, device, AnnotationStage::Start});
            t.annotations.push_back({end, what, device, AnnotationStage::End});
        };
        for (const Phase& p : labelled.phases) {
            if (p.kind != PhaseKind::Optimizer || p.start < from || p.end > to) continue;
            const bool nested = !p.parent.isNull() && p.parent.value <= labelled.phases.size() &&
                                labelled.phases[p.parent.value - 1].kind == PhaseKind::Optimizer;
            if (nested) continue;
            range(name, p.start, p.end);
        }
        // zero_grad(set_to_none=True) frees the gradients inside its own
        // range: one around each run of gradient frees (after the step, or
        // per parameter inside backward). A microsecond past the last free:
        // snapshots keep microseconds.
        const StringId zero = t.internString("Optimizer.zero_grad#Adam.zero_grad");
        std::map<int16_t, size_t> nth;
        int64_t run_start = 0, run_end = 0;
        bool in_run = false;
        for (const Event& e : t.events) {
            bool gradient_free = false;
            if (e.kind == EventKind::FreeCompleted) {
                const size_t k = nth[e.device]++;
                gradient_free = out.free_truth[e.device][k] == Category::Gradient;
            }
            if (gradient_free) {
                if (!in_run) run_start = e.time;
                run_end = e.time;
                in_run = true;
            } else if (in_run &&
                       (e.kind == EventKind::Alloc || e.kind == EventKind::FreeCompleted)) {
                range(zero, run_start, run_end + 1000);
                in_run = false;
            }
        }
        if (in_run) range(zero, run_start, run_end + 1000);
        std::stable_sort(t.annotations.begin(), t.annotations.end(),
                         [](const Annotation& a, const Annotation& b) { return a.time < b.time; });
    }
    return out;
}

}  // namespace

std::string ExportStyle::describe() const {
    std::string s = optimizer_annotations ? "annotated" : "plain";
    if (first_step > 0) s += ", from step " + std::to_string(first_step);
    if (steps >= 0) s += ", " + std::to_string(steps) + (steps == 1 ? " step" : " steps");
    return s;
}

double Score::error(Category c) const {
    const auto truth = double(truth_at_peak[size_t(index(c))]);
    const auto found = double(inferred_at_peak[size_t(index(c))]);
    if (truth == 0) return found == 0 ? 0.0 : 1.0;
    return std::fabs(found - truth) / truth;
}

double Score::optimizerError(Category c) const {
    const auto truth = double(truth_at_optimizer[size_t(index(c))]);
    const auto found = double(inferred_at_optimizer[size_t(index(c))]);
    if (truth == 0) return found == 0 ? 0.0 : 1.0;
    return std::fabs(found - truth) / truth;
}

Result<Score> scoreInference(const Trace& labelled, const std::string& scratch,
                             const ExportStyle& style) {
    auto blinded = blind(labelled, style);
    if (!blinded) return blinded.error();
    if (auto w = pytorch_snapshot::exportFile(blinded->trace, scratch); !w) return w.error();
    auto imported = pytorch_snapshot::importFile(scratch);
    if (!imported) return imported.error();
    auto opened = openTrace(std::move(*imported), scratch);
    if (!opened) return opened.error();
    const Trace& trace = *opened->trace;
    // The k-th alloc (free) of a device in the import is the k-th of the export.
    std::map<int16_t, size_t> next_alloc, next_free;
    std::vector<Category> truth_of(trace.events.size(), Category::Unknown);
    for (uint64_t i = 0; i < trace.events.size(); ++i) {
        const Event& e = trace.events[i];
        const bool alloc = e.kind == EventKind::Alloc;
        if (!alloc && e.kind != EventKind::FreeCompleted) continue;
        const size_t k = (alloc ? next_alloc : next_free)[e.device]++;
        const auto& list = (alloc ? blinded->alloc_truth : blinded->free_truth)[e.device];
        if (k >= list.size()) return makeError("the exported snapshot has more events");
        truth_of[i] = list[k];
    }
    auto truthOf = [&](const DeviceTimeline& d, const AllocationInterval& a) {
        if (a.alloc_event != kNoEvent) return truth_of[a.alloc_event];
        if (a.free_event != kNoEvent) return truth_of[a.free_event];
        const auto it = blinded->block_truth.find({d.device, a.address});
        return it == blinded->block_truth.end() ? Category::Unknown : it->second;
    };
    Score score;
    score.steps_expected = blinded->steps;
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
        const Category t = truthOf(*tl, a);
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
    double off = 0;
    for (int c = 0; c < kCategoryCount; ++c)
        off +=
            std::fabs(double(score.inferred_at_peak[size_t(c)] - score.truth_at_peak[size_t(c)]));
    score.composition_correct = all ? 1.0 - off / (2.0 * double(all)) : 1.0;
    long double tr = 0, ta = 0;
    for (const AllocationInterval& a : tl->intervals) {
        const Category t = truthOf(*tl, a);
        const long double w =
            (long double)a.size * (long double)std::max<int64_t>(1, a.end - a.start);
        ta += w;
        if (t == a.category) tr += w;
    }
    score.timeline_correct = ta > 0 ? double(tr / ta) : 1.0;
    const recipes::OptimizerPeakScore at_optimizer = recipes::scoreAtOptimizerPeak(
        *tl, [&](const AllocationInterval& a) { return truthOf(*tl, a); });
    score.optimizer_peak = at_optimizer.in_optimizer_phase;
    score.truth_at_optimizer = at_optimizer.truth;
    score.inferred_at_optimizer = at_optimizer.found;
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
