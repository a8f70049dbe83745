#include "memscope/timeline/timeline.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "memscope/base/address_map.h"
#include "memscope/base/page_warmer.h"
#include "memscope/base/parallel_for.h"
#include "memscope/timeline/events_by_device.h"
#include "phase_peak_tracker.h"
#include "saturating.h"

namespace memscope {
namespace {

using detail::addSat;
using detail::clampSize;
using detail::subSat;

constexpr uint64_t kProgressEvery = 1u << 20;
// Below this many events one thread counts them faster than two start.
constexpr size_t kParallelCount = size_t(1) << 20;

// When an interval stops being live (never, if it was not freed).
int64_t effectiveEnd(const AllocationInterval& a) {
    return a.free_event == kNoEvent ? INT64_MAX : a.end;
}

bool addsSegment(EventKind k) {
    return k == EventKind::SegmentAlloc || k == EventKind::SegmentMap;
}
bool removesSegment(EventKind k) {
    return k == EventKind::SegmentFree || k == EventKind::SegmentUnmap;
}

class DeviceBuilder {
public:
    DeviceBuilder(const Trace& trace, int16_t device, EventIndexList events,
                  const TimelineOptions& options)
        : trace_(trace), options_(options), tracker_(trace, device) {
        tl_.device = device;
        tl_.trace_events = std::move(events);
        if (!tl_.trace_events.empty()) {
            tl_.start = trace.events[tl_.trace_events.front()].time;
            tl_.end = trace.events[tl_.trace_events.back()].time;
        }
    }

    Result<DeviceTimeline> build(const TaskContext& ctx, uint64_t& done, uint64_t total) {
        walkEvents(ctx, done, total);
        if (ctx.cancelled()) return cancelledError();
        addEndStateGhosts();
        applyInitialValues();
        mergeIntervals();
        computeReservedStart();
        tl_.live.finalize();
        for (auto& s : tl_.live_by_category) s.finalize();
        tl_.reserved.finalize();
        describePeak();
        tl_.phase_peaks =
            tracker_.finish(tl_.initial_live, initialByCat_, tl_.live, tl_.live_by_category);
        return std::move(tl_);
    }

private:
    // Sizes every growing vector once, from a count of what the walk will
    // add: doubling them touched twice their size in fresh pages and copied
    // them a dozen times, a third of the build on a 1 GB snapshot. A free
    // without its alloc becomes a ghost: room for some is left (a trace with
    // more copies its intervals once, at the merge).
    void reserveByCount() {
        // Counted in halves on two cores for a large device.
        struct Counts {
            size_t allocs = 0, frees = 0;
            std::array<size_t, kCategoryCount> by_cat{};
        };
        const size_t n = tl_.trace_events.size();
        const unsigned parts = n >= kParallelCount ? 2 : 1;
        std::array<Counts, 2> part_counts;
        parallelFor(parts, parts, [&](size_t part) {
            Counts c;  // local: the parts' counts would share cache lines
            for (size_t i = n * part / parts; i < n * (part + 1) / parts; ++i) {
                const uint64_t ti = tl_.trace_events[i];
                const EventKind k = trace_.events[ti].kind;
                if (k == EventKind::Alloc) {
                    ++c.allocs;
                    ++c.by_cat[index(trace_.categoryOf(ti))];
                } else if (k == EventKind::FreeCompleted) {
                    ++c.frees;
                }
            }
            part_counts[part] = c;
        });
        size_t allocs = 0, frees = 0;
        std::array<size_t, kCategoryCount> by_cat{};
        for (unsigned part = 0; part < parts; ++part) {
            allocs += part_counts[part].allocs;
            frees += part_counts[part].frees;
            for (int c = 0; c < kCategoryCount; ++c) by_cat[c] += part_counts[part].by_cat[c];
        }
        size_t blocks = 0;
        if (trace_.allocator_state) blocks = trace_.allocator_state->blocks.size();
        const size_t ghosts = std::min(frees, allocs / 8 + 1024) + blocks;
        allocs_.reserve(allocs + ghosts);
        allocSpans_.reserve(allocs + ghosts);
        tl_.live.reserve(allocs + frees);
        // A free counts in its alloc's category; a ghost's free may not.
        for (int c = 0; c < kCategoryCount; ++c)
            tl_.live_by_category[c].reserve(2 * by_cat[c] + (by_cat[c] ? frees / 16 : 0));
        // Faulted in on the other core while the walk fills them; the
        // ghosts' slack is left out (most traces have none).
        std::vector<std::span<const std::byte>> room{PageWarmer::unfilled(allocs_, allocs),
                                                     PageWarmer::unfilled(allocSpans_, allocs)};
        tl_.live.unfilled(room);
        for (const StepSeries& s : tl_.live_by_category) s.unfilled(room);
        warmer_.warm(std::move(room));
    }

