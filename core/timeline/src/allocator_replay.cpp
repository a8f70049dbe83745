#include "memscope/timeline/allocator_replay.h"

#include <algorithm>
#include <iterator>
#include <map>

#include "memscope/base/address_map.h"
#include "memscope/base/units.h"

namespace memscope {

uint64_t ReplaySegment::activeBytes() const {
    uint64_t n = 0;
    for (const ReplayBlock& b : blocks) n += b.size;
    return n;
}

namespace {

struct SegRec {
    uint64_t size = 0;
    uint64_t stream = 0;
    bool expandable = false;
};

// Segments and live blocks keyed by address. Inactive blocks are not kept: they
// are the gaps, which is all a fragmentation view needs.
struct State {
    std::map<uint64_t, SegRec> segments;
    std::map<uint64_t, ReplayBlock> blocks;

    void addRange(uint64_t addr, uint64_t size, uint64_t stream, bool expandable) {
        segments[addr] = SegRec{size, stream, expandable};
    }
    // Removes [addr, addr + size) from every segment it overlaps, splitting
    // segments as needed (expandable segments unmap part of their range).
    void removeRange(uint64_t addr, uint64_t size) {
        const uint64_t end = addr + size;
        auto it = segments.upper_bound(addr);
        if (it != segments.begin()) --it;
        while (it != segments.end() && it->first < end) {
            const uint64_t s = it->first, e = it->first + it->second.size;
            if (e <= addr) {
                ++it;
                continue;
            }
            const SegRec rec = it->second;
            it = segments.erase(it);
            if (s < addr) segments[s] = SegRec{addr - s, rec.stream, rec.expandable};
            if (e > end)
                it = segments.emplace(end, SegRec{e - end, rec.stream, rec.expandable}).first;
        }
    }
};

// `category`: the event's category as analyses use it (recorded, else
// inferred: a CPU trace's blocks are labelled by inference alone).
void undo(State& st, const Event& e, Category category) {
    switch (e.kind) {
        case EventKind::Alloc:
            st.blocks.erase(e.address);
            break;
        case EventKind::FreeRequested: {
            auto it = st.blocks.find(e.address);
            if (it != st.blocks.end()) it->second.state = BlockState::ActiveAllocated;
            break;
        }
        case EventKind::FreeCompleted:
            st.blocks[e.address] =
                ReplayBlock{e.address, e.size, BlockState::ActiveAllocated, e.stack, category};
            break;
        case EventKind::SegmentAlloc:
            st.segments.erase(e.address);
            break;
        case EventKind::SegmentFree:
            st.addRange(e.address, e.size, e.stream, false);
            break;
        case EventKind::SegmentMap:
            st.removeRange(e.address, e.size);
            break;
        case EventKind::SegmentUnmap:
            st.addRange(e.address, e.size, e.stream, true);
            break;
        default:
            break;
    }
}

void apply(State& st, const Event& e, Category category) {
    switch (e.kind) {
        case EventKind::Alloc:
            st.blocks[e.address] =
                ReplayBlock{e.address, e.size, BlockState::ActiveAllocated, e.stack, category};
            break;
        case EventKind::FreeRequested: {
            auto it = st.blocks.find(e.address);
            if (it != st.blocks.end()) it->second.state = BlockState::ActivePendingFree;
            break;
        }
        case EventKind::FreeCompleted:
            st.blocks.erase(e.address);
            break;
        case EventKind::SegmentAlloc:
            st.addRange(e.address, e.size, e.stream, false);
            break;
        case EventKind::SegmentFree:
            st.segments.erase(e.address);
            break;
        case EventKind::SegmentMap:
            st.addRange(e.address, e.size, e.stream, true);
            break;
        case EventKind::SegmentUnmap:
            st.removeRange(e.address, e.size);
            break;
        default:
            break;
    }
}

// What undoing an address's events from the end back to a moment leaves:
// undo(Alloc) removes its block, undo(FreeCompleted) puts the freed block
// back, undo(FreeRequested) marks a block that is there as allocated. Read
// forwards, an address's first Alloc or FreeCompleted after the moment
// decides it and nothing after that matters; a FreeRequested before it only
// marks the end state's block allocated.
struct BlockFate {
    enum Kind : uint8_t { Requested, Allocated, Freed } kind = Requested;
    uint64_t event = 0;  // Freed: the FreeCompleted's Trace::events index
};

// The end-of-recording state in `st` (segments and blocks) undone back to the
// device-local event `last` (inclusive; -1 = before all), as undoing every
// later event one by one from the end would leave it. The blocks are decided
// in one forward pass with a flat table (a std::map insert or erase per
// event was most of a 1 GB snapshot's summary); the segment events, few,
// are undone one by one, backwards.
Result<void> undoToMoment(State& st, const Trace& trace, int16_t device, const EventIndexList& idx,
                          int64_t last, bool categories, const TaskContext& ctx) {
    const AllocatorState& end = *trace.allocator_state;
    for (const Segment& s : end.segments)
        if (s.device == device) st.addRange(s.address, s.total_size, s.stream, s.expandable);
    const size_t n = idx.size(), first = size_t(last + 1);
    constexpr size_t kReportEvery = 1 << 20;
    AddressMap<BlockFate> fates;
    std::vector<uint64_t> segment_events;
    for (size_t k = first; k < n; ++k) {
        const uint64_t ev = idx[k];
        const Event& e = trace.events[ev];
        switch (e.kind) {
            case EventKind::Alloc:
            case EventKind::FreeCompleted:
            case EventKind::FreeRequested: {
                BlockFate* f = fates.find(e.address);
                if (f && f->kind != BlockFate::Requested) break;  // decided earlier
                if (e.kind == EventKind::Alloc)
                    fates.put(e.address, {BlockFate::Allocated, ev});
                else if (e.kind == EventKind::FreeCompleted)
                    fates.put(e.address, {BlockFate::Freed, ev});
                else if (!f)
                    fates.put(e.address, {BlockFate::Requested, ev});
                break;
            }
            case EventKind::SegmentAlloc:
            case EventKind::SegmentFree:
            case EventKind::SegmentMap:
            case EventKind::SegmentUnmap:
                segment_events.push_back(ev);
                break;
            default:
                break;
        }
        if ((k + 1 - first) % kReportEvery == 0) {
            if (ctx.cancelled()) return cancelledError();
            ctx.report(k + 1 - first, n - first);
        }
    }
    for (auto it = segment_events.rbegin(); it != segment_events.rend(); ++it)
        undo(st, trace.events[*it], Category::Unknown);

    for (const Segment& s : end.segments) {
        if (s.device != device) continue;
        for (const Block& b : end.blocksOf(s)) {
            if (b.state == BlockState::Inactive) continue;
            const BlockFate* f = fates.find(b.address);
            if (f && f->kind != BlockFate::Requested) continue;
            st.blocks[b.address] =
                ReplayBlock{b.address, b.size, f ? BlockState::ActiveAllocated : b.state, b.stack,
                            Category::Unknown};
        }
    }
    fates.forEach([&](uint64_t address, const BlockFate& f) {
        if (f.kind != BlockFate::Freed) return;
        const Event& e = trace.events[f.event];
        st.blocks[address] =
            ReplayBlock{address, e.size, BlockState::ActiveAllocated, e.stack,
                        categories ? trace.categoryOf(f.event) : Category::Unknown};
    });
    return {};
}

// Device-local index of the last event with time <= t, or -1.
int64_t lastIndexAtOrBefore(const Trace& trace, const DeviceTimeline& tl, int64_t t) {
    const auto& idx = tl.trace_events;
    auto it = std::upper_bound(idx.begin(), idx.end(), t,
                               [&](int64_t v, uint64_t ev) { return v < trace.events[ev].time; });
    return int64_t(it - idx.begin()) - 1;
}

}  // namespace

Result<AllocatorSnapshotAt> allocatorStateAt(const Trace& trace, const DeviceTimeline& tl,
                                             int64_t time, const TaskContext& ctx) {
    if (!tl.trace_events.within(trace.events.size()))
        return makeError("timeline does not match its trace");
    auto out = allocatorStateAfter(trace, tl.device, tl.trace_events,
                                   lastIndexAtOrBefore(trace, tl, time), true, ctx);
    if (!out) return out;
    out->time = time;
    if (!out->backwards && tl.initial_live > 0)
        out->note =
            "blocks live before recording began are not known without an end-of-recording state";
    return out;
}

Result<AllocatorSnapshotAt> allocatorStateAfter(const Trace& trace, int16_t device,
                                                const EventIndexList& idx, int64_t last,
                                                bool categories, const TaskContext& ctx) {
    AllocatorSnapshotAt out;
    if (!idx.within(trace.events.size())) return makeError("event order does not match its trace");
    out.event_index = std::clamp<int64_t>(last, -1, int64_t(idx.size()) - 1);
    out.time = out.event_index >= 0 ? trace.events[idx[size_t(out.event_index)]].time
               : idx.size() > 0     ? addSaturating(trace.events[idx[0]].time, -1)
                                    : 0;

    State st;
    constexpr size_t kReportEvery = 1 << 20;
    const bool have_end =
        trace.allocator_state.has_value() &&
        std::any_of(trace.allocator_state->segments.begin(), trace.allocator_state->segments.end(),
                    [&](const Segment& s) { return s.device == device; });
    out.backwards = have_end;
    if (have_end) {
        if (auto undone = undoToMoment(st, trace, device, idx, out.event_index, categories, ctx);
            !undone)
            return undone.error();
    } else {
        for (int64_t k = 0; k <= out.event_index; ++k) {
            const uint64_t ev = idx[size_t(k)];
            apply(st, trace.events[ev], categories ? trace.categoryOf(ev) : Category::Unknown);
            if (size_t(k + 1) % kReportEvery == 0) {
                if (ctx.cancelled()) return cancelledError();
                ctx.report(uint64_t(k + 1), uint64_t(out.event_index + 1));
            }
        }
    }

    // Lay blocks into their segments by address.
    out.segments.reserve(st.segments.size());
    auto bit = st.blocks.begin();
    for (const auto& [addr, rec] : st.segments) {
        ReplaySegment seg{addr, rec.size, rec.stream, rec.expandable, {}};
        for (; bit != st.blocks.end() && bit->first < addr; ++bit)
            out.loose_blocks.push_back(bit->second);
        uint64_t cursor = addr;
        for (; bit != st.blocks.end() && bit->first < addr + rec.size; ++bit) {
            seg.blocks.push_back(bit->second);
            if (bit->first > cursor)
                out.largest_free_gap = std::max(out.largest_free_gap, bit->first - cursor);
            cursor = std::max(cursor, bit->first + bit->second.size);
        }
        if (addr + rec.size > cursor)
            out.largest_free_gap = std::max(out.largest_free_gap, addr + rec.size - cursor);
        out.reserved_bytes += rec.size;
        out.active_bytes += seg.activeBytes();
        out.segments.push_back(std::move(seg));
    }
    for (; bit != st.blocks.end(); ++bit) out.loose_blocks.push_back(bit->second);
    for (const ReplayBlock& b : out.loose_blocks) out.active_bytes += b.size;
    ctx.report(1, 1);
    return out;
}

}  // namespace memscope
