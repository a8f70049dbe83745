#include "memscope/timeline/timeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "memscope/analysis/summary.h"
#include "memscope_test/event_builder.h"

using namespace memscope;

namespace {

struct TraceBuilder {
    Trace trace;
    int64_t now = 1'000'000'000;
    TraceBuilder& add(EventKind kind, uint64_t addr, uint64_t size,
                      Category cat = Category::Unknown, int16_t device = 0) {
        now += 1000;
        trace.events.push_back(testsupport::makeEvent(now, kind, addr, size, cat).device(device));
        return *this;
    }
    TraceBuilder& alloc(uint64_t a, uint64_t s, Category c = Category::Unknown, int16_t d = 0) {
        return add(EventKind::Alloc, a, s, c, d);
    }
    TraceBuilder& free(uint64_t a, uint64_t s, int16_t d = 0) {
        add(EventKind::FreeRequested, a, s, Category::Unknown, d);
        return add(EventKind::FreeCompleted, a, s, Category::Unknown, d);
    }
    std::shared_ptr<const Timeline> build() {
        auto t = Timeline::build(trace);
        EXPECT_TRUE(t.ok());
        return t.value();
    }
};

}  // namespace

TEST(Timeline, PairsAllocAndFreeAndFindsThePeak) {
    TraceBuilder b;
    b.alloc(0x100, 100, Category::Parameter)      // 0: 100
        .alloc(0x200, 50, Category::Activation)   // 1: 150
        .free(0x200, 50)                          // 2,3: 100
        .alloc(0x300, 300, Category::Activation)  // 4: 400  <- peak
        .free(0x300, 300)                         // 5,6: 100
        .alloc(0x400, 300, Category::Gradient);   // 7: 400 (tie: the first one wins)
    auto tl = b.build();
    ASSERT_EQ(tl->devices().size(), 1u);
    const DeviceTimeline& d = tl->devices()[0];
    EXPECT_EQ(d.peak.bytes, 400);
    EXPECT_EQ(d.peak.event_index, 4);
    EXPECT_EQ(d.peak.time, b.trace.events[4].time);
    EXPECT_EQ(d.peak.by_category[index(Category::Parameter)], 100);
    EXPECT_EQ(d.peak.by_category[index(Category::Activation)], 300);
    EXPECT_EQ(d.peak.by_category[index(Category::Gradient)], 0);
    EXPECT_EQ(d.peak.live_intervals.size(), 2u);
    EXPECT_EQ(d.live.valueAt(b.trace.events.back().time), 400);
    EXPECT_EQ(d.live_by_category[index(Category::Activation)].valueAt(b.trace.events[5].time), 300);
    EXPECT_EQ(d.live_by_category[index(Category::Activation)].valueAt(b.trace.events[6].time), 0);
    ASSERT_EQ(d.intervals.size(), 4u);
    EXPECT_EQ(d.intervals[1].end, b.trace.events[3].time);
    EXPECT_EQ(d.intervals[3].free_event, kNoEvent);
}

TEST(Timeline, FreeWithoutAllocIsAGhostLiveFromTheStart) {
    TraceBuilder b;
    b.alloc(0x100, 10).free(0x900, 500).alloc(0x200, 20);
    auto tl = b.build();
    const DeviceTimeline& d = tl->devices()[0];
    EXPECT_EQ(d.initial_live, 500);
    EXPECT_EQ(d.live.initial, 500);
    EXPECT_EQ(d.peak.bytes, 510);  // after the first alloc, before the ghost's free
    EXPECT_EQ(d.peak.event_index, 0);
    ASSERT_EQ(d.intervals.size(), 3u);
    EXPECT_EQ(d.intervals[0].alloc_event, kNoEvent);  // ghosts come first
    EXPECT_EQ(d.intervals[0].size, 500u);
    EXPECT_EQ(d.live.valueAt(b.trace.events.back().time), 30);
}

