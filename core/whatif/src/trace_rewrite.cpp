#include "trace_rewrite.h"

#include <algorithm>
#include <numeric>

namespace memscope::detail {
namespace {

// Addresses no allocator hands out: copies and moved allocations live here.
constexpr uint64_t kFreshBase = uint64_t{0x4000} << 48;

struct Pending {
    int64_t time = 0;
    uint64_t order = 0;
    Event event;
    uint64_t origin = kNoEvent;  // the measured event it came from
    InferredCategory inferred;
};

}  // namespace

TraceRewrite::Gap TraceRewrite::insertGap(int64_t after, int64_t duration) {
    gaps_.push_back({after, std::max<int64_t>(duration, 0)});
    return Gap{gaps_.size() - 1};
}

PhaseId TraceRewrite::addRecomputePhase(Gap gap, std::string name, int32_t block, PhaseId parent) {
    phases_.push_back({gap.index, std::move(name), block, parent});
    return PhaseId(static_cast<uint32_t>(measured_.phases.size() + phases_.size()));
}

void TraceRewrite::addRecomputeScopes(Gap gap, int64_t start, int64_t end, double scale) {
    auto scaled = [scale](int64_t t) {
        return static_cast<int64_t>(static_cast<double>(t) * scale);
    };
    for (const ModuleScope& s : measured_.modules.scopes)
        if (s.kind == ModuleScopeKind::Forward && s.start >= start && s.end <= end &&
            s.end > s.start)
            scopes_.push_back(
                {gap.index, scaled(s.start - start), scaled(s.end - s.start), s.module});
}

void TraceRewrite::addCopy(uint32_t id, Gap gap, int64_t alloc_offset, At at, int64_t free,
                           PhaseId phase) {
    Copy c;
    c.id = id;
    c.birth = {alloc_offset, gap.index, synthetic()};
    c.phase = phase;
    const AllocationInterval& a = device_.intervals[id];
    if (at == At::InGap) {
        c.free = {free, gap.index, synthetic()};
    } else if (free == a.end && a.free_event != kNoEvent) {
        c.free = {free, std::nullopt, afterEvent(a.free_event, 1)};  // where the measured free was
    } else {
        c.free = {free, std::nullopt, synthetic()};
    }
    copies_.push_back(c);
}

void TraceRewrite::moveFree(uint32_t id, int64_t measured_time) {
    edits_[id].free = Place{measured_time, std::nullopt, synthetic()};
}

void TraceRewrite::moveFreeIntoGap(uint32_t id, Gap gap, int64_t offset) {
    Edit& e = edits_[id];
    e.free = Place{offset, gap.index, synthetic()};
    // Freed later than measured: its address may have been reused meanwhile.
    e.fresh_address = true;
}

void TraceRewrite::drop(uint32_t id) {
    edits_[id].dropped = true;
}

uint64_t TraceRewrite::completion(uint32_t id) const {
    const uint64_t born = device_.intervals[id].alloc_event;
    const auto& order = device_.trace_events;
    auto at = std::lower_bound(order.begin(), order.end(), born);
    if (at == order.end()) return born;
    while (std::next(at) != order.end() &&
           measured_.events[*std::next(at)].kind != EventKind::Alloc)
        ++at;
    return *at;
}

void TraceRewrite::addTemporaryAfter(uint32_t id, uint64_t size) {
    const uint64_t done = completion(id);
    const int64_t time = measured_.events[done].time;
    Copy c;
    c.id = id;
    c.birth = {time, std::nullopt, afterEvent(done, 2)};
    c.free = {time, std::nullopt, afterEvent(done, 3)};
    c.phase = measured_.events[device_.intervals[id].alloc_event].phase;
    c.category = Category::Temporary;
    c.size = size;
    copies_.push_back(c);
}

void TraceRewrite::freeWhenComplete(uint32_t id) {
    const uint64_t done = completion(id);
    edits_[id].free = Place{measured_.events[done].time, std::nullopt, afterEvent(done, 4)};
}

void TraceRewrite::moveBirth(uint32_t id, int64_t measured_time) {
    Edit& e = edits_[id];
    e.birth = Place{measured_time, std::nullopt, synthetic()};
    e.fresh_address = true;
}

void TraceRewrite::moveBirthToCompletion(uint32_t id, uint32_t other) {
    const uint64_t done = completion(other);
    Edit& e = edits_[id];
    e.birth = Place{measured_.events[done].time, std::nullopt, afterEvent(done, 1)};
    e.fresh_address = true;
}

Trace TraceRewrite::build(const Prediction& prediction,
                          const std::vector<int64_t>& recompute_per_step) const {
    // Gaps in measured order; a gap's own time starts after every gap before
    // it (equal `after`: in the order they were inserted).
    std::vector<size_t> by_after(gaps_.size());
    std::iota(by_after.begin(), by_after.end(), size_t{0});
    std::stable_sort(by_after.begin(), by_after.end(),
                     [&](size_t a, size_t b) { return gaps_[a].after < gaps_[b].after; });
    std::vector<int64_t> sorted_after(gaps_.size()), shift_before(gaps_.size() + 1, 0);
    std::vector<int64_t> gap_base(gaps_.size());
    for (size_t k = 0; k < by_after.size(); ++k) {
        const GapSpec& g = gaps_[by_after[k]];
        sorted_after[k] = g.after;
        shift_before[k + 1] = shift_before[k] + g.duration;
        gap_base[by_after[k]] = g.after + shift_before[k] + 1;
    }
    // A measured time t moves by every gap inserted before it (after < t).
    auto map = [&](int64_t t) {
        const size_t k = static_cast<size_t>(
            std::lower_bound(sorted_after.begin(), sorted_after.end(), t) - sorted_after.begin());
        return t + shift_before[k];
    };
    auto place = [&](const Place& p) { return p.gap ? gap_base[*p.gap] + p.time : map(p.time); };

    const auto& events = measured_.events;
    const bool has_inferred = !measured_.inferred_categories.empty();
    auto inferredOf = [&](uint64_t i) {
        return has_inferred && i < measured_.inferred_categories.size()
                   ? measured_.inferred_categories[i]
                   : InferredCategory{};
    };

    // Which measured events belong to edited allocations (free_requested
    // events too: by address, in order).
    // Flat, not hashed: every event is looked up.
    constexpr uint32_t kUnedited = UINT32_MAX;
    std::vector<uint32_t> edited_event(edits_.empty() ? 0 : events.size(), kUnedited);
    std::unordered_map<uint64_t, uint32_t> live_edited;  // address -> allocation
    for (const auto& [id, e] : edits_) edited_event[device_.intervals[id].alloc_event] = id;
    if (!edits_.empty()) {
        for (uint64_t i : device_.trace_events) {
            const Event& ev = events[i];
            if (ev.kind == EventKind::Alloc) {
                if (edited_event[i] != kUnedited)
                    live_edited[ev.address] = edited_event[i];
                else if (!live_edited.empty())
                    live_edited.erase(ev.address);
            } else if (ev.kind == EventKind::FreeRequested || ev.kind == EventKind::FreeCompleted) {
                auto it = live_edited.find(ev.address);
                if (it == live_edited.end()) continue;
                edited_event[i] = it->second;
                if (ev.kind == EventKind::FreeCompleted) live_edited.erase(it);
            }
        }
    }

    uint64_t fresh = kFreshBase;
    auto freshAddress = [&](uint64_t size) {
        const uint64_t a = fresh;
        fresh += (std::max<uint64_t>(size, 1) + 511) / 512 * 512;
        return a;
    };
    std::unordered_map<uint32_t, uint64_t> moved_address;
    for (const auto& [id, e] : edits_)
        if (e.fresh_address && !e.dropped)
            moved_address[id] = freshAddress(device_.intervals[id].size);

    // Events that keep their place stay in the measured order (the map of
    // times keeps it); the others are sorted apart and merged in.
    // `stays`: 1 for an event that keeps its place, 0 for one dropped or
    // moved (then in moved_out). Large traces are not copied a second time.
    std::vector<uint8_t> stays(events.size(), 1);
    std::vector<Pending> moved_out;
    moved_out.reserve(copies_.size() * 2 + edits_.size() * 2 + 64);
    for (uint64_t i = 0; i < events.size(); ++i) {
        if (edited_event.empty() || edited_event[i] == kUnedited) continue;
        Pending p;
        p.event = events[i];
        p.origin = i;
        p.inferred = inferredOf(i);
        p.time = map(events[i].time);
        p.order = afterEvent(i, 0);
        stays[i] = 0;
        {
            const uint32_t id = edited_event[i];
            const Edit& e = edits_.at(id);
            if (e.dropped) continue;
            const bool birth = events[i].kind == EventKind::Alloc;
            const std::optional<Place>& moved = birth ? e.birth : e.free;
            if (moved) {
                p.time = place(*moved);
                p.order = moved->order;
                // A free that moved happens where its allocation was made.
                if (!birth && device_.intervals[id].alloc_event != kNoEvent)
                    p.event.phase = events[device_.intervals[id].alloc_event].phase;
                if (birth && e.birth && !e.birth->gap) {
                    // Born beside another allocation: in that one's phase.
                    const uint64_t beside = moved->order / 8;
                    if (moved->order < (uint64_t{1} << 62) && beside < events.size())
                        p.event.phase = events[beside].phase;
                }
            }
            auto fresh_it = moved_address.find(id);
            if (fresh_it != moved_address.end()) p.event.address = fresh_it->second;
        }
        p.event.time = p.time;
        moved_out.push_back(p);
    }

    for (const Copy& c : copies_) {
        const AllocationInterval& a = device_.intervals[c.id];
        const Event tmpl = a.alloc_event != kNoEvent ? events[a.alloc_event] : Event{};
        const uint64_t size = c.size ? c.size : a.size;
        const uint64_t address = freshAddress(size);
        Pending birth;
        birth.event = tmpl;
        birth.event.kind = EventKind::Alloc;
        birth.event.address = address;
        birth.event.size = size;
        birth.event.phase = c.phase;
        birth.inferred = a.alloc_event != kNoEvent ? inferredOf(a.alloc_event) : InferredCategory{};
        if (c.category) {
            birth.event.category = *c.category;
            birth.inferred = {};
        }
        birth.time = place(c.birth);
        birth.order = c.birth.order;
        birth.event.time = birth.time;
        Pending death = birth;
        death.event.kind = EventKind::FreeCompleted;
        death.time = std::max(place(c.free), birth.time);
        death.order =
            death.time == birth.time ? std::max(c.free.order, birth.order + 1) : c.free.order;
        death.event.time = death.time;
        moved_out.push_back(birth);
        moved_out.push_back(death);
    }

    auto before = [](const Pending& a, const Pending& b) {
        return a.time != b.time ? a.time < b.time : a.order < b.order;
    };
    auto staying = [&](uint64_t i) {
        Pending p;
        p.event = events[i];
        p.origin = i;
        p.inferred = inferredOf(i);
        p.time = map(events[i].time);
        p.event.time = p.time;
        p.order = afterEvent(i, 0);
        return p;
    };
    // The measured events in time order keep it through the map of times; a
    // trace whose events are not is sorted whole.
    const bool in_order =
        std::is_sorted(events.begin(), events.end(),
                       [](const Event& a, const Event& b) { return a.time < b.time; });
    if (!in_order) {
        for (uint64_t i = 0; i < events.size(); ++i)
            if (stays[i]) moved_out.push_back(staying(i));
        std::fill(stays.begin(), stays.end(), 0);
    }
    std::stable_sort(moved_out.begin(), moved_out.end(), before);

    Trace t;
    t.metadata = measured_.metadata;
    t.metadata.name = predictedRunName(prediction);
    t.strings = measured_.strings;
    for (const Frame& f : measured_.frames()) t.internFrame(f);
    for (size_t s = 1; s < measured_.stackCount(); ++s)
        t.internStack(measured_.stack(StackId(static_cast<uint32_t>(s))));
    for (size_t s = 1; s < measured_.streams.size(); ++s) t.internStream(measured_.streams[s]);
    for (Phase p : measured_.phases) {
        p.start = map(p.start);
        p.end = map(p.end);
        t.phases.push_back(p);
    }
    for (const NewPhase& np : phases_) {
        Phase p;
        p.name = t.internString(np.name);
        p.kind = PhaseKind::Recompute;
        p.parent = np.parent;
        p.block = np.block;
        p.device = device_.device;
        const Phase* parent = measured_.phase(np.parent);
        p.step = parent ? parent->step : -1;
        p.start = gap_base[np.gap];
        p.end = p.start + gaps_[np.gap].duration;
        t.phases.push_back(p);
    }

    std::vector<uint64_t> new_index(events.size(), kNoEvent);
    const size_t total =
        static_cast<size_t>(std::count(stays.begin(), stays.end(), uint8_t{1})) + moved_out.size();
    t.events.reserve(total);
    const bool inferred_out =
        has_inferred || std::any_of(moved_out.begin(), moved_out.end(), [](const Pending& p) {
            return p.inferred.rule != CategoryRule::Recorded;
        });
    if (inferred_out) t.inferred_categories.reserve(total);
    auto emit = [&](const Pending& p) {
        if (p.origin != kNoEvent) new_index[p.origin] = t.events.size();
        t.events.push_back(p.event);
        if (inferred_out) t.inferred_categories.push_back(p.inferred);
    };
    // Merge the staying events (in order) with the sorted others.
    size_t m = 0;
    for (uint64_t i = 0; i < events.size(); ++i) {
        if (!stays[i]) continue;
        const Pending p = staying(i);
        while (m < moved_out.size() && before(moved_out[m], p)) emit(moved_out[m++]);
        emit(p);
    }
    while (m < moved_out.size()) emit(moved_out[m++]);
    for (const EventAttribute& a : measured_.attributes)
        if (a.event < new_index.size() && new_index[a.event] != kNoEvent)
            t.attributes.push_back({new_index[a.event], a.key, a.value});
    std::stable_sort(
        t.attributes.begin(), t.attributes.end(),
        [](const EventAttribute& a, const EventAttribute& b) { return a.event < b.event; });
    // The end state stays the measured one, so that what was alive before
    // the trace began is found (and categorized) the same way. A block whose
    // allocation moved to a fresh address is that allocation's no more.
    t.allocator_state = measured_.allocator_state;
    t.inferred_block_categories = measured_.inferred_block_categories;
    if (t.allocator_state && !moved_address.empty()) {
        std::unordered_map<uint64_t, size_t> active;  // address -> block
        for (size_t i = 0; i < t.allocator_state->blocks.size(); ++i)
            if (t.allocator_state->blocks[i].state == BlockState::ActiveAllocated)
                active.emplace(t.allocator_state->blocks[i].address, i);
        for (const auto& [id, address] : moved_address) {
            const AllocationInterval& a = device_.intervals[id];
            auto it = a.free_event == kNoEvent ? active.find(a.address) : active.end();
            if (it != active.end())
                t.allocator_state->blocks[it->second].state = BlockState::Inactive;
        }
    }
    for (Annotation a : measured_.annotations) {
        a.time = map(a.time);
        t.annotations.push_back(a);
    }

    t.modules.source = measured_.modules.source;
    for (const Module& m : measured_.modules.modules) t.modules.add(m);
    for (ModuleScope s : measured_.modules.scopes) {
        const int64_t end = map(s.end);
        s.start = map(s.start);
        s.end = end;
        t.modules.scopes.push_back(s);
    }
    for (const NewScope& s : scopes_)
        t.modules.scopes.push_back({gap_base[s.gap] + s.offset,
                                    gap_base[s.gap] + s.offset + s.length, s.module,
                                    ModuleScopeKind::Recompute});

    if (measured_.metrics) {
        RunMetrics m = *measured_.metrics;
        m.policy = prediction.policy;
        if (m.step_ns.size() == recompute_per_step.size()) {
            m.recompute_ns.resize(m.step_ns.size(), 0);
            for (size_t i = 0; i < m.step_ns.size(); ++i) {
                m.step_ns[i] += recompute_per_step[i];
                m.recompute_ns[i] += recompute_per_step[i];
            }
        }
        t.metrics = std::move(m);
    }
    t.prediction = prediction;
    return t;
}

}  // namespace memscope::detail
