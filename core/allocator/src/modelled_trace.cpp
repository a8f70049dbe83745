#include "memscope/allocator/modelled_trace.h"

#include <unordered_map>
#include <utility>
#include <vector>

namespace memscope {

namespace {

constexpr uint64_t kSmallSegment = 2 * 1024 * 1024;
constexpr uint64_t kUnplaced = UINT64_MAX;

EventKind kindOf(ModelSegmentEventKind k) {
    switch (k) {
        case ModelSegmentEventKind::Alloc:
            return EventKind::SegmentAlloc;
        case ModelSegmentEventKind::Free:
            return EventKind::SegmentFree;
        case ModelSegmentEventKind::Map:
            return EventKind::SegmentMap;
        case ModelSegmentEventKind::Unmap:
            return EventKind::SegmentUnmap;
    }
    return EventKind::SegmentAlloc;
}

bool isSegmentEvent(EventKind k) {
    return k == EventKind::SegmentAlloc || k == EventKind::SegmentFree ||
           k == EventKind::SegmentMap || k == EventKind::SegmentUnmap;
}

// The device's segments in `state` replaced by the model's end state, each
// covered by its allocated blocks and inactive gaps.
void replaceEndState(Trace& trace, int16_t device, const AllocatorSnapshotAt& model) {
    AllocatorState out;
    if (trace.allocator_state) {
        const AllocatorState& old = *trace.allocator_state;
        for (const Segment& s : old.segments) {
            if (s.device == device) continue;
            Segment copy = s;
            copy.first_block = uint32_t(out.blocks.size());
            for (const Block& b : old.blocksOf(s)) out.blocks.push_back(b);
            out.segments.push_back(copy);
        }
    }
    for (const ReplaySegment& rs : model.segments) {
        Segment s;
        s.address = rs.address;
        s.total_size = rs.size;
        s.stream = rs.stream;
        s.device = device;
        s.expandable = rs.expandable;
        s.large = rs.expandable || rs.size != kSmallSegment;
        s.first_block = uint32_t(out.blocks.size());
        uint64_t cursor = rs.address;
        for (const ReplayBlock& b : rs.blocks) {
            if (b.address > cursor)
                out.blocks.push_back(
                    Block{cursor, b.address - cursor, 0, {}, BlockState::Inactive});
            out.blocks.push_back(Block{b.address, b.size, b.size, b.stack, b.state});
            cursor = b.address + b.size;
        }
        if (rs.address + rs.size > cursor)
            out.blocks.push_back(
                Block{cursor, rs.address + rs.size - cursor, 0, {}, BlockState::Inactive});
        s.block_count = uint32_t(out.blocks.size() - s.first_block);
        out.segments.push_back(s);
    }
    trace.allocator_state = std::move(out);
    trace.inferred_block_categories.clear();  // one per block, and the blocks changed
}

}  // namespace

Result<AllocatorModelRun> applyAllocatorModel(Trace& trace, const DeviceTimeline& timeline,
                                              AllocatorModelOptions options,
                                              const TaskContext& ctx) {
    std::vector<std::pair<size_t, ModelSegmentEvent>> made;
    std::vector<uint64_t> placed(timeline.trace_events.size(), kUnplaced);
    options.keep_end_state = true;
    options.on_segment_event = [&](size_t k, const ModelSegmentEvent& e) {
        made.emplace_back(k, e);
    };
    options.on_placement = [&](size_t k, uint64_t address) {
        if (k < placed.size()) placed[k] = address;
    };
    std::unordered_map<uint64_t, uint64_t> moved;  // recorded address -> model address
    options.on_start_placement = [&](uint64_t recorded, uint64_t address) {
        moved[recorded] = address;
    };
    auto run = replayAllocatorModel(trace, timeline, options, ctx);
    if (!run) return run.error();
    if (run->failure) return run;

    const auto& idx = timeline.trace_events;
    std::vector<Event> events;
    events.reserve(trace.events.size() + made.size());
    std::vector<uint64_t> new_index(trace.events.size());
    size_t next_made = 0, k = 0;
    for (uint64_t i = 0; i < trace.events.size(); ++i) {
        Event e = trace.events[i];
        const bool on_device = k < idx.size() && idx[k] == i;
        if (!on_device) {
            new_index[i] = events.size();
            events.push_back(e);
            continue;
        }
        for (; next_made < made.size() && made[next_made].first == k; ++next_made) {
            const ModelSegmentEvent& m = made[next_made].second;
            Event s;
            s.time = e.time;
            s.address = m.address;
            s.size = m.size;
            s.phase = e.phase;
            s.stream = trace.internStream(m.stream);
            s.device = e.device;
            s.kind = kindOf(m.kind);
            events.push_back(s);
        }
        if (e.kind == EventKind::Alloc && placed[k] != kUnplaced) {
            moved[e.address] = placed[k];
            e.address = placed[k];
        } else if (e.kind == EventKind::FreeRequested || e.kind == EventKind::FreeCompleted) {
            if (auto it = moved.find(e.address); it != moved.end()) {
                e.address = it->second;
                if (e.kind == EventKind::FreeCompleted) moved.erase(it);
            }
        }
        ++k;
        new_index[i] = events.size();
        if (isSegmentEvent(e.kind)) {
            new_index[i] = UINT64_MAX;  // the measured run's, replaced by the model's
            continue;
        }
        events.push_back(e);
    }

    // Indexes into the events: attributes, inferred categories.
    std::vector<EventAttribute> attributes;
    attributes.reserve(trace.attributes.size());
    for (EventAttribute a : trace.attributes) {
        if (a.event >= new_index.size() || new_index[a.event] == UINT64_MAX) continue;
        a.event = new_index[a.event];
        attributes.push_back(a);
    }
    if (!trace.inferred_categories.empty()) {
        std::vector<InferredCategory> inferred(events.size());
        for (uint64_t i = 0; i < trace.events.size() && i < trace.inferred_categories.size(); ++i)
            if (new_index[i] != UINT64_MAX) inferred[new_index[i]] = trace.inferred_categories[i];
        trace.inferred_categories = std::move(inferred);
    }
    trace.events = std::move(events);
    trace.attributes = std::move(attributes);
    replaceEndState(trace, timeline.device, *run->end_state);
    return run;
}

}  // namespace memscope