TEST(Timeline, EndStateBlocksNeverAllocatedAreGhosts) {
    TraceBuilder b;
    b.alloc(0x1000, 256).alloc(0x2000, 128).free(0x2000, 128);
    AllocatorState state;
    // One segment: the traced block (live at the end), an untraced active one,
    // an inactive one, and one pending free (not "active_allocated": not live).
    state.blocks = {Block{0x1000, 256, 250, {}, BlockState::ActiveAllocated},
                    Block{0x1100, 1024, 1000, {}, BlockState::ActiveAllocated},
                    Block{0x1500, 512, 0, {}, BlockState::Inactive},
                    Block{0x1700, 64, 60, {}, BlockState::ActivePendingFree}};
    Segment seg;
    seg.address = 0x1000;
    seg.total_size = 4096;
    seg.block_count = 4;
    state.segments.push_back(seg);
    b.trace.allocator_state = state;
    auto tl = b.build();
    const DeviceTimeline& d = tl->devices()[0];
    EXPECT_EQ(d.initial_live, 1024);
    EXPECT_EQ(d.peak.bytes, 1024 + 256 + 128);
    EXPECT_EQ(d.peak.event_index, 1);
    const TraceSummary s = summarize(b.trace, *tl);
    const DeviceSummary& ds = s.devices.at(0);
    EXPECT_EQ(ds.segments, 1u);
    EXPECT_EQ(ds.reserved_bytes, 4096u);
    EXPECT_EQ(ds.final_active_bytes, 256u + 1024u);
    EXPECT_EQ(ds.alloc_count, 2u);
    EXPECT_EQ(ds.free_completed_count, 1u);
    EXPECT_EQ(ds.trace_entries, 4u);
    EXPECT_EQ(ds.first_time_us, b.trace.events.front().time / 1000);
}

TEST(Timeline, NoEventsPeakIsTheInitialState) {
    Trace trace;
    AllocatorState state;
    state.blocks = {Block{0x10, 100, 100, {}, BlockState::ActiveAllocated}};
    Segment seg;
    seg.device = 1;
    seg.address = 0x10;
    seg.total_size = 200;
    seg.block_count = 1;
    state.segments.push_back(seg);
    trace.allocator_state = state;
    auto tl = Timeline::build(trace);
    ASSERT_TRUE(tl.ok());
    const TraceSummary summary = summarize(trace, **tl);
    const DeviceSummary& ds = summary.devices.at(1);
    EXPECT_EQ(ds.peak_active_bytes, 100);
    EXPECT_EQ(ds.peak_event_index, -1);
    EXPECT_FALSE(ds.first_time_us.has_value());
    EXPECT_FALSE(ds.peak_time_us.has_value());
    EXPECT_EQ(ds.trace_entries, 0u);
}

TEST(Timeline, DevicesAreSeparateAndReservedFollowsSegments) {
    TraceBuilder b;
    b.add(EventKind::SegmentAlloc, 0x0, 2048, Category::Unknown, 1)
        .alloc(0x0, 1000, Category::Unknown, 1)
        .alloc(0x5000, 7, Category::Unknown, 0)
        .add(EventKind::SegmentMap, 0x4000, 4096, Category::Unknown, 1)
        .add(EventKind::SegmentUnmap, 0x4000, 4096, Category::Unknown, 1)
        .add(EventKind::Oom, 0, 1 << 20, Category::Unknown, 1);
    auto tl = b.build();
    ASSERT_EQ(tl->devices().size(), 2u);
    const DeviceTimeline* d1 = tl->device(1);
    ASSERT_NE(d1, nullptr);
    EXPECT_EQ(d1->peak.bytes, 1000);
    EXPECT_EQ(d1->reserved.ys().back(), 2048);
    EXPECT_EQ(d1->reserved.valueAt(b.trace.events[3].time), 2048 + 4096);
    const TraceSummary s = summarize(b.trace, *tl);
    EXPECT_EQ(s.devices.at(1).oom_count, 1u);
    EXPECT_EQ(s.devices.at(1).segment_alloc_count, 1u);
    EXPECT_EQ(s.devices.at(1).reserved_bytes, 2048u);
    EXPECT_EQ(s.devices.at(0).peak_active_bytes, 7);
    EXPECT_FALSE(s.devices.at(0).reserved_bytes.has_value());
    // The device a run is about when none is named: device 1, whose peak
    // (1000 B) is above device 0's (7 B).
    ASSERT_NE(tl->highestPeakDevice(), nullptr);
    EXPECT_EQ(tl->highestPeakDevice()->device, 1);
    EXPECT_EQ(TraceBuilder{}.build()->highestPeakDevice(), nullptr);  // no devices
}

