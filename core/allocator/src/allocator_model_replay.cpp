#include "memscope/allocator/allocator_model_replay.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "memscope/base/address_map.h"
#include "memscope/base/units.h"

namespace memscope {

namespace {

constexpr uint64_t kSmallSegment = 2 * 1024 * 1024;
// Seed blocks' tags: the high bit set, the seed's index below it; an
// allocation's tag is its Trace::events index.
constexpr uint64_t kSeedTag = uint64_t(1) << 63;

RecordedAllocatorFigures recordedFigures(const Trace& trace, const DeviceTimeline& tl) {
    RecordedAllocatorFigures out;
    for (uint64_t ev : tl.trace_events) {
        switch (trace.events[ev].kind) {
            case EventKind::SegmentAlloc:
                ++out.segment_allocs;
                out.has_segment_events = true;
                break;
            case EventKind::SegmentMap:
                ++out.segment_maps;
                out.has_segment_events = true;
                break;
            case EventKind::SegmentFree:
            case EventKind::SegmentUnmap:
                out.has_segment_events = true;
                break;
            default:
                break;
        }
    }
    int64_t peak = std::max<int64_t>(tl.reserved.initial, 0);
    for (int64_t y : tl.reserved.ys()) peak = std::max(peak, y);
    out.reserved_peak_bytes = uint64_t(peak);
    return out;
}

// Which end-of-recording segments of `device` were in the large pool, by
// address (looked up once per seeded segment: a scan each time was quadratic
// in a trace's tens of thousands of segments).
std::unordered_map<uint64_t, bool> endSegmentsLarge(const Trace& trace, int16_t device) {
    std::unordered_map<uint64_t, bool> large;
    if (trace.allocator_state)
        for (const Segment& end : trace.allocator_state->segments)
            if (end.device == device) large.emplace(end.address, end.large);
    return large;
}

bool segmentIsSmall(const std::unordered_map<uint64_t, bool>& end_large, const ReplaySegment& s) {
    if (auto it = end_large.find(s.address); it != end_large.end()) return !it->second;
    // Small-pool segments are 2 MiB; a large-pool one never is (20 MiB, or
    // 10 MiB and more rounded to 2 MiB).
    return !s.expandable && s.size == kSmallSegment;
}

uint64_t rawStream(const Trace& trace, uint32_t index) {
    return index < trace.streams.size() ? trace.streams[index] : 0;
}

}  // namespace

bool hasCachingAllocator(const Trace& trace, int16_t device) {
    if (device < 0) return false;
    const std::string* d = trace.metadata.property("device");
    return !(d && (*d == "cpu" || *d == "CPU"));
}

Result<std::vector<ReplaySegment>> allocatorStartState(const Trace& trace,
                                                       const DeviceTimeline& timeline,
                                                       const TaskContext& ctx) {
    if (!trace.allocator_state) return std::vector<ReplaySegment>{};
    auto at = allocatorStateAt(trace, timeline, addSaturating(timeline.start, -1), ctx);
    if (!at) return at.error();
    if (!at->backwards) return std::vector<ReplaySegment>{};
    return std::move(at->segments);
}

namespace {

// What a replay reads of its device: the events in time order, and the
// timeline where there is one. Without one (a replay beside inference) it
// reads no category, starts only from the recorded cache, and
// completeAllocatorModel adds the rest later.
struct ReplaySource {
    int16_t device = 0;
    const EventIndexList& order;
    const DeviceTimeline* timeline = nullptr;
};

Result<AllocatorModelRun> replay(const Trace& trace, const ReplaySource& src,
                                 const ResolvedAllocatorSettings& resolved,
                                 const AllocatorModelOptions& options, const TaskContext& ctx) {
    const EventIndexList& idx = src.order;
    if (!idx.within(trace.events.size())) return makeError("timeline does not match its trace");
    const DeviceTimeline* tl = src.timeline;
    const bool categories = tl != nullptr;
    if (options.start == AllocatorStart::FreshCache && !tl)
        return makeError("a replay from a fresh cache needs the timeline");

    AllocatorModelRun run;
    run.device = src.device;
    run.settings = options.settings.value_or(resolved.settings);
    run.settings_source = resolved.source;
    run.settings_overridden =
        options.settings.has_value() && *options.settings != resolved.settings;
    run.device_capacity = options.device_capacity;

    run.start = options.start;
    std::vector<ReplaySegment> start;
    if (options.start == AllocatorStart::FreshCache) {
        // Placed below, from the timeline's blocks live at the start.
    } else if (options.start_state) {
        start = *options.start_state;
    } else if (trace.allocator_state) {
        auto at = allocatorStateAfter(trace, src.device, idx, -1, categories, ctx);
        if (!at) return at.error();
        if (at->backwards) start = std::move(at->segments);
    }
    run.warm_start = !start.empty();
    const int64_t first_time = idx.size() > 0 ? trace.events[idx[0]].time : 0;

    CachingAllocatorModel model(run.settings, options.device_capacity);
    size_t current = 0;  // the device-local index of the event being replayed
    AddressMap<CachingAllocatorModel::BlockId> live;  // recorded address -> block
    std::vector<const ReplayBlock*> seeds;
    std::vector<ReplayBlock> ghosts;  // a fresh cache's blocks live at the start
    if (options.start == AllocatorStart::FreshCache) {
        for (const AllocationInterval& iv : tl->intervals)
            if (iv.alloc_event == kNoEvent && iv.size > 0)
                ghosts.push_back(ReplayBlock{iv.address, iv.size, BlockState::ActiveAllocated,
                                             iv.stack, iv.category});
        std::sort(ghosts.begin(), ghosts.end(),
                  [](const ReplayBlock& a, const ReplayBlock& b) { return a.address < b.address; });
        // Their stream is not recorded: the device's first allocation's.
        uint64_t stream = 0;
        for (uint64_t ev : idx)
            if (trace.events[ev].kind == EventKind::Alloc) {
                stream = rawStream(trace, trace.events[ev].stream);
                break;
            }
        for (const ReplayBlock& g : ghosts) {
            const auto id = model.allocate(g.size, stream, kSeedTag | seeds.size());
            seeds.push_back(&g);
            if (!id) continue;
            live.put(g.address, *id);
            if (options.on_start_placement)
                options.on_start_placement(g.address, model.blockAddress(*id));
        }
        model.resetCounters();
    }
    if (options.on_segment_event)
        model.setSegmentListener(
            [&](const ModelSegmentEvent& e) { options.on_segment_event(current, e); });
    const auto end_large = endSegmentsLarge(trace, src.device);
    for (const ReplaySegment& seg : start) {
        std::vector<SeedBlock> blocks;
        blocks.reserve(seg.blocks.size());
        for (const ReplayBlock& b : seg.blocks) {
            blocks.push_back(SeedBlock{b.address, b.size, kSeedTag | seeds.size()});
            seeds.push_back(&b);
        }
        const auto ids = model.seedSegment(seg.address, seg.size, seg.stream, seg.expandable,
                                           segmentIsSmall(end_large, seg), blocks);
        for (size_t i = 0; i < ids.size(); ++i)
            if (ids[i]) live.put(blocks[i].address, *ids[i]);
    }
    run.start_reserved_bytes = model.reservedBytes();
    run.reserved_peak_bytes = model.reservedBytes();
    run.reserved_peak_time = first_time;
    run.allocated_at_peak_bytes = model.allocatedBytes();
    run.largest_free_block_at_peak_bytes = model.largestFreeBlock();
    run.reserved.initial = int64_t(model.reservedBytes());

    const size_t n = idx.size();
    const size_t stop = options.stop_before < 0 ? n : std::min(n, size_t(options.stop_before));
    constexpr size_t kReportEvery = 1 << 18;
    bool released_here = false;  // the previous event was a segment release
    uint64_t last_reserved = model.reservedBytes();
    for (size_t k = 0; k < stop; ++k) {
        const uint64_t ev = idx[k];
        const Event& e = trace.events[ev];
        current = k;
        bool releasing = false;
        switch (e.kind) {
            case EventKind::Alloc: {
                if (e.size == 0) break;
                ++run.requests;
                // Allocated twice without a free: the trace's gap.
                if (CachingAllocatorModel::BlockId old; live.take(e.address, old)) model.free(old);
                const auto id = model.allocate(e.size, rawStream(trace, e.stream), ev);
                if (!id) {
                    run.failure = AllocatorModelFailure{int64_t(k),
                                                        ev,
                                                        e.time,
                                                        e.size,
                                                        model.reservedBytes(),
                                                        model.allocatedBytes(),
                                                        model.largestFreeBlock()};
                    break;
                }
                live.put(e.address, *id);
                if (options.on_placement) options.on_placement(k, model.blockAddress(*id));
                if (model.reservedBytes() > run.reserved_peak_bytes) {
                    run.reserved_peak_bytes = model.reservedBytes();
                    run.reserved_peak_time = e.time;
                    run.allocated_at_peak_bytes = model.allocatedBytes();
                    run.largest_free_block_at_peak_bytes = model.largestFreeBlock();
                }
                break;
            }
            case EventKind::FreeCompleted:
                if (CachingAllocatorModel::BlockId id; live.take(e.address, id)) model.free(id);
                break;
            case EventKind::SegmentFree:
            case EventKind::SegmentUnmap:
                releasing = true;
                if (options.mirror_cache_releases && !released_here) {
                    model.emptyCache();
                    ++run.cache_releases;
                }
                break;
            default:
                break;
        }
        released_here = releasing;
        if (run.failure) break;
        if (options.keep_series && model.reservedBytes() != last_reserved)
            run.reserved.append(e.time, int64_t(model.reservedBytes()));
        last_reserved = model.reservedBytes();
        if ((k + 1) % kReportEvery == 0) {
            if (ctx.cancelled()) return cancelledError();
            ctx.report(k + 1, stop);
        }
    }
    if (options.final_request && !run.failure) {
        const auto id = model.allocate(options.final_request->size, options.final_request->stream);
        run.final_request_served = id.has_value();
        run.reserved_after_final_request = model.reservedBytes();
        if (id && model.reservedBytes() > run.reserved_peak_bytes) {
            run.reserved_peak_bytes = model.reservedBytes();
            run.allocated_at_peak_bytes = model.allocatedBytes();
            run.largest_free_block_at_peak_bytes = model.largestFreeBlock();
        }
    }
    if (options.keep_series) run.reserved.finalize();
    run.end_reserved_bytes = model.reservedBytes();
    run.segment_allocs = model.segmentAllocs();
    run.segment_frees = model.segmentFrees();
    run.segment_maps = model.segmentMaps();
    run.segment_unmaps = model.segmentUnmaps();

    if (options.keep_end_state) {
        AllocatorSnapshotAt state;
        state.time = stop > 0 ? trace.events[idx[stop - 1]].time : first_time;
        state.event_index = int64_t(stop) - 1;
        for (const ModelSegmentView& v : model.segments()) {
            ReplaySegment seg{v.address, v.size, v.stream, v.expandable, {}};
            for (const ModelBlockView& b : v.blocks) {
                ReplayBlock rb{
                    b.address, b.size, BlockState::ActiveAllocated, {}, Category::Unknown};
                if (b.tag & kSeedTag) {
                    const uint64_t s = b.tag & ~kSeedTag;
                    if (s < seeds.size()) {
                        rb.stack = seeds[s]->stack;
                        rb.category = seeds[s]->category;
                    }
                } else if (b.tag < trace.events.size()) {
                    rb.stack = trace.events[b.tag].stack;
                    if (categories) rb.category = trace.categoryOf(b.tag);
                }
                seg.blocks.push_back(rb);
            }
            state.reserved_bytes += seg.size;
            state.active_bytes += seg.activeBytes();
            seg.blocks.shrink_to_fit();
            state.segments.push_back(std::move(seg));
        }
        state.largest_free_gap = model.largestFreeBlock();
        state.note = "predicted by the caching-allocator model, not recorded";
        run.end_state = std::move(state);
    }
    if (tl) completeAllocatorModel(run, trace, *tl);
    ctx.report(1, 1);
    return run;
}

}  // namespace

Result<AllocatorModelRun> replayAllocatorModel(const Trace& trace, const DeviceTimeline& tl,
                                               const AllocatorModelOptions& options,
                                               const TaskContext& ctx) {
    return replay(trace, ReplaySource{tl.device, tl.trace_events, &tl}, allocatorSettingsOf(trace),
                  options, ctx);
}

Result<AllocatorModelRun> replayAllocatorModelInOrder(const Trace& trace, int16_t device,
                                                      const EventIndexList& order,
                                                      const ResolvedAllocatorSettings& settings,
                                                      const AllocatorModelOptions& options,
                                                      const TaskContext& ctx) {
    if (options.keep_end_state || options.start == AllocatorStart::FreshCache)
        return makeError("a replay in order alone neither keeps its end state nor starts fresh");
    return replay(trace, ReplaySource{device, order, nullptr}, settings, options, ctx);
}

void completeAllocatorModel(AllocatorModelRun& run, const Trace& trace,
                            const DeviceTimeline& timeline) {
    run.recorded = recordedFigures(trace, timeline);
    if (!run.warm_start && run.start == AllocatorStart::RecordedCache && timeline.initial_live > 0)
        run.notes.push_back(
            "the cache before the first event is not known (no end-of-recording state): the "
            "model starts empty, and blocks live before recording are not placed");
}

std::optional<double> relativeDifference(uint64_t model, uint64_t recorded) {
    if (recorded == 0) return model == 0 ? std::optional<double>(0.0) : std::nullopt;
    return (double(model) - double(recorded)) / double(recorded) * 100.0;
}

std::string describeAllocatorModel(const AllocatorModelRun& run) {
    auto pct = [](std::optional<double> d) {
        if (!d) return std::string("n/a");
        char buf[32];
        std::snprintf(buf, sizeof buf, "%+.1f%%", *d);
        return std::string(buf);
    };
    const bool maps = run.settings.expandable_segments;
    const uint64_t made = maps ? run.segment_maps : run.segment_allocs;
    const uint64_t recorded_made = maps ? run.recorded.segment_maps : run.recorded.segment_allocs;
    const char* what = maps ? "segment maps" : "segment allocations";
    std::string line =
        "allocator model (" + describeAllocatorSettings(run.settings) +
        (run.settings_source == AllocatorSettingsSource::Recorded && !run.settings_overridden
             ? ", as recorded"
             : "") +
        "): reserved peak " + formatBytes(int64_t(run.reserved_peak_bytes)) + ", " +
        std::to_string(made) + " " + what;
    if (run.recorded.has_segment_events && !run.settings_overridden) {
        line += "; recorded " + formatBytes(int64_t(run.recorded.reserved_peak_bytes)) + ", " +
                std::to_string(recorded_made) + " (" +
                pct(relativeDifference(run.reserved_peak_bytes, run.recorded.reserved_peak_bytes)) +
                ", " + pct(relativeDifference(made, recorded_made)) + ")";
    } else if (!run.settings_overridden) {
        line += "; recorded peak " + formatBytes(int64_t(run.recorded.reserved_peak_bytes)) + " (" +
                pct(relativeDifference(run.reserved_peak_bytes, run.recorded.reserved_peak_bytes)) +
                ")";
    }
    return line;
}

}  // namespace memscope