    // One pass: pair allocs with frees by address, record relative values (the
    // ghosts' starting bytes are only known at the end and added afterwards).
    void walkEvents(const TaskContext& ctx, uint64_t& done, uint64_t total) {
        const auto& events = trace_.events;
        reserveByCount();
        int64_t live = 0;
        std::array<int64_t, kCategoryCount> byCat{};
        int64_t reservedDelta = 0;
        for (uint64_t local = 0; local < tl_.trace_events.size(); ++local) {
            if (++done % kProgressEvery == 0) {
                if (ctx.cancelled()) return;
                ctx.report(done, total);
            }
            const uint64_t ti = tl_.trace_events[local];
            const Event& e = events[ti];
            const bool changesLive =
                e.kind == EventKind::Alloc || e.kind == EventKind::FreeCompleted;
            detail::PhasePeakTracker::Slot slot;
            if (changesLive && !tracker_.idle())
                slot = tracker_.enter(e, int64_t(local), live, byCat);
            switch (e.kind) {
                case EventKind::Alloc: {
                    const Category cat = trace_.categoryOf(ti);
                    const bool inferred = trace_.categoryInferred(ti);
                    addSat(live, clampSize(e.size));
                    addSat(byCat[index(cat)], clampSize(e.size));
                    // A second alloc at a live address replaces it, as memory_viz does.
                    open_.put(e.address, uint32_t(allocs_.size()));
                    allocs_.push_back(AllocationInterval{e.time, tl_.end, e.address, e.size, ti,
                                                         kNoEvent, e.stack, e.phase, cat,
                                                         inferred});
                    noteSource(cat, inferred);
                    allocSpans_.push_back({int64_t(local), kNever});
                    tl_.live.append(e.time, live);
                    tl_.live_by_category[index(cat)].append(e.time, byCat[index(cat)]);
                    break;
                }
                case EventKind::FreeCompleted: {
                    Category cat = trace_.categoryOf(ti);
                    int64_t size = clampSize(e.size);
                    if (uint32_t at; open_.take(e.address, at)) {
                        AllocationInterval& a = allocs_[at];
                        a.end = e.time;
                        a.free_event = ti;
                        allocSpans_[at].freed = int64_t(local);
                        cat = a.category;
                        size = clampSize(a.size);
                    } else {
                        const bool inferred = trace_.categoryInferred(ti);
                        ghosts_.push_back(AllocationInterval{tl_.start, e.time, e.address, e.size,
                                                             kNoEvent, ti, e.stack, e.phase, cat,
                                                             inferred});
                        noteSource(cat, inferred);
                        ghostSpans_.push_back({-1, int64_t(local)});
                        addSat(initialByCat_[index(cat)], size);
                    }
                    subSat(live, size);
                    subSat(byCat[index(cat)], size);
                    tl_.live.append(e.time, live);
                    tl_.live_by_category[index(cat)].append(e.time, byCat[index(cat)]);
                    break;
                }
                default:
                    if (addsSegment(e.kind) || removesSegment(e.kind)) {
                        if (addsSegment(e.kind))
                            addSat(reservedDelta, clampSize(e.size));
                        else
                            subSat(reservedDelta, clampSize(e.size));
                        tl_.reserved.append(e.time, reservedDelta);
                    }
                    continue;
            }
            if (!tracker_.idle()) tracker_.update(slot, e, int64_t(local), live, byCat);
            // First strict maximum wins: ties keep the earlier moment.
            if (live > peakRelative_) {
                peakRelative_ = live;
                peakLocal_ = int64_t(local);
            }
        }
        reservedDelta_ = reservedDelta;
        warmer_.stop();  // before the merge moves allocs_
    }