// Opening a file computes the device order once for inference and the
// timeline: built from it, the timeline is the one built from the trace; an
// order whose lists do not match its devices or its events is refused, not
// read past.
TEST(Timeline, ABuildFromAGivenDeviceOrderIsTheSame) {
    TraceBuilder b;
    b.alloc(0x0, 1000, Category::Unknown, 1)
        .alloc(0x5000, 7, Category::Activation, 0)
        .alloc(0x9000, 64, Category::Unknown, 1)
        .free(0x0, 1000, 1)
        .add(EventKind::SegmentAlloc, 0x0, 2048, Category::Unknown, 2);
    auto plain = Timeline::build(b.trace);
    detail::DeviceOrder order = detail::deviceOrder(b.trace);
    ASSERT_EQ(order.devices, (std::vector<int16_t>{0, 1, 2}));
    ASSERT_EQ(order.events.size(), 3u);
    EXPECT_EQ(order.events[1].toVector(), (std::vector<uint64_t>{0, 2, 3, 4}));
    EXPECT_FALSE(order.events[1].isAll());
    auto given = Timeline::build(b.trace, order, {}, {});
    ASSERT_TRUE(plain.ok() && given.ok());
    ASSERT_EQ((*given)->devices().size(), (*plain)->devices().size());
    for (size_t d = 0; d < (*plain)->devices().size(); ++d) {
        const DeviceTimeline& p = (*plain)->devices()[d];
        const DeviceTimeline& g = (*given)->devices()[d];
        EXPECT_EQ(g.device, p.device);
        EXPECT_EQ(g.peak.bytes, p.peak.bytes);
        EXPECT_EQ(g.peak.trace_event, p.peak.trace_event);
        EXPECT_EQ(g.intervals.size(), p.intervals.size());
        EXPECT_TRUE(std::ranges::equal(g.reserved.ys(), p.reserved.ys()));
    }
    detail::DeviceOrder stale = order;
    std::vector<uint64_t> past = stale.events[1].toVector();
    past.push_back(b.trace.events.size());
    stale.events[1] = EventIndexList(std::move(past));
    EXPECT_FALSE(Timeline::build(b.trace, stale, {}, {}).ok());
    // Every event of a longer trace: refused too.
    stale.events[1] = EventIndexList::all(b.trace.events.size() + 1);
    EXPECT_FALSE(Timeline::build(b.trace, stale, {}, {}).ok());
    order.events.pop_back();
    EXPECT_FALSE(Timeline::build(b.trace, order, {}, {}).ok());
}

// A large trace's devices are counted on two cores: the devices (those of
// the segments too, negative ordinals included) are Trace::devices, and each
// list holds its device's events in time order, whichever half they were in.
TEST(Timeline, TheDeviceOrderOfALargeTraceIsItsDevicesEventsInTimeOrder) {
    Trace trace;
    constexpr size_t kEvents = 3'000'000;
    const int16_t devices[] = {-1, 0, 3, 300};
    trace.events.resize(kEvents);
    for (size_t i = 0; i < kEvents; ++i) {
        Event& e = trace.events[i];
        e.device = devices[(i * 7 + i / 1000) % 4];
        e.time = int64_t(i);
        e.kind = EventKind::Marker;
    }
    // Device 3 goes back in time across the halves' boundary: it is sorted.
    for (size_t i = kEvents / 2; i < kEvents / 2 + 64; ++i)
        if (trace.events[i].device == 3) trace.events[i].time = -int64_t(i);
    trace.allocator_state.emplace();
    trace.allocator_state->segments.push_back(Segment{});
    trace.allocator_state->segments[0].device = 9;  // no events
    const detail::DeviceOrder order = detail::deviceOrder(trace);
    EXPECT_EQ(order.devices, trace.devices());
    EXPECT_EQ(order.devices, (std::vector<int16_t>{-1, 0, 3, 9, 300}));
    ASSERT_EQ(order.events.size(), order.devices.size());
    size_t total = 0;
    for (size_t d = 0; d < order.devices.size(); ++d) {
        const EventIndexList& list = order.events[d];
        total += list.size();
        for (size_t k = 0; k < list.size(); ++k) {
            ASSERT_EQ(trace.events[list[k]].device, order.devices[d]);
            if (k > 0) {
                ASSERT_LE(trace.events[list[k - 1]].time, trace.events[list[k]].time);
            }
        }
    }
    EXPECT_EQ(total, kEvents);
    EXPECT_TRUE(order.events[3].empty());  // device 9: its segment only
}

