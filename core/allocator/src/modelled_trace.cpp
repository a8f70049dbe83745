#include "memscope/allocator/modelled_trace.h"

#include <unordered_map>
#include <utility>
#include <vector>

namespace memscope {

namespace {

constexpr uint64_t kSmallSegment = 2 * 1024 * 1024;
constexpr uint64_t kUnplaced = UINT64_MAX;

bool isSegmentEvent(EventKind k) {
    return k == EventKind::SegmentAlloc || k == EventKind::SegmentFree ||
           k == EventKind::SegmentMap || k == EventKind::SegmentUnmap;
}

// The device's segments in the trace's end state replaced by the model's, each
// covered by its allocated blocks and inactive gaps. A block alive throughout
// (never allocated in the trace) keeps the category inferred for it, found
// through the address it had before the model moved it (`moved_from`).
void replaceEndState(Trace& trace, int16_t device, const AllocatorSnapshotAt& model,
                     const std::unordered_map<uint64_t, uint64_t>& moved_from) {
    std::unordered_map<uint64_t, InferredCategory> kept;  // old address -> inferred category
    AllocatorState out;
    std::vector<InferredCategory> inferred;
    const std::vector<InferredCategory>& old_inferred = trace.inferred_block_categories;
    auto oldCategory = [&](size_t bi) {
        return bi < old_inferred.size() ? old_inferred[bi] : InferredCategory{};
    };
    if (trace.allocator_state) {
        const AllocatorState& old = *trace.allocator_state;
        for (const Segment& s : old.segments) {
            if (s.device == device) {
                for (uint32_t k = 0; k < s.block_count; ++k) {
                    const size_t bi = size_t(s.first_block) + k;
                    if (bi < old.blocks.size() && old.blocks[bi].state != BlockState::Inactive)
                        kept.emplace(old.blocks[bi].address, oldCategory(bi));
                }
                continue;
            }
            Segment copy = s;
            copy.first_block = uint32_t(out.blocks.size());
            for (uint32_t k = 0; k < s.block_count && size_t(s.first_block) + k < old.blocks.size();
                 ++k) {
                out.blocks.push_back(old.blocks[size_t(s.first_block) + k]);
                inferred.push_back(oldCategory(size_t(s.first_block) + k));
            }
            copy.block_count = uint32_t(out.blocks.size() - copy.first_block);
            out.segments.push_back(copy);
        }
    }
    auto add = [&](const Block& b, InferredCategory c) {
        out.blocks.push_back(b);
        inferred.push_back(c);
    };
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
                add(Block{cursor, b.address - cursor, 0, {}, BlockState::Inactive}, {});
            const auto from = moved_from.find(b.address);
            const auto old = kept.find(from != moved_from.end() ? from->second : b.address);
            add(Block{b.address, b.size, b.size, b.stack, b.state},
                old != kept.end() ? old->second : InferredCategory{});
            cursor = b.address + b.size;
        }
        if (rs.address + rs.size > cursor)
            add(Block{cursor, rs.address + rs.size - cursor, 0, {}, BlockState::Inactive}, {});
        s.block_count = uint32_t(out.blocks.size() - s.first_block);
        out.segments.push_back(s);
    }
    trace.allocator_state = std::move(out);
    // One per block, or none where the trace had none.
    if (old_inferred.empty())
        trace.inferred_block_categories.clear();
    else
        trace.inferred_block_categories = std::move(inferred);
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
    std::unordered_map<uint64_t, uint64_t> moved;            // recorded address -> model address
    std::vector<std::pair<uint64_t, uint64_t>> start_moves;  // blocks live at the start
    options.on_start_placement = [&](uint64_t recorded, uint64_t address) {
        moved[recorded] = address;
        start_moves.emplace_back(recorded, address);
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
            s.kind = m.kind;
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
    std::unordered_map<uint64_t, uint64_t> moved_from;  // model address -> recorded address
    moved_from.reserve(start_moves.size());
    for (const auto& [recorded, address] : start_moves) moved_from.emplace(address, recorded);
    replaceEndState(trace, timeline.device, *run->end_state, moved_from);
    return run;
}

}  // namespace memscope
