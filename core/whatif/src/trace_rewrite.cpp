#include "trace_rewrite.h"

#include <algorithm>
#include <numeric>

namespace memscope::detail {
namespace {

// Addresses no allocator hands out: copies and moved allocations live here.
constexpr uint64_t kFreshBase = uint64_t{0x4000} << 48;

constexpr uint32_t kUnedited = UINT32_MAX;

// What memscope inferred for a measured event, or nothing (rule Recorded).
InferredCategory inferredOf(const Trace& trace, uint64_t event) {
    return event < trace.inferred_categories.size() ? trace.inferred_categories[event]
                                                    : InferredCategory{};
}

// Fresh addresses, one after the other, each 512-byte aligned as the
// caching allocator rounds.
uint64_t takeFreshAddress(uint64_t& next, uint64_t size) {
    const uint64_t a = next;
    next += (std::max<uint64_t>(size, 1) + 511) / 512 * 512;
    return a;
}

}  // namespace

// An event of the predicted trace before it is emitted.
struct TraceRewrite::Pending {
    int64_t time = 0;
    OrderKey order = OrderKey::synthetic(0);
    Event event;
    uint64_t origin = kNoEvent;  // the measured event it came from
    InferredCategory inferred;

    friend bool operator<(const Pending& a, const Pending& b) {
        return a.time != b.time ? a.time < b.time : a.order < b.order;
    }
};

// The predicted clock: gaps in measured order, a gap's own time starting
// after every gap before it (equal `after`: in the order they were inserted).
class TraceRewrite::GapTimes {
public:
    explicit GapTimes(const std::vector<GapSpec>& gaps)
        : sorted_after_(gaps.size()), shift_before_(gaps.size() + 1, 0), gap_base_(gaps.size()) {
        std::vector<size_t> by_after(gaps.size());
        std::iota(by_after.begin(), by_after.end(), size_t{0});
        std::stable_sort(by_after.begin(), by_after.end(),
                         [&](size_t a, size_t b) { return gaps[a].after < gaps[b].after; });
        for (size_t k = 0; k < by_after.size(); ++k) {
            const GapSpec& g = gaps[by_after[k]];
            sorted_after_[k] = g.after;
            shift_before_[k + 1] = shift_before_[k] + g.duration;
            gap_base_[by_after[k]] = g.after + shift_before_[k] + 1;
        }
    }
    // A measured time t moves by every gap inserted before it (after < t).
    int64_t map(int64_t t) const {
        const auto k = size_t(std::lower_bound(sorted_after_.begin(), sorted_after_.end(), t) -
                              sorted_after_.begin());
        return t + shift_before_[k];
    }
    int64_t gapStart(size_t gap) const { return gap_base_[gap]; }
    int64_t place(const Place& p) const { return p.gap ? gap_base_[*p.gap] + p.time : map(p.time); }

private:
    std::vector<int64_t> sorted_after_, shift_before_, gap_base_;
};

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
        // Where the measured free was.
        c.free = {free, std::nullopt, OrderKey::after(a.free_event, OrderKey::Slot::Beside)};
    } else {
        c.free = {free, std::nullopt, synthetic()};
    }
    copies_.push_back(c);
}

void TraceRewrite::moveFree(uint32_t id, int64_t measured_time) {
    Edit& e = edits_[id];
    e.free = Place{measured_time, std::nullopt, synthetic()};
    // Freed later than measured: its address may have been reused meanwhile.
    if (measured_time > device_.intervals[id].end) e.fresh_address = true;
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
    c.birth = {time, std::nullopt, OrderKey::after(done, OrderKey::Slot::TemporaryBirth)};
    c.free = {time, std::nullopt, OrderKey::after(done, OrderKey::Slot::TemporaryFree)};
    c.phase = measured_.events[device_.intervals[id].alloc_event].phase;
    c.category = Category::Temporary;
    c.size = size;
    copies_.push_back(c);
}

void TraceRewrite::freeWhenComplete(uint32_t id) {
    const uint64_t done = completion(id);
    edits_[id].free = Place{measured_.events[done].time, std::nullopt,
                            OrderKey::after(done, OrderKey::Slot::FreeWhenComplete)};
}