    // Blocks active at the end that the trace never allocated were live all along.
    void addEndStateGhosts() {
        if (!trace_.allocator_state) return;
        const AllocatorState& state = *trace_.allocator_state;
        const auto& inferred = trace_.inferred_block_categories;
        for (const Segment& s : state.segments) {
            if (s.device != tl_.device) continue;
            for (size_t k = 0; k < s.block_count; ++k) {
                const size_t bi = size_t(s.first_block) + k;
                if (bi >= state.blocks.size()) break;
                const Block& b = state.blocks[bi];
                if (b.state != BlockState::ActiveAllocated || open_.contains(b.address)) continue;
                const bool guessed =
                    bi < inferred.size() && inferred[bi].rule != CategoryRule::Recorded;
                const Category cat = guessed ? inferred[bi].category : Category::Unknown;
                ghosts_.push_back(AllocationInterval{tl_.start, tl_.end, b.address, b.size,
                                                     kNoEvent, kNoEvent, b.stack, PhaseId(), cat,
                                                     guessed});
                noteSource(cat, guessed);
                ghostSpans_.push_back({-1, kNever});
                addSat(initialByCat_[index(cat)], clampSize(b.size));
            }
        }
    }

    void applyInitialValues() {
        int64_t initial = 0;
        for (int64_t v : initialByCat_) addSat(initial, v);
        tl_.initial_live = initial;
        tl_.live.shiftBefore(initial);
        for (int c = 0; c < kCategoryCount; ++c)
            tl_.live_by_category[c].shiftBefore(initialByCat_[c]);
        tl_.peak.bytes = initial;
        addSat(tl_.peak.bytes, peakRelative_);
        tl_.peak.event_index = peakLocal_;
        tl_.peak.by_category = {};
    }

    void noteSource(Category cat, bool inferred) {
        CategorySources& src = tl_.category_sources[index(cat)];
        (inferred ? src.inferred : src.recorded) = true;
    }

    // Ghosts first, then allocations in order. reserveByCount() left room for
    // the ghosts in allocs_, so the merge moves it instead of copying it.
    void mergeIntervals() {
        allocs_.insert(allocs_.begin(), ghosts_.begin(), ghosts_.end());
        tl_.intervals = std::move(allocs_);
        allocSpans_.insert(allocSpans_.begin(), ghostSpans_.begin(), ghostSpans_.end());
        spans_ = std::move(allocSpans_);
        std::vector<AllocationInterval>().swap(ghosts_);
        std::vector<LocalSpan>().swap(ghostSpans_);
        const size_t blocks = (tl_.intervals.size() + DeviceTimeline::kIntervalBlock - 1) /
                              DeviceTimeline::kIntervalBlock;
        tl_.interval_block_end.assign(blocks, INT64_MIN);
        for (size_t i = 0; i < tl_.intervals.size(); ++i) {
            int64_t& m = tl_.interval_block_end[i / DeviceTimeline::kIntervalBlock];
            m = std::max(m, effectiveEnd(tl_.intervals[i]));
        }
    }

    // Reserved bytes before recording = end-state reserved minus what the trace
    // added; without an end state the trace starts from zero.
    void computeReservedStart() {
        int64_t initial = 0;
        if (trace_.allocator_state) {
            int64_t finalReserved = 0;
            for (const Segment& s : trace_.allocator_state->segments)
                if (s.device == tl_.device) addSat(finalReserved, clampSize(s.total_size));
            int64_t diff = finalReserved;
            subSat(diff, reservedDelta_);
            initial = std::max<int64_t>(0, diff);
        }
        tl_.reserved.shiftBefore(initial);
    }

    void describePeak() {
        Peak& p = tl_.peak;
        if (p.event_index >= 0) {
            p.trace_event = tl_.trace_events[size_t(p.event_index)];
            const Event& e = trace_.events[p.trace_event];
            p.time = e.time;
            p.phase = e.phase;
        } else {
            p.time = tl_.start;
        }
        // An interval is live at the peak if it began at or before the peak
        // event and ended after it (ghosts began before everything).
        const int64_t peakLocal = p.event_index;
        std::unordered_map<uint32_t, StackBytes> stacks;
        for (uint32_t i = 0; i < tl_.intervals.size(); ++i) {
            const AllocationInterval& a = tl_.intervals[i];
            if (spans_[i].allocated > peakLocal || spans_[i].freed <= peakLocal) continue;
            addSat(p.by_category[index(a.category)], clampSize(a.size));
            p.live_intervals.push_back(i);
            StackBytes& sb = stacks[a.stack.value];
            sb.stack = a.stack;
            sb.bytes += a.size;
            sb.count += 1;
        }
        std::sort(p.live_intervals.begin(), p.live_intervals.end(), [&](uint32_t x, uint32_t y) {
            return tl_.intervals[x].size > tl_.intervals[y].size;
        });
        for (auto& [id, sb] : stacks) p.by_stack.push_back(sb);
        std::sort(p.by_stack.begin(), p.by_stack.end(),
                  [](const StackBytes& x, const StackBytes& y) { return x.bytes > y.bytes; });
        if (p.by_stack.size() > options_.peak_top_stacks)
            p.by_stack.resize(options_.peak_top_stacks);
    }

