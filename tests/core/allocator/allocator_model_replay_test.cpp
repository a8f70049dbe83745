// The allocator model's replay of whole traces: held against what real
// snapshots recorded (reserved peak, segment allocations), and on traces made
// here, where the answer is known from the rules.
#include "memscope/allocator/allocator_model_replay.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "../analysis_test_util.h"
#include "memscope/allocator/modelled_trace.h"
#include "memscope/builtin_plugins.h"
#include "memscope/open/open_run.h"

namespace memscope {
namespace {

std::filesystem::path snapshot(const char* name) {
    return std::filesystem::path(MEMSCOPE_FIXTURES_DIR) / "snapshots" / name;
}

constexpr uint64_t MiB = 1024 * 1024;

using testutil::ev;

// Every shared snapshot with allocations: the model's reserved peak within 3%
// and its count of segments made within 15% of what the snapshot recorded;
// the table is printed for the docs and the closing note.
TEST(AllocatorModelReplay, RealSnapshotsAsRecorded) {
    const char* names[] = {
        "cold_cache_289_segment_allocs__kkaitlyn111_a2.pickle",
        "expandable_map_unmap_oom_3dev_cpp_frames__code_location.pickle",
        "no_time_us_deep_stacks__Maphsge4_select_n.pickle",
        "time_us_no_settings_snapshot_actions__EoR_NN.pickle",
        "ext_annotations_19k_entries__notHanmin_a2.pickle",
        "train_torch_adamw_after_warmup__Wuyh11_a2.pickle",
        "user_metadata_compile_ctx__bcrafton_a2.pickle",
    };
    if (!std::filesystem::exists(snapshot(names[0])))
        GTEST_SKIP() << "fixtures folder missing: " << MEMSCOPE_FIXTURES_DIR;
    size_t with_segment_events = 0;
    for (const char* name : names) {
        auto run = openRun(snapshot(name).string(), processRegistry());
        ASSERT_TRUE(run.ok()) << run.message();
        const OpenedTrace& part = run->parts.at(0);
        for (const DeviceTimeline& tl : part.timeline->devices()) {
            auto m = replayAllocatorModel(*part.trace, tl);
            ASSERT_TRUE(m.ok()) << m.message();
            std::printf("%s dev %d: %s\n", name, tl.device, describeAllocatorModel(*m).c_str());
            const auto reserved =
                relativeDifference(m->reserved_peak_bytes, m->recorded.reserved_peak_bytes);
            ASSERT_TRUE(reserved) << name;
            EXPECT_LE(std::abs(*reserved), 3.0) << name << " device " << tl.device;
            const bool maps = m->settings.expandable_segments;
            const uint64_t made = maps ? m->segment_maps : m->segment_allocs;
            const uint64_t recorded = maps ? m->recorded.segment_maps : m->recorded.segment_allocs;
            EXPECT_LE(double(made), double(recorded) * 1.15 + 0.5) << name << " " << tl.device;
            EXPECT_GE(double(made), double(recorded) * 0.85 - 0.5) << name << " " << tl.device;
            with_segment_events += m->recorded.has_segment_events;
        }
    }
    EXPECT_GE(with_segment_events, 6u);  // cold cache, 3 expandable devices, 2 more
}

// A trace as PyTorch records it from an empty cache: segments made where the
// rules say, which the model must find again without seeing them.
Trace coldTrace() {
    Trace t;
    const uint64_t s1 = 0x10000000, s2 = 0x20000000, s3 = 0x30000000;
    t.events = {
        ev(0, EventKind::SegmentAlloc, s1, 20 * MiB),  // 4 MiB: a 20 MiB segment
        ev(1, EventKind::Alloc, s1, 4 * MiB),
        ev(2, EventKind::Alloc, s1 + 4 * MiB, 6 * MiB),  // from its rest
        ev(3, EventKind::SegmentAlloc, s2, 2 * MiB),     // small: a 2 MiB segment
        ev(4, EventKind::Alloc, s2, 4096),
        ev(5, EventKind::SegmentAlloc, s3, 32 * MiB),  // 31 MiB: rounded to 2 MiB
        ev(6, EventKind::Alloc, s3, 31 * MiB),
        ev(7, EventKind::FreeCompleted, s1, 4 * MiB),
        ev(8, EventKind::Alloc, s1, 3 * MiB),  // best fit: the freed 4 MiB
        ev(9, EventKind::FreeCompleted, s3, 31 * MiB),
        ev(10, EventKind::Alloc, s3, 30 * MiB),  // the cached 32 MiB block
    };
    return t;
}

TEST(AllocatorModelReplay, ColdTraceReproducesItsSegments) {
    const Trace t = coldTrace();
    auto tl = Timeline::build(t);
    ASSERT_TRUE(tl.ok());
    auto m = replayAllocatorModel(t, (*tl)->devices().at(0));
    ASSERT_TRUE(m.ok()) << m.message();
    EXPECT_FALSE(m->warm_start);
    EXPECT_EQ(m->segment_allocs, 3u);
    EXPECT_EQ(m->reserved_peak_bytes, 54 * MiB);
    EXPECT_EQ(m->recorded.reserved_peak_bytes, 54 * MiB);
    EXPECT_EQ(m->recorded.segment_allocs, 3u);
    EXPECT_NE(describeAllocatorModel(*m).find("(+0.0%, +0.0%)"), std::string::npos)
        << describeAllocatorModel(*m);

    // The same requests under other settings, and under a cap.
    AllocatorModelOptions o;
    o.settings = *applyAllocatorConf({}, "expandable_segments:True");
    auto e = replayAllocatorModel(t, (*tl)->devices().at(0), o);
    ASSERT_TRUE(e.ok());
    EXPECT_TRUE(e->settings_overridden);
    EXPECT_EQ(e->segment_allocs, 0u);
    EXPECT_GT(e->segment_maps, 0u);
    EXPECT_EQ(e->reserved_peak_bytes, 62 * MiB);  // 4 + 6 + 31 MiB in three 20 MiB pages, 2 small
    o.settings.reset();
    o.device_capacity = 40 * MiB;
    auto capped = replayAllocatorModel(t, (*tl)->devices().at(0), o);
    ASSERT_TRUE(capped.ok());
    ASSERT_TRUE(capped->failure);
    EXPECT_EQ(capped->failure->requested_bytes, 31 * MiB);
    EXPECT_EQ(capped->failure->event_index, 6);
}

// Recorded after warm-up: a 20 MiB segment already held a 4 MiB block
// (freed in the trace) and 16 MiB free; the trace's requests fit it.
Trace warmTrace() {
    Trace t;
    const uint64_t s = 0x40000000;
    t.events = {ev(0, EventKind::FreeCompleted, s, 4 * MiB), ev(1, EventKind::Alloc, s, 8 * MiB),
                ev(2, EventKind::Alloc, s + 8 * MiB, 8 * MiB)};
    AllocatorState end;
    Segment seg;
    seg.address = s;
    seg.total_size = 20 * MiB;
    seg.block_count = 3;
    end.segments.push_back(seg);
    end.blocks = {Block{s, 8 * MiB, 8 * MiB, {}, BlockState::ActiveAllocated},
                  Block{s + 8 * MiB, 8 * MiB, 8 * MiB, {}, BlockState::ActiveAllocated},
                  Block{s + 16 * MiB, 4 * MiB, 0, {}, BlockState::Inactive}};
    t.allocator_state = end;
    return t;
}

TEST(AllocatorModelReplay, WarmTraceStartsFromTheCacheItBeganWith) {
    const Trace t = warmTrace();
    auto tl = Timeline::build(t);
    ASSERT_TRUE(tl.ok());
    auto m = replayAllocatorModel(t, (*tl)->devices().at(0));
    ASSERT_TRUE(m.ok()) << m.message();
    EXPECT_TRUE(m->warm_start);
    EXPECT_EQ(m->start_reserved_bytes, 20 * MiB);
    EXPECT_EQ(m->segment_allocs, 0u);
    EXPECT_EQ(m->reserved_peak_bytes, 20 * MiB);
    // From a fresh cache only the 4 MiB live at the start is placed: the
    // second 8 MiB needs a second segment.
    AllocatorModelOptions fresh;
    fresh.start = AllocatorStart::FreshCache;
    auto f = replayAllocatorModel(t, (*tl)->devices().at(0), fresh);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(f->start_reserved_bytes, 20 * MiB);
    EXPECT_EQ(f->segment_allocs, 0u);  // 4 freed, 8 + 8 fit the one 20 MiB segment
    EXPECT_EQ(f->reserved_peak_bytes, 20 * MiB);
}

void expectSameRun(const AllocatorModelRun& a, const AllocatorModelRun& b,
                   const std::string& what) {
    SCOPED_TRACE(what);
    EXPECT_EQ(a.device, b.device);
    EXPECT_TRUE(a.settings == b.settings);
    EXPECT_EQ(a.settings_source, b.settings_source);
    EXPECT_EQ(a.warm_start, b.warm_start);
    EXPECT_EQ(a.start_reserved_bytes, b.start_reserved_bytes);
    EXPECT_EQ(a.reserved_peak_bytes, b.reserved_peak_bytes);
    EXPECT_EQ(a.reserved_peak_time, b.reserved_peak_time);
    EXPECT_EQ(a.allocated_at_peak_bytes, b.allocated_at_peak_bytes);
    EXPECT_EQ(a.largest_free_block_at_peak_bytes, b.largest_free_block_at_peak_bytes);
    EXPECT_EQ(a.end_reserved_bytes, b.end_reserved_bytes);
    EXPECT_EQ(a.segment_allocs, b.segment_allocs);
    EXPECT_EQ(a.segment_frees, b.segment_frees);
    EXPECT_EQ(a.segment_maps, b.segment_maps);
    EXPECT_EQ(a.segment_unmaps, b.segment_unmaps);
    EXPECT_EQ(a.cache_releases, b.cache_releases);
    EXPECT_EQ(a.requests, b.requests);
    EXPECT_EQ(a.failure.has_value(), b.failure.has_value());
    EXPECT_EQ(a.recorded.has_segment_events, b.recorded.has_segment_events);
    EXPECT_EQ(a.recorded.reserved_peak_bytes, b.recorded.reserved_peak_bytes);
    EXPECT_EQ(a.recorded.segment_allocs, b.recorded.segment_allocs);
    EXPECT_EQ(a.notes, b.notes);
    EXPECT_EQ(describeAllocatorModel(a), describeAllocatorModel(b));
}

// The replay a summary makes beside inference, from the device's events in
// order and then completed with the timeline, is the replay with it: on the
// traces made here (cold; warm; blocks live before a trace without an end
// state, which only the timeline notes) and on every shared snapshot's devices.
TEST(AllocatorModelReplay, InOrderThenCompletedIsTheReplayWithItsTimeline) {
    Trace ghost = coldTrace();
    ghost.events.insert(ghost.events.begin(), ev(0, EventKind::FreeCompleted, 0x50000000, MiB));
    std::vector<std::pair<std::string, Trace>> traces;
    traces.emplace_back("cold", coldTrace());
    traces.emplace_back("warm", warmTrace());
    traces.emplace_back("live before, no end state", std::move(ghost));
    std::vector<OpenedRun> runs;
    const auto folder = std::filesystem::path(MEMSCOPE_FIXTURES_DIR) / "snapshots";
    if (std::filesystem::is_directory(folder))
        for (const auto& f : std::filesystem::directory_iterator(folder))
            if (f.path().extension() == ".pickle")
                if (auto run = openRun(f.path().string(), processRegistry()); run.ok())
                    runs.push_back(std::move(*run));
    for (auto& [name, t] : traces) {
        auto tl = Timeline::build(t);
        ASSERT_TRUE(tl.ok());
        for (const DeviceTimeline& d : (*tl)->devices()) {
            auto whole = replayAllocatorModel(t, d);
            auto part =
                replayAllocatorModelInOrder(t, d.device, d.trace_events, allocatorSettingsOf(t));
            ASSERT_TRUE(whole.ok() && part.ok()) << name;
            completeAllocatorModel(*part, t, d);
            expectSameRun(*whole, *part, name);
        }
    }
    size_t devices = 0;
    for (const OpenedRun& run : runs)
        for (const DeviceTimeline& d : run.parts.at(0).timeline->devices()) {
            const Trace& t = *run.parts[0].trace;
            auto whole = replayAllocatorModel(t, d);
            auto part =
                replayAllocatorModelInOrder(t, d.device, d.trace_events, allocatorSettingsOf(t));
            ASSERT_TRUE(whole.ok() && part.ok()) << run.path;
            completeAllocatorModel(*part, t, d);
            expectSameRun(*whole, *part, run.path + " device " + std::to_string(d.device));
            ++devices;
        }
    std::printf("%zu devices of %zu shared snapshots compared\n", devices, runs.size());

    // What needs the timeline is refused rather than made up.
    const Trace t = warmTrace();
    auto tl = Timeline::build(t);
    ASSERT_TRUE(tl.ok());
    const DeviceTimeline& d = (*tl)->devices().at(0);
    AllocatorModelOptions o;
    o.keep_end_state = true;
    EXPECT_FALSE(replayAllocatorModelInOrder(t, d.device, d.trace_events, {}, o).ok());
    o = {};
    o.start = AllocatorStart::FreshCache;
    EXPECT_FALSE(replayAllocatorModelInOrder(t, d.device, d.trace_events, {}, o).ok());
}

TEST(AllocatorModelReplay, HostileRequestsFailWithoutHarm) {
    Trace t;
    t.events = {ev(0, EventKind::Alloc, 0x1000, UINT64_MAX - 4),
                ev(1, EventKind::Alloc, 0x2000, MiB),
                ev(2, EventKind::Alloc, 0x2000, MiB),
                ev(3, EventKind::FreeCompleted, 0x9999, MiB),
                ev(4, EventKind::SegmentFree, 0, 0),
                ev(5, EventKind::Alloc, 0x3000, 0)};
    auto tl = Timeline::build(t);
    ASSERT_TRUE(tl.ok());
    auto m = replayAllocatorModel(t, (*tl)->devices().at(0));
    ASSERT_TRUE(m.ok()) << m.message();
    ASSERT_TRUE(m->failure);  // no address space holds 2^64 bytes
    EXPECT_EQ(m->failure->event_index, 0);
}

TEST(AllocatorModelReplay, ModelledTraceShowsThePredictedSegments) {
    Trace t = coldTrace();
    // Segments as another run made them: the model replaces them.
    t.events.insert(t.events.begin(), ev(0, EventKind::SegmentAlloc, 0x50000000, 512 * MiB));
    auto tl = Timeline::build(t);
    ASSERT_TRUE(tl.ok());
    AllocatorModelOptions o;
    o.settings = *applyAllocatorConf({}, "max_split_size_mb:25");
    auto applied = applyAllocatorModel(t, (*tl)->devices().at(0), o);
    ASSERT_TRUE(applied.ok()) << applied.message();
    size_t segments = 0;
    for (const Event& e : t.events) segments += e.kind == EventKind::SegmentAlloc;
    EXPECT_EQ(segments, applied->segment_allocs);
    auto rebuilt = Timeline::build(t);
    ASSERT_TRUE(rebuilt.ok());
    const DeviceTimeline& d = (*rebuilt)->devices().at(0);
    int64_t most = d.reserved.initial;
    for (int64_t y : d.reserved.ys()) most = std::max(most, y);
    EXPECT_EQ(uint64_t(most), applied->reserved_peak_bytes);
    // Every live block at the end lies inside a segment of the model's.
    auto state = allocatorStateAt(t, d, d.end);
    ASSERT_TRUE(state.ok());
    EXPECT_TRUE(state->loose_blocks.empty());
    EXPECT_TRUE(state->backwards);
    EXPECT_EQ(state->reserved_bytes, applied->end_reserved_bytes);
    // Replaying the modelled trace gives the model's own figures back.
    auto again = replayAllocatorModel(t, d, o);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->reserved_peak_bytes, applied->reserved_peak_bytes);
    EXPECT_EQ(again->recorded.segment_allocs, applied->segment_allocs);
}

TEST(AllocatorModelReplay, ModelledTraceKeepsTheCategoriesOfBlocksAliveThroughout) {
    // A parameter alive from before the trace to its end (known from the end
    // state and inferred), and an activation the trace allocates and frees.
    Trace t;
    const uint64_t s = 0x60000000;
    t.events = {ev(0, EventKind::Alloc, s + 8 * MiB, 4 * MiB),
                ev(1, EventKind::FreeCompleted, s + 8 * MiB, 4 * MiB)};
    AllocatorState end;
    Segment seg;
    seg.address = s;
    seg.total_size = 20 * MiB;
    seg.block_count = 2;
    end.segments.push_back(seg);
    end.blocks = {Block{s, 8 * MiB, 8 * MiB, {}, BlockState::ActiveAllocated},
                  Block{s + 8 * MiB, 12 * MiB, 0, {}, BlockState::Inactive}};
    t.allocator_state = end;
    t.inferred_block_categories = {{Category::Parameter, CategoryRule::AliveThroughout},
                                   {Category::Unknown, CategoryRule::Recorded}};
    auto tl = Timeline::build(t);
    ASSERT_TRUE(tl.ok());
    AllocatorModelOptions o;
    o.start = AllocatorStart::FreshCache;  // the parameter moves to a model address
    auto applied = applyAllocatorModel(t, (*tl)->devices().at(0), o);
    ASSERT_TRUE(applied.ok()) << applied.message();
    auto rebuilt = Timeline::build(t);
    ASSERT_TRUE(rebuilt.ok());
    const DeviceTimeline& d = (*rebuilt)->devices().at(0);
    size_t ghosts = 0;
    for (const AllocationInterval& iv : d.intervals) {
        if (iv.alloc_event != kNoEvent) continue;
        ++ghosts;
        EXPECT_EQ(iv.size, 8 * MiB);
        EXPECT_NE(iv.address, s);  // placed by the model
        EXPECT_EQ(iv.category, Category::Parameter);
        EXPECT_TRUE(iv.category_inferred);
    }
    EXPECT_EQ(ghosts, 1u);
    EXPECT_EQ(d.peak.by_category[index(Category::Parameter)], int64_t(8 * MiB));
}

}  // namespace
}  // namespace memscope
