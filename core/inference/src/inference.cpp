#include "memscope/inference/inference.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <unordered_set>

#include "category_inference.h"
#include "memscope/base/address_map.h"
#include "memscope/base/parallel_for.h"
#include "memscope/model/phases.h"
#include "memscope/timeline/events_by_device.h"
#include "module_walk.h"
#include "pre_trace_sets.h"
#include "step_inference.h"
#include "training_activity.h"

namespace memscope {
namespace {

// Each alloc's free (the next free_completed at its address on its device,
// as the timeline pairs them) and the frees of memory allocated before the
// trace began.
struct Lifetimes {
    std::vector<uint64_t> free_of;
    std::vector<uint8_t> ghost_free;
    std::unordered_set<uint64_t> open_at_end;  // deviceKey(device, address) of allocs never freed
};

uint64_t deviceKey(int16_t device, uint64_t address) {
    return (uint64_t(uint16_t(device)) << 48) ^ address;
}

Lifetimes pairLifetimes(const Trace& trace, const std::vector<EventIndexList>& orders) {
    Lifetimes out;
    out.free_of.assign(trace.events.size(), kNoEvent);
    out.ghost_free.assign(trace.events.size(), 0);
    AddressMap<uint64_t> open;
    for (const auto& order : orders) {
        open.clear();
        for (uint64_t ti : order) {
            const Event& e = trace.events[ti];
            if (e.kind == EventKind::Alloc) {
                open.put(e.address, ti);
            } else if (e.kind == EventKind::FreeCompleted) {
                if (uint64_t alloc; open.take(e.address, alloc))
                    out.free_of[alloc] = ti;
                else
                    out.ghost_free[ti] = 1;
            }
        }
        open.forEach([&](uint64_t address, uint64_t ti) {
            out.open_at_end.insert(deviceKey(trace.events[ti].device, address));
        });
    }
    return out;
}

size_t allocCount(const Trace& trace, const EventIndexList& order) {
    size_t n = 0;
    for (uint64_t ti : order) n += trace.events[ti].kind == EventKind::Alloc;
    return n;
}

bool needsCategories(const Trace& trace) {
    for (const Event& e : trace.events)
        if ((e.kind == EventKind::Alloc || e.kind == EventKind::FreeCompleted) &&
            e.category == Category::Unknown)
            return true;
    return trace.allocator_state && !trace.allocator_state->blocks.empty();
}

// Blocks alive at the end that the trace never allocated were there before
// it began: decided by their frames where these say, then by the training's
// structure (splitPreTraceSets). Without any allocation in the trace (an end
// state alone) nothing says they outlived training steps: unknown.
std::vector<InferredCategory> inferBlockCategories(const Trace& trace, const Lifetimes& lives,
                                                   detail::TrainingActivity& activity) {
    std::vector<InferredCategory> out;
    if (!trace.allocator_state) return out;
    const AllocatorState& state = *trace.allocator_state;
    const bool history = std::any_of(trace.events.begin(), trace.events.end(),
                                     [](const Event& e) { return e.kind == EventKind::Alloc; });
    out.resize(state.blocks.size());
    std::vector<int16_t> device_of(state.blocks.size(), 0);
    for (const Segment& seg : state.segments)
        for (size_t k = 0; k < seg.block_count && seg.first_block + k < device_of.size(); ++k)
            device_of[seg.first_block + k] = seg.device;
    for (size_t i = 0; i < out.size(); ++i) {
        const Block& b = state.blocks[i];
        if (b.state != BlockState::ActiveAllocated) continue;
        if (lives.open_at_end.count(deviceKey(device_of[i], b.address))) continue;  // in the trace
        switch (activity.ofStack(b.stack)) {
            case detail::FrameActivity::Optimizer:
                out[i] = {Category::OptimizerState, CategoryRule::OptimizerBornKept};
                break;
            case detail::FrameActivity::Backward:
                out[i] = {Category::Gradient, CategoryRule::BackwardKept};
                break;
            case detail::FrameActivity::ModuleSetup:
                out[i] = {Category::Parameter, CategoryRule::ModuleSetupFrame};
                break;
            default:
                out[i] = history
                             ? InferredCategory{Category::Parameter, CategoryRule::AliveThroughout}
                             : InferredCategory{Category::Unknown, CategoryRule::Weak};
                break;
        }
    }
    return out;
}

// Whether the frames show a backward: a trace of one step (or less) without
// recorded steps still has a forward and a backward to find.
bool framesShowBackward(const Trace& trace, const EventIndexList& order,
                        detail::TrainingActivity& activity) {
    size_t backward = 0;
    for (uint64_t ti : order)
        backward += activity.ofStack(trace.events[ti].stack) == detail::FrameActivity::Backward;
    return backward >= 8;
}

// Whether the trace already says where its steps, forwards or backwards are
// (recorded, or found by its importer): then nothing is inferred over them.
bool hasTrainingPhases(const Trace& trace) {
    return std::any_of(trace.phases.begin(), trace.phases.end(), [](const Phase& p) {
        return p.kind == PhaseKind::Step || p.kind == PhaseKind::Forward ||
               p.kind == PhaseKind::Backward;
    });
}

std::string seconds(const Trace& trace, int64_t x, int64_t origin) {
    char buf[48];
    if (trace.metadata.time_base == TimeBase::EventIndex)
        std::snprintf(buf, sizeof buf, "event %lld", static_cast<long long>(x));
    else
        std::snprintf(buf, sizeof buf, "%.3f s", double(x - origin) * 1e-9);
    return buf;
}

}  // namespace

std::string_view toString(StepSource source) {
    switch (source) {
        case StepSource::None:
            return "none";
        case StepSource::Recorded:
            return "recorded";
        case StepSource::Inferred:
            return "inferred";
    }
    return "none";
}

StepSource stepSource(const Trace& trace) {
    StepSource source = StepSource::None;
    for (const Phase& p : trace.phases) {
        if (p.kind != PhaseKind::Step) continue;
        if (p.inferred) return StepSource::Inferred;
        source = StepSource::Recorded;
    }
    return source;
}

InferenceReport inferMissingLabels(Trace& trace, const TaskContext& ctx) {
    return inferMissingLabels(trace, detail::deviceOrder(trace), ctx);
}

InferenceReport inferMissingLabels(Trace& trace, const detail::DeviceOrder& order_by_device,
                                   const TaskContext& ctx) {
    InferenceReport report;
    const std::vector<int16_t>& devices = order_by_device.devices;
    const auto& orders = order_by_device.events;
    if (ctx.cancelled()) return report;

    // The busiest device carries the steps; on a trace of several devices
    // the phases found apply to that device.
    const bool find_steps = !hasTrainingPhases(trace) && !orders.empty();
    size_t busiest = 0, with_events = 0;
    // One device is the busiest, whatever it holds: its allocations are not
    // counted (a pass over a large trace's events).
    if (find_steps && orders.size() > 1) {
        size_t most = 0;
        for (size_t d = 0; d < orders.size(); ++d) {
            const size_t n = allocCount(trace, orders[d]);
            with_events += n > 0;
            if (n > most) most = n, busiest = d;
        }
    }
    static const EventIndexList kNoOrder;
    const EventIndexList& order = find_steps ? orders[busiest] : kNoOrder;
    // The optimizer's own ranges anchor the steps where PyTorch wrote them;
    // else the trace's repetition; else, where frames show a backward, the
    // trace is one step.
    std::vector<detail::StepWindow> windows;
    if (find_steps) windows = detail::stepsFromOptimizerRanges(trace, order, devices[busiest]);
    // The search for repetition and the pairing of lifetimes read the trace
    // alone: on two cores, side by side (a fifth of a large file's inference).
    const bool search_repetition = find_steps && windows.empty();
    Lifetimes lives;
    std::vector<detail::Window> repeated;
    parallelFor(search_repetition ? 2 : 1, 2, [&](size_t part) {
        if (part == 0)
            lives = pairLifetimes(trace, orders);
        else
            repeated = detail::findRepeatedSteps(trace, order, ctx);
    });

    if (find_steps) {
        detail::TrainingActivity frames_only(trace);
        std::string from = "the optimizer's recorded steps";
        if (search_repetition) {
            from = "repetition";
            if (repeated.size() >= 2) {
                windows = detail::unanchored(repeated);
            } else if (!ctx.cancelled() && framesShowBackward(trace, order, frames_only)) {
                windows = detail::unanchored({{0, order.size()}});
                from = "one step's stack frames";
            }
        }
        if (!windows.empty() && !ctx.cancelled()) {
            const int16_t device = with_events > 1 ? devices[busiest] : int16_t(-1);
            report.phases_from_frames =
                detail::addStepPhases(trace, order, windows, lives.free_of, frames_only, device);
            trace.metadata.setProperty(
                "phases", "inferred from " + from +
                              (report.phases_from_frames ? " and stack frames" : " and lifetimes"));
        }
    }
    report.steps_source = stepSource(trace);
    for (const Phase& p : trace.phases) report.steps += p.kind == PhaseKind::Step;
    if (ctx.cancelled()) return report;
    // Before the walks that read the trace side by side: it interns names.
    report.ops = inferOps(trace, ctx);
    if (ctx.cancelled()) return report;
    const auto categorize = [&] {
        detail::TrainingActivity activity(trace);
        trace.inferred_categories =
            detail::inferCategories(trace, lives.free_of, lives.ghost_free, activity);
        trace.inferred_block_categories = inferBlockCategories(trace, lives, activity);
        detail::splitPreTraceSets(trace, activity, trace.inferred_block_categories);
    };
    const bool categories = needsCategories(trace);
    if (categories && detail::modulesNeedFrameWalk(trace)) {
        // The walk over every allocation's frames for modules and the
        // categories only read the trace (the categories write their own
        // two members): side by side on two cores, the modules written after.
        detail::ModuleFrameWalk walk(trace);
        parallelFor(2, 2, [&](size_t part) {
            if (part == 0)
                walk.run(ctx);
            else
                categorize();
        });
        report.modules = walk.apply(trace, ctx);
    } else {
        report.modules = inferModules(trace, ctx);
        if (ctx.cancelled() || !categories) return report;
        categorize();
    }
    // Counted in halves on two cores: a large trace's events are 200 MB.
    const size_t n = trace.events.size();
    const unsigned parts = n >= (size_t(1) << 20) ? 2 : 1;
    std::array<std::array<uint64_t, 2>, 2> counts{};  // [part][unknown, inferred]
    parallelFor(parts, parts, [&](size_t part) {
        std::array<uint64_t, 2> c{};  // local: the two parts' counts share a cache line
        for (uint64_t i = n * part / parts; i < n * (part + 1) / parts; ++i)
            if (trace.categoryInferred(i))
                ++c[trace.inferred_categories[i].category != Category::Unknown];
        counts[part] = c;
    });
    for (const auto& c : counts) {
        report.categories_unknown += c[0];
        report.categories_inferred += c[1];
    }
    return report;
}

CategoryRuleLookup::CategoryRuleLookup(const Trace& trace) : trace_(trace) {
    if (!trace.allocator_state) return;
    const auto& blocks = trace.allocator_state->blocks;
    for (size_t i = 0; i < trace.inferred_block_categories.size() && i < blocks.size(); ++i)
        if (blocks[i].state == BlockState::ActiveAllocated)
            blocks_.push_back({blocks[i].address, trace.inferred_block_categories[i].rule});
    std::stable_sort(blocks_.begin(), blocks_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
}

namespace {

// The rule of an interval's alloc, else of its free; false when it has
// neither (a block alive before the trace and after it).
bool ruleOfEvents(const Trace& trace, const AllocationInterval& a, CategoryRule& rule) {
    const auto& inferred = trace.inferred_categories;
    if (a.alloc_event != kNoEvent && a.alloc_event < inferred.size()) {
        rule = inferred[a.alloc_event].rule;
        return true;
    }
    if (a.free_event != kNoEvent && a.free_event < inferred.size()) {
        rule = inferred[a.free_event].rule;
        return true;
    }
    return false;
}

}  // namespace

CategoryRule CategoryRuleLookup::of(const AllocationInterval& a) const {
    if (!a.category_inferred) return CategoryRule::Recorded;
    if (CategoryRule rule{}; ruleOfEvents(trace_, a, rule)) return rule;
    // The last block at the address, as the scan this replaces found it.
    const auto it =
        std::upper_bound(blocks_.begin(), blocks_.end(), a.address,
                         [](uint64_t address, const auto& block) { return address < block.first; });
    if (it != blocks_.begin() && std::prev(it)->first == a.address) return std::prev(it)->second;
    return CategoryRule::Weak;
}

std::string explainCategory(const Trace& trace, const DeviceTimeline& timeline,
                            const AllocationInterval& a) {
    const std::string name(toString(a.category));
    if (!a.category_inferred) return name + " (recorded)";
    // A hover: the block lookup (a sort of the end state) only for an
    // interval that has no event of its own.
    CategoryRule rule = CategoryRule::Weak;
    if (!ruleOfEvents(trace, a, rule)) rule = CategoryRuleLookup(trace).of(a);
    std::string out = name + " (inferred): " + std::string(describe(rule));
    const int64_t origin = timeline.start;
    auto where = [&](uint64_t event) {
        const PhaseId phase = trace.events[event].phase;
        std::string s = " at " + seconds(trace, trace.events[event].time, origin);
        if (!phase.isNull()) s += " (" + phasePath(trace, phase) + ")";
        return s;
    };
    out += a.alloc_event != kNoEvent ? "; born" + where(a.alloc_event) : "; born before the trace";
    out += a.free_event != kNoEvent ? ", freed" + where(a.free_event) : ", alive at the end";
    return out;
}

}  // namespace memscope