// One device with every event in time order (nearly every snapshot) keeps
// no list: the order is every index. Out of order anywhere, at the seam of
// the halves counted on two cores too, it is a list sorted by time.
TEST(Timeline, OneDeviceInTimeOrderKeepsNoListOfItsEvents) {
    Trace trace;
    constexpr size_t kEvents = 3'000'000;
    trace.events.resize(kEvents);
    for (size_t i = 0; i < kEvents; ++i) {
        trace.events[i].device = 2;
        trace.events[i].time = int64_t(i / 3);  // equal times are in order
        trace.events[i].kind = EventKind::Marker;
    }
    detail::DeviceOrder order = detail::deviceOrder(trace);
    ASSERT_EQ(order.devices, (std::vector<int16_t>{2}));
    ASSERT_EQ(order.events.size(), 1u);
    EXPECT_TRUE(order.events[0].isAll());
    EXPECT_EQ(order.events[0].size(), kEvents);
    EXPECT_EQ(order.events[0].memoryBytes(), 0u);
    EXPECT_EQ(order.events[0][12345], 12345u);
    // A step back in time exactly where the second half begins.
    for (size_t seam : {kEvents / 2, kEvents / 2 + 1, kEvents - 1, size_t(1)}) {
        Trace back = trace;
        back.events[seam].time = back.events[seam - 1].time - 1;
        const detail::DeviceOrder sorted = detail::deviceOrder(back);
        ASSERT_FALSE(sorted.events[0].isAll()) << "seam " << seam;
        ASSERT_EQ(sorted.events[0].size(), kEvents);
        for (size_t k = 1; k < kEvents; ++k)
            ASSERT_LE(back.events[sorted.events[0][k - 1]].time,
                      back.events[sorted.events[0][k]].time)
                << "seam " << seam << ", position " << k;
    }
    // A second device with events: lists for both.
    Trace two = trace;
    two.events[7].device = 5;
    const detail::DeviceOrder both = detail::deviceOrder(two);
    ASSERT_EQ(both.events.size(), 2u);
    EXPECT_FALSE(both.events[0].isAll());
    EXPECT_EQ(both.events[1].toVector(), (std::vector<uint64_t>{7}));
    EXPECT_EQ(both.events[0].size(), kEvents - 1);
}

// The list as every index and as a vector of the same indexes read alike:
// by index, by iterator, in searches, and compared.
TEST(Timeline, AnEventIndexListReadsTheSameHoweverItIsHeld) {
    std::vector<uint64_t> indexes(1000);
    for (size_t i = 0; i < indexes.size(); ++i) indexes[i] = i;
    const EventIndexList all = EventIndexList::all(indexes.size());
    const EventIndexList held(indexes);
    EXPECT_TRUE(all.isAll());
    EXPECT_FALSE(held.isAll());
    EXPECT_EQ(all, held);
    EXPECT_EQ(all.toVector(), indexes);
    EXPECT_EQ(all.front(), 0u);
    EXPECT_EQ(all.back(), 999u);
    EXPECT_EQ(*std::lower_bound(all.begin(), all.end(), 640u), 640u);
    EXPECT_EQ(std::upper_bound(held.begin(), held.end(), 640u) - held.begin(), 641);
    EXPECT_EQ(all.end() - all.begin(), 1000);
    EXPECT_EQ(all.begin()[17], 17u);
    EXPECT_NE(all, EventIndexList::all(999));
    EXPECT_NE(held, EventIndexList(std::vector<uint64_t>{0, 2}));
    // Within a trace of so many events: every index below it.
    EXPECT_TRUE(all.within(1000));
    EXPECT_FALSE(all.within(999));
    EXPECT_TRUE(held.within(1000));
    EXPECT_FALSE(held.within(999));
    EXPECT_FALSE(EventIndexList(std::vector<uint64_t>{3, 1}).within(3));
    EXPECT_EQ(EventIndexList(), EventIndexList::all(0));
    EXPECT_TRUE(EventIndexList().empty());
    uint64_t sum = 0;
    for (uint64_t i : all) sum += i;
    EXPECT_EQ(sum, 999u * 1000u / 2);
}

