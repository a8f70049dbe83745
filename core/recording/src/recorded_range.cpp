#include "memscope/recording/recorded_range.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "memscope/recording/phase_assignment.h"

namespace memscope {
namespace {

struct Place {
    int16_t device;
    uint64_t address;
    bool operator==(const Place&) const = default;
};
struct PlaceHash {
    size_t operator()(const Place& p) const {
        return std::hash<uint64_t>{}(p.address * 0x9E3779B97F4A7C15ull ^ uint64_t(p.device));
    }
};

bool opensSegment(EventKind k) {
    return k == EventKind::SegmentAlloc || k == EventKind::SegmentMap;
}
bool closesSegment(EventKind k) {
    return k == EventKind::SegmentFree || k == EventKind::SegmentUnmap;
}

std::string stepsText(int32_t a, int32_t b) {
    return a == b ? "step " + std::to_string(a)
                  : "steps " + std::to_string(a) + "-" + std::to_string(b);
}

Result<std::pair<int64_t, int64_t>> findStepRange(const Trace& t, int32_t first, int32_t last) {
    if (first > last)
        return makeError("--steps " + std::to_string(first) + ":" + std::to_string(last) +
                         ": the first step is after the last");
    std::optional<int64_t> start, end;
    int32_t lowest = INT32_MAX, highest = -1;
    for (const Phase& p : t.phases) {
        if (p.kind != PhaseKind::Step || p.step < 0) continue;
        lowest = std::min(lowest, p.step);
        highest = std::max(highest, p.step);
        if (p.step == first) start = start ? std::min(*start, p.start) : p.start;
        if (p.step >= first && p.step <= last) end = end ? std::max(*end, p.end) : p.end;
    }
    if (!start) {
        if (highest < 0)
            return makeError("--steps " + std::to_string(first) + ":" + std::to_string(last) +
                             ": the job ran no training step that memscope saw, so nothing "
                             "was recorded");
        return makeError("--steps " + std::to_string(first) + ":" + std::to_string(last) +
                         ": the job ended before step " + std::to_string(first) +
                         " (it ran steps " + std::to_string(lowest) + "-" +
                         std::to_string(highest) + ")");
    }
    return std::pair{*start, std::max(*start, *end)};
}

Result<std::pair<int64_t, int64_t>> findNvtxRange(const Trace& t, const RecordedRangeSpec& spec,
                                                  int64_t trace_end) {
    const Phase* found = nullptr;
    for (const Phase& p : t.phases)
        if (t.string(p.name) == *spec.nvtx && (!found || p.start < found->start)) found = &p;
    // An open range runs to the trace's end, which may be before it began.
    if (found)
        return std::pair{found->start, found->end > found->start
                                           ? found->end
                                           : std::max(found->start, trace_end)};
    if (spec.nvtx_hint) return *spec.nvtx_hint;
    return makeError("--capture-range nvtx:" + *spec.nvtx + ": no NVTX range of that name was " +
                     "seen (torch.cuda.nvtx.range_push or, with CUDA, any NVTX push), so " +
                     "nothing was recorded");
}

// The attributes of event `index` (attributes are sorted by event).
std::span<const EventAttribute> attributesOf(const Trace& t, uint64_t index) {
    auto lo = std::lower_bound(t.attributes.begin(), t.attributes.end(), index,
                               [](const EventAttribute& a, uint64_t i) { return a.event < i; });
    auto hi = lo;
    while (hi != t.attributes.end() && hi->event == index) ++hi;
    return {lo, hi};
}

// Module (or op) scopes that overlap [start, end], clipped to it. The
// modules stay: ids are indices, and a module whose scopes all fell outside
// costs nothing.
template <typename Table>
void clipScopes(Table& table, int64_t start, int64_t end) {
    using Scope = typename decltype(table.scopes)::value_type;
    std::vector<Scope> kept;
    kept.reserve(table.scopes.size());
    for (Scope s : table.scopes) {
        if (s.end < start || s.start > end) continue;
        s.start = std::max(s.start, start);
        // The range keeps the events at its end: so does a scope running past it.
        s.end = std::min(s.end, end == INT64_MAX ? end : end + 1);
        // One that only touches the range holds none of its events.
        if (s.end <= s.start) continue;
        kept.push_back(s);
    }
    table.scopes = std::move(kept);
}

}  // namespace

Result<RecordedRange> applyRecordedRange(Trace& trace, const RecordedRangeSpec& spec,
                                         const TaskContext& ctx) {
    (void)ctx;
    if (spec.empty()) return makeError("no recorded range was asked for");
    const int64_t trace_end = trace.events.empty() ? 0 : trace.events.back().time;
    auto found = spec.steps ? findStepRange(trace, spec.steps->first, spec.steps->second)
                            : findNvtxRange(trace, spec, trace_end);
    if (!found) return found.error();
    RecordedRange range;
    range.start = found->first;
    range.end = found->second;

    auto& ev = trace.events;
    const size_t first =
        size_t(std::lower_bound(ev.begin(), ev.end(), range.start,
                                [](const Event& e, int64_t t) { return e.time < t; }) -
               ev.begin());
    const size_t stop =
        size_t(std::upper_bound(ev.begin(), ev.end(), range.end,
                                [](int64_t t, const Event& e) { return t < e.time; }) -
               ev.begin());
    const bool cuts_end = stop < ev.size();

    // What is alive when the range begins.
    std::unordered_map<Place, size_t, PlaceHash> blocks, segments;
    std::unordered_set<Place, PlaceHash> ever_allocated, ever_opened;
    for (size_t i = 0; i < ev.size(); ++i) {
        const Event& e = ev[i];
        const Place at{e.device, e.address};
        if (e.kind == EventKind::Alloc) ever_allocated.insert(at);
        if (opensSegment(e.kind)) ever_opened.insert(at);
        if (i >= first) continue;
        if (e.kind == EventKind::Alloc)
            blocks[at] = i;
        else if (e.kind == EventKind::FreeCompleted)
            blocks.erase(at);
        else if (opensSegment(e.kind))
            segments[at] = i;
        else if (closesSegment(e.kind))
            segments.erase(at);
    }
    std::vector<size_t> carried;
    for (const auto& [at, i] : segments) carried.push_back(i);
    for (const auto& [at, i] : blocks) carried.push_back(i);
    std::sort(carried.begin(), carried.end());

    std::vector<Event> out;
    std::vector<EventAttribute> attrs;
    const StringId allocated_at = trace.internString("allocated_at_ns");
    const StringId before_recording = trace.internString("before the recording");
    auto carry = [&](Event e, std::span<const EventAttribute> own, StringId when) {
        const uint64_t index = out.size();
        e.time = range.start;
        for (EventAttribute a : own) {
            a.event = index;
            attrs.push_back(a);
        }
        attrs.push_back({index, allocated_at, when});
        if (e.kind == EventKind::Alloc) range.alive_bytes += e.size;
        ++range.alive_at_start;
        out.push_back(e);
    };
    for (size_t i : carried)
        carry(ev[i], attributesOf(trace, i), trace.internString(std::to_string(ev[i].time)));
    // Blocks of the end state that no event allocated were alive all along:
    // carried in too where the end state goes (it is later than the range).
    if (cuts_end && trace.allocator_state) {
        const AllocatorState& state = *trace.allocator_state;
        for (const Segment& s : state.segments) {
            const uint32_t stream = trace.internStream(s.stream);  // raw value -> index
            // What the end state knows of a segment or block, as an event.
            auto known = [&](EventKind kind, uint64_t address, uint64_t size, StackId stack) {
                Event e;
                e.kind = kind;
                e.address = address;
                e.size = size;
                e.device = s.device;
                e.stream = stream;
                e.stack = stack;
                return e;
            };
            if (!ever_opened.count({s.device, s.address}))
                carry(known(EventKind::SegmentAlloc, s.address, s.total_size, s.stack), {},
                      before_recording);
            for (const Block& b : state.blocksOf(s))
                if (b.state != BlockState::Inactive && !ever_allocated.count({s.device, b.address}))
                    carry(known(EventKind::Alloc, b.address, b.size, b.stack), {},
                          before_recording);
        }
    }
    const uint64_t shift = out.size();
    for (const EventAttribute& a : trace.attributes)
        if (a.event >= first && a.event < stop)
            attrs.push_back({a.event - first + shift, a.key, a.value});
    out.insert(out.end(), ev.begin() + long(first), ev.begin() + long(stop));
    ev = std::move(out);
    trace.attributes = std::move(attrs);
    if (cuts_end) {
        // The end state is from after the range: it no longer describes its end.
        trace.allocator_state.reset();
        trace.inferred_block_categories.clear();
    }

    // Phases: those that overlap the range, clipped to it.
    std::vector<PhaseId> remap(trace.phases.size() + 1);
    std::vector<Phase> kept;
    for (size_t i = 0; i < trace.phases.size(); ++i) {
        Phase p = trace.phases[i];
        const bool open = p.end <= p.start;
        const int64_t end = open ? INT64_MAX : p.end;  // open: to the end
        if (end < range.start || p.start > range.end) continue;
        p.start = std::max(p.start, range.start);
        p.end = std::min(end, range.end);
        // A closed phase that only touches the range (it ends where the range
        // starts, or starts where it ends) is not part of it: cut to that
        // point it would read as still open (end == start).
        if (!open && p.end == p.start) continue;
        kept.push_back(p);
        remap[i + 1] = PhaseId(uint32_t(kept.size()));
    }
    for (Phase& p : kept)
        p.parent = p.parent.value < remap.size() ? remap[p.parent.value] : PhaseId();
    trace.phases = std::move(kept);
    clipScopes(trace.modules, range.start, range.end);
    clipScopes(trace.ops, range.start, range.end);
    std::erase_if(trace.annotations,
                  [&](const Annotation& a) { return a.time < range.start || a.time > range.end; });
    assignInnermostPhases(trace);

    const std::string what =
        spec.steps ? stepsText(spec.steps->first, spec.steps->second) : "NVTX range " + *spec.nvtx;
    trace.metadata.setProperty("recorded_range", what);
    trace.metadata.setProperty("recorded_range.start_ns", std::to_string(range.start));
    trace.metadata.setProperty("recorded_range.end_ns", std::to_string(range.end));
    trace.metadata.setProperty("recorded_range.alive_at_start",
                               std::to_string(range.alive_at_start) + " blocks and segments, " +
                                   std::to_string(range.alive_bytes) + " B in blocks");
    return range;
}

}  // namespace memscope
