#include "memscope/analysis/summary.h"

#include "memscope/base/units.h"

namespace memscope {
namespace {

std::optional<int64_t> toMicros(const Trace& trace, int64_t time) {
    if (trace.metadata.time_base != TimeBase::Nanoseconds) return std::nullopt;
    return nanosToMicrosFloor(time);
}

void addEndState(const Trace& trace, int16_t device, DeviceSummary& out) {
    uint64_t segments = 0, reserved = 0, active = 0;
    for (const Segment& s : trace.allocator_state->segments) {
        if (s.device != device) continue;
        ++segments;
        reserved += s.total_size;
        for (const Block& b : trace.allocator_state->blocksOf(s))
            if (b.state == BlockState::ActiveAllocated) active += b.size;
    }
    out.segments = segments;
    out.reserved_bytes = reserved;
    out.final_active_bytes = active;
}

}  // namespace

TraceSummary summarize(const Trace& trace, const Timeline& timeline) {
    TraceSummary summary;
    for (const DeviceTimeline& tl : timeline.devices()) {
        DeviceSummary& d = summary.devices[tl.device];
        for (uint64_t i : tl.trace_events) {
            switch (trace.events[i].kind) {
                case EventKind::Alloc:
                    ++d.alloc_count;
                    break;
                case EventKind::FreeCompleted:
                    ++d.free_completed_count;
                    break;
                case EventKind::SegmentAlloc:
                    ++d.segment_alloc_count;
                    break;
                case EventKind::Oom:
                    ++d.oom_count;
                    break;
                default:
                    break;
            }
        }
        d.trace_entries = tl.trace_events.size();
        if (trace.allocator_state) {
            addEndState(trace, tl.device, d);
        } else {
            if (!tl.reserved.empty())
                d.reserved_bytes = uint64_t(std::max<int64_t>(0, tl.reserved.ys().back()));
            d.final_active_bytes = uint64_t(
                std::max<int64_t>(0, tl.live.empty() ? tl.live.initial : tl.live.ys().back()));
        }
        if (!tl.reserved.empty() || tl.reserved.initial > 0) {
            int64_t most = tl.reserved.initial;
            for (int64_t y : tl.reserved.ys()) most = std::max(most, y);
            d.peak_reserved_bytes = uint64_t(std::max<int64_t>(0, most));
        }
        d.peak_active_bytes = tl.peak.bytes;
        d.peak_event_index = tl.peak.event_index;
        d.categories_at_peak = tl.peak.by_category;
        d.phase_peaks = tl.phase_peaks;
        if (!tl.trace_events.empty()) {
            d.first_time_us = toMicros(trace, tl.start);
            d.last_time_us = toMicros(trace, tl.end);
            if (tl.peak.event_index >= 0) d.peak_time_us = toMicros(trace, tl.peak.time);
        }
        // Fails only on a timeline that does not match its trace: no report then.
        if (auto ooms = oomReports(trace, tl)) d.ooms = std::move(*ooms);
    }
    return summary;
}

void addAllocatorModels(TraceSummary& summary, const Trace& trace, const Timeline& timeline,
                        const TaskContext& ctx) {
    EarlyAllocatorModels none;
    addAllocatorModels(summary, trace, timeline, none, ctx);
}

std::function<void()> allocatorModelsBesideInference(const Trace& trace,
                                                     const detail::DeviceOrder& order,
                                                     EarlyAllocatorModels& out) {
    std::vector<size_t> devices;
    for (size_t i = 0; i < order.devices.size() && i < order.events.size(); ++i)
        if (hasCachingAllocator(trace, order.devices[i])) devices.push_back(i);
    if (devices.empty()) return {};
    const ResolvedAllocatorSettings settings = allocatorSettingsOf(trace);
    return [&trace, &order, &out, devices, settings] {
        for (size_t i : devices)
            out.runs.insert_or_assign(
                order.devices[i],
                replayAllocatorModelInOrder(trace, order.devices[i], order.events[i], settings));
    };
}

void addAllocatorModels(TraceSummary& summary, const Trace& trace, const Timeline& timeline,
                        EarlyAllocatorModels& early, const TaskContext& ctx) {
    for (const DeviceTimeline& tl : timeline.devices()) {
        auto it = summary.devices.find(tl.device);
        if (it == summary.devices.end() || it->second.alloc_count == 0 ||
            !hasCachingAllocator(trace, tl.device))
            continue;
        if (auto done = early.runs.find(tl.device); done != early.runs.end() && done->second) {
            completeAllocatorModel(*done->second, trace, tl);
            it->second.allocator_model = std::move(*done->second);
            continue;
        }
        // Fails only on a cancel or a timeline that does not match its trace.
        if (auto model = replayAllocatorModel(trace, tl, {}, ctx))
            it->second.allocator_model = std::move(*model);
    }
}

}  // namespace memscope