    const Trace& trace_;
    const TimelineOptions& options_;
    DeviceTimeline tl_;
    AddressMap<uint32_t> open_;  // address -> index into allocs_
    std::vector<AllocationInterval> allocs_;
    std::vector<AllocationInterval> ghosts_;
    std::array<int64_t, kCategoryCount> initialByCat_{};
    // Device-local event positions of each interval's alloc and free, parallel
    // to allocs_/ghosts_ and then to tl_.intervals (kept out of the public type).
    struct LocalSpan {
        int64_t allocated;  // -1 for ghosts
        int64_t freed;      // kNever while live at the end
    };
    static constexpr int64_t kNever = INT64_MAX;
    std::vector<LocalSpan> allocSpans_;
    std::vector<LocalSpan> ghostSpans_;
    std::vector<LocalSpan> spans_;
    int64_t peakRelative_ = 0;
    int64_t peakLocal_ = -1;
    int64_t reservedDelta_ = 0;
    detail::PhasePeakTracker tracker_;
    PageWarmer warmer_;  // last: stops before the vectors it warms are freed
};

}  // namespace

std::vector<uint32_t> DeviceTimeline::liveAt(int64_t x) const {
    std::vector<uint32_t> out;
    // Intervals are sorted by start: only those before the first start > x count.
    const auto past =
        std::upper_bound(intervals.begin(), intervals.end(), x,
                         [](int64_t v, const AllocationInterval& a) { return v < a.start; });
    const size_t count = size_t(past - intervals.begin());
    for (size_t block = 0; block * kIntervalBlock < count; ++block) {
        if (block < interval_block_end.size() && interval_block_end[block] <= x) continue;
        const size_t end = std::min(count, (block + 1) * kIntervalBlock);
        for (size_t i = block * kIntervalBlock; i < end; ++i)
            if (x < effectiveEnd(intervals[i])) out.push_back(uint32_t(i));
    }
    std::sort(out.begin(), out.end(),
              [&](uint32_t a, uint32_t b) { return intervals[a].size > intervals[b].size; });
    return out;
}

Result<std::shared_ptr<const Timeline>> Timeline::build(const Trace& trace, const TaskContext& ctx,
                                                        const TimelineOptions& options) {
    return build(trace, detail::deviceOrder(trace), ctx, options);
}

Result<std::shared_ptr<const Timeline>> Timeline::build(const Trace& trace,
                                                        detail::DeviceOrder order,
                                                        const TaskContext& ctx,
                                                        const TimelineOptions& options) {
    auto timeline = std::make_shared<Timeline>();
    const std::vector<int16_t>& devices = order.devices;
    auto& perDevice = order.events;
    if (perDevice.size() != devices.size())
        return makeError("device order does not match its devices");
    // A stale order (of another trace, or before events were added) must not
    // be read past the events: one pass, a few ms against the walk's hundreds.
    for (const EventIndexList& list : perDevice)
        if (!list.within(trace.events.size())) return makeError("device order is not the trace's");
    uint64_t done = 0;
    const uint64_t total = trace.events.size();
    for (size_t d = 0; d < devices.size(); ++d) {
        DeviceBuilder builder(trace, devices[d], std::move(perDevice[d]), options);
        auto device = builder.build(ctx, done, total);
        if (!device) return device.error();
        timeline->devices_.push_back(std::move(device.value()));
    }
    ctx.report(total, total);
    return std::shared_ptr<const Timeline>(std::move(timeline));
}

const DeviceTimeline* Timeline::device(int16_t id) const {
    for (const auto& d : devices_)
        if (d.device == id) return &d;
    return nullptr;
}

const DeviceTimeline* Timeline::highestPeakDevice() const {
    const DeviceTimeline* best = nullptr;
    for (const auto& d : devices_)
        if (!best || d.peak.bytes > best->peak.bytes) best = &d;
    return best;
}

}  // namespace memscope