void TraceRewrite::moveBirth(uint32_t id, int64_t measured_time) {
    Edit& e = edits_[id];
    e.birth = Place{measured_time, std::nullopt, synthetic()};
    e.fresh_address = true;
}

void TraceRewrite::moveBirthToCompletion(uint32_t id, uint32_t other) {
    const uint64_t done = completion(other);
    Edit& e = edits_[id];
    e.birth = Place{measured_.events[done].time, std::nullopt,
                    OrderKey::after(done, OrderKey::Slot::Beside)};
    e.fresh_address = true;
}

// Which measured events belong to edited allocations (free_requested events
// too: by address, in order); kUnedited for the rest. Flat, not hashed: every
// event is looked up. Empty when nothing is edited.
std::vector<uint32_t> TraceRewrite::editedEvents() const {
    if (edits_.empty()) return {};
    const auto& events = measured_.events;
    std::vector<uint32_t> edited_event(events.size(), kUnedited);
    std::unordered_map<uint64_t, uint32_t> live_edited;  // address -> allocation
    for (const auto& [id, e] : edits_) edited_event[device_.intervals[id].alloc_event] = id;
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
    return edited_event;
}

// The edited allocations' events where their edits put them (dropped ones
// left out), each marked in `stays` as not kept in place.
std::vector<TraceRewrite::Pending> TraceRewrite::movedEvents(
    const GapTimes& times, std::span<const uint32_t> edited_event,
    const std::unordered_map<uint32_t, uint64_t>& moved_address,
    std::vector<uint8_t>& stays) const {
    const auto& events = measured_.events;
    std::vector<Pending> moved;
    moved.reserve(copies_.size() * 2 + edits_.size() * 2 + 64);
    for (uint64_t i = 0; i < edited_event.size(); ++i) {
        const uint32_t id = edited_event[i];
        if (id == kUnedited) continue;
        stays[i] = 0;
        const Edit& e = edits_.at(id);
        if (e.dropped) continue;
        Pending p;
        p.event = events[i];
        p.origin = i;
        p.inferred = inferredOf(measured_, i);
        p.time = times.map(events[i].time);
        p.order = OrderKey::after(i, OrderKey::Slot::Event);
        const bool birth = events[i].kind == EventKind::Alloc;
        if (const std::optional<Place>& to = birth ? e.birth : e.free) {
            p.time = times.place(*to);
            p.order = to->order;
            // A free that moved happens where its allocation was made.
            if (!birth && device_.intervals[id].alloc_event != kNoEvent)
                p.event.phase = events[device_.intervals[id].alloc_event].phase;
            // Born beside another allocation: in that one's phase.
            if (birth && !to->gap)
                if (const auto beside = to->order.event(); beside && *beside < events.size())
                    p.event.phase = events[*beside].phase;
        }
        if (auto it = moved_address.find(id); it != moved_address.end())
            p.event.address = it->second;
        p.event.time = p.time;
        moved.push_back(p);
    }
    // A free given to an allocation the measured run never freed (a gradient
    // of the last step, alive when the trace ended, that the fused optimizer
    // frees): made here, in id order so that equal places stay in one order.
    for (uint32_t id : freedAtLast()) {
        const AllocationInterval& a = device_.intervals[id];
        const Edit& e = edits_.at(id);
        Pending p;
        p.event = events[a.alloc_event];
        p.event.kind = EventKind::FreeCompleted;
        p.inferred = inferredOf(measured_, a.alloc_event);
        p.time = times.place(*e.free);
        p.order = e.free->order;
        if (auto it = moved_address.find(id); it != moved_address.end())
            p.event.address = it->second;
        p.event.time = p.time;
        moved.push_back(p);
    }
    return moved;
}

std::vector<uint32_t> TraceRewrite::freedAtLast() const {
    std::vector<uint32_t> ids;
    for (const auto& [id, e] : edits_) {
        const AllocationInterval& a = device_.intervals[id];
        if (!e.dropped && e.free && a.free_event == kNoEvent && a.alloc_event != kNoEvent)
            ids.push_back(id);
    }
    std::sort(ids.begin(), ids.end());
    return ids;
}