TEST(Timeline, UnsortedTimesAreOrderedAndEventIndexTimeBaseHasNoClock) {
    Trace trace;
    trace.metadata.time_base = TimeBase::EventIndex;
    trace.events.push_back(Event{2, 0x1, 10, {}, {}, 0, 0, EventKind::Alloc, Category::Unknown});
    trace.events.push_back(Event{0, 0x2, 30, {}, {}, 0, 0, EventKind::Alloc, Category::Unknown});
    trace.events.push_back(
        Event{1, 0x2, 30, {}, {}, 0, 0, EventKind::FreeCompleted, Category::Unknown});
    auto tl = Timeline::build(trace);
    ASSERT_TRUE(tl.ok());
    const DeviceTimeline& d = (*tl)->devices()[0];
    EXPECT_EQ(d.peak.bytes, 30);
    EXPECT_EQ(d.peak.trace_event, 1u);
    EXPECT_EQ(d.initial_live, 0);
    const TraceSummary summary = summarize(trace, **tl);
    const DeviceSummary& ds = summary.devices.at(0);
    EXPECT_FALSE(ds.first_time_us.has_value());
    EXPECT_FALSE(ds.peak_time_us.has_value());
}

TEST(Timeline, LiveAtAndCancel) {
    TraceBuilder b;
    b.alloc(0x1, 5).alloc(0x2, 50).free(0x1, 5);
    auto tl = b.build();
    const auto live = tl->devices()[0].liveAt(b.trace.events[1].time);
    ASSERT_EQ(live.size(), 2u);
    EXPECT_EQ(tl->devices()[0].intervals[live[0]].size, 50u);  // largest first

    std::atomic<bool> cancel{true};
    Trace big;
    for (int i = 0; i < (1 << 21); ++i)
        big.events.push_back(
            Event{i, uint64_t(i), 1, {}, {}, 0, 0, EventKind::Alloc, Category::Unknown});
    TaskContext ctx;
    ctx.cancel = &cancel;
    auto r = Timeline::build(big, ctx);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.message(), "cancelled");
}

TEST(Timeline, LiveAtMatchesABruteForceScan) {
    // Many short-lived allocations and a few long ones, so that most blocks of
    // intervals are skipped and some are not.
    TraceBuilder b;
    std::mt19937 rng(3);
    std::vector<uint64_t> open;
    for (int i = 0; i < 5000; ++i) {
        if (!open.empty() && rng() % 2) {
            const size_t k = rng() % open.size();
            b.free(open[k], 1);
            open.erase(open.begin() + long(k));
        } else {
            const uint64_t addr = 0x1000 + uint64_t(i) * 16;
            b.alloc(addr, 1 + rng() % 1000);
            if (rng() % 50 != 0) open.push_back(addr);  // the rest are freed or live to the end
        }
        if (open.size() > 8) {
            b.free(open.front(), 1);
            open.erase(open.begin());
        }
    }
    b.free(0xdead0000, 77);  // a ghost
    auto tl = b.build();
    const DeviceTimeline& d = tl->devices()[0];
    ASSERT_GT(d.interval_block_end.size(), 10u);
    for (int probe = 0; probe < 300; ++probe) {
        const int64_t x = d.start - 5 + int64_t(rng() % uint64_t(d.end - d.start + 10));
        std::vector<uint32_t> expected;
        for (uint32_t i = 0; i < d.intervals.size(); ++i) {
            const AllocationInterval& a = d.intervals[i];
            if (a.start <= x && (a.free_event == kNoEvent || x < a.end)) expected.push_back(i);
        }
        std::vector<uint32_t> got = d.liveAt(x);
        std::sort(got.begin(), got.end());
        ASSERT_EQ(got, expected) << "at x=" << x;
    }
}