// Each copy's birth and free, at fresh addresses.
void TraceRewrite::addCopies(const GapTimes& times, uint64_t& fresh,
                             std::vector<Pending>& out) const {
    const auto& events = measured_.events;
    for (const Copy& c : copies_) {
        const AllocationInterval& a = device_.intervals[c.id];
        const bool recorded = a.alloc_event != kNoEvent;
        const uint64_t size = c.size ? c.size : a.size;
        Pending birth;
        birth.event = recorded ? events[a.alloc_event] : Event{};
        birth.event.kind = EventKind::Alloc;
        birth.event.address = takeFreshAddress(fresh, size);
        birth.event.size = size;
        birth.event.phase = c.phase;
        birth.inferred = recorded ? inferredOf(measured_, a.alloc_event) : InferredCategory{};
        if (c.category) {
            birth.event.category = *c.category;
            birth.inferred = {};
        }
        birth.time = times.place(c.birth);
        birth.order = c.birth.order;
        birth.event.time = birth.time;
        Pending death = birth;
        death.event.kind = EventKind::FreeCompleted;
        death.time = std::max(times.place(c.free), birth.time);
        death.order =
            death.time == birth.time ? std::max(c.free.order, birth.order.next()) : c.free.order;
        death.event.time = death.time;
        out.push_back(birth);
        out.push_back(death);
    }
}

// The measured run's tables, its phases in the predicted clock, and the
// recompute phases in their gaps.
void TraceRewrite::copyTables(const GapTimes& times, Trace& t) const {
    t.metadata = measured_.metadata;
    t.strings = measured_.strings;
    for (const Frame& f : measured_.frames()) t.internFrame(f);
    for (size_t s = 1; s < measured_.stackCount(); ++s)
        t.internStack(measured_.stack(StackId(static_cast<uint32_t>(s))));
    for (size_t s = 1; s < measured_.streams.size(); ++s) t.internStream(measured_.streams[s]);
    for (Phase p : measured_.phases) {
        p.start = times.map(p.start);
        p.end = times.map(p.end);
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
        p.start = times.gapStart(np.gap);
        p.end = p.start + gaps_[np.gap].duration;
        t.phases.push_back(p);
    }
    for (Annotation a : measured_.annotations) {
        a.time = times.map(a.time);
        t.annotations.push_back(a);
    }
}

// The events that keep their place (in measured order, which the map of
// times keeps) merged with the sorted others, and their attributes.
void TraceRewrite::mergeEvents(const GapTimes& times, std::vector<Pending> moved,
                               std::vector<uint8_t> stays, Trace& t) const {
    const auto& events = measured_.events;
    auto staying = [&](uint64_t i) {
        Pending p;
        p.event = events[i];
        p.origin = i;
        p.inferred = inferredOf(measured_, i);
        p.time = times.map(events[i].time);
        p.event.time = p.time;
        p.order = OrderKey::after(i, OrderKey::Slot::Event);
        return p;
    };
    // A trace whose events are not in time order is sorted whole.
    const bool in_order =
        std::is_sorted(events.begin(), events.end(),
                       [](const Event& a, const Event& b) { return a.time < b.time; });
    if (!in_order) {
        for (uint64_t i = 0; i < events.size(); ++i)
            if (stays[i]) moved.push_back(staying(i));
        std::fill(stays.begin(), stays.end(), 0);
    }
    std::stable_sort(moved.begin(), moved.end());

    std::vector<uint64_t> new_index(events.size(), kNoEvent);
    const size_t total =
        static_cast<size_t>(std::count(stays.begin(), stays.end(), uint8_t{1})) + moved.size();
    t.events.reserve(total);
    const bool inferred_out = !measured_.inferred_categories.empty() ||
                              std::any_of(moved.begin(), moved.end(), [](const Pending& p) {
                                  return p.inferred.rule != CategoryRule::Recorded;
                              });
    if (inferred_out) t.inferred_categories.reserve(total);
    auto emit = [&](const Pending& p) {
        if (p.origin != kNoEvent) new_index[p.origin] = t.events.size();
        t.events.push_back(p.event);
        if (inferred_out) t.inferred_categories.push_back(p.inferred);
    };
    size_t m = 0;
    for (uint64_t i = 0; i < events.size(); ++i) {
        if (!stays[i]) continue;
        const Pending p = staying(i);
        while (m < moved.size() && moved[m] < p) emit(moved[m++]);
        emit(p);
    }
    while (m < moved.size()) emit(moved[m++]);
    for (const EventAttribute& a : measured_.attributes)
        if (a.event < new_index.size() && new_index[a.event] != kNoEvent)
            t.attributes.push_back({new_index[a.event], a.key, a.value});
    std::stable_sort(
        t.attributes.begin(), t.attributes.end(),
        [](const EventAttribute& a, const EventAttribute& b) { return a.event < b.event; });
}

// The end state stays the measured one, so that what was alive before the
// trace began is found (and categorized) the same way. A block whose
// allocation moved to a fresh address is that allocation's no more.
void TraceRewrite::copyEndState(const std::unordered_map<uint32_t, uint64_t>& moved_address,
                                Trace& t) const {
    t.allocator_state = measured_.allocator_state;
    t.inferred_block_categories = measured_.inferred_block_categories;
    const std::vector<uint32_t> freed = freedAtLast();
    if (!t.allocator_state || (moved_address.empty() && freed.empty())) return;
    std::unordered_map<uint64_t, size_t> active;  // address -> block
    for (size_t i = 0; i < t.allocator_state->blocks.size(); ++i)
        if (t.allocator_state->blocks[i].state == BlockState::ActiveAllocated)
            active.emplace(t.allocator_state->blocks[i].address, i);
    auto release = [&](uint32_t id) {
        const AllocationInterval& a = device_.intervals[id];
        auto it = a.free_event == kNoEvent ? active.find(a.address) : active.end();
        if (it != active.end()) t.allocator_state->blocks[it->second].state = BlockState::Inactive;
    };
    for (const auto& [id, address] : moved_address) release(id);
    // Freed by the prediction before the end: no longer active there.
    for (uint32_t id : freed) release(id);
}

// The modules, their scopes in the predicted clock, and the recomputes' scopes.
void TraceRewrite::copyModules(const GapTimes& times, Trace& t) const {
    t.modules.source = measured_.modules.source;
    for (const Module& m : measured_.modules.modules) t.modules.add(m);
    for (ModuleScope s : measured_.modules.scopes) {
        const int64_t end = times.map(s.end);
        s.start = times.map(s.start);
        s.end = end;
        t.modules.scopes.push_back(s);
    }
    for (const NewScope& s : scopes_)
        t.modules.scopes.push_back({times.gapStart(s.gap) + s.offset,
                                    times.gapStart(s.gap) + s.offset + s.length, s.module,
                                    ModuleScopeKind::Recompute});
}

Trace TraceRewrite::build(const Prediction& prediction,
                          const std::vector<int64_t>& recompute_per_step) const {
    const GapTimes times(gaps_);
    const std::vector<uint32_t> edited_event = editedEvents();
    // Allocations that move get fresh addresses, then the copies theirs.
    uint64_t fresh = kFreshBase;
    std::unordered_map<uint32_t, uint64_t> moved_address;
    for (const auto& [id, e] : edits_)
        if (e.fresh_address && !e.dropped)
            moved_address[id] = takeFreshAddress(fresh, device_.intervals[id].size);
    // `stays`: 1 for an event that keeps its place, 0 for one dropped or
    // moved. Large traces are not copied a second time.
    std::vector<uint8_t> stays(measured_.events.size(), 1);
    std::vector<Pending> moved = movedEvents(times, edited_event, moved_address, stays);
    addCopies(times, fresh, moved);

    Trace t;
    copyTables(times, t);
    t.metadata.name = predictedRunName(prediction);
    mergeEvents(times, std::move(moved), std::move(stays), t);
    copyEndState(moved_address, t);
    copyModules(times, t);
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
