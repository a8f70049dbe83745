// applyRecordedRange: a merged trace cut to `record --steps A:B` or
// `--capture-range nvtx:NAME`, starting with the blocks and segments alive
// when the range began.
#include "memscope/recording/recorded_range.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "../analysis_test_util.h"
#include "memscope/model/trace.h"

namespace memscope {
namespace {

using testutil::event;

PhaseId addPhase(Trace& t, const std::string& name, PhaseKind kind, int64_t start, int64_t end,
                 PhaseId parent = {}, int32_t step = -1) {
    Phase p;
    p.name = t.internString(name);
    p.kind = kind;
    p.start = start;
    p.end = end;
    p.parent = parent;
    p.step = step;
    return t.addPhase(p);
}

void addAttribute(Trace& t, const std::string& key, const std::string& value) {
    t.attributes.push_back({t.events.size() - 1, t.internString(key), t.internString(value)});
}

void addAnnotation(Trace& t, int64_t time, const std::string& name) {
    Annotation a;
    a.time = time;
    a.name = t.internString(name);
    t.annotations.push_back(a);
}

StackId stackOf(Trace& t, const std::string& function) {
    const FrameId f = t.internFrame({t.internString(function), t.internString("train.py"), 7});
    return t.internStack(std::span<const FrameId>(&f, 1));
}

// Step k (0..3) runs [1000 (k+1), 1000 (k+1) + 900] inside a run-wide NVTX
// range "train" [50, 5500], with a forward [start + 100, start + 500]; an
// open phase "warmup" from 500 and an open phase "profiler" from 2500. The
// events (index: time kind address):
//    0:  100 SegmentAlloc 0x10000 (8192 B)   alive at 2000
//    1:  110 Alloc 0x10000 (256 B, a stack, attribute user_metadata=weights)
//    2:  120 Alloc 0x10100, 3: 130 FreeRequested, 4: 140 FreeCompleted
//    5:  150 Alloc 0x10200 (32 B), 6: 160 FreeRequested: never completed
//    7:  170 Alloc 0x10300 (16 B), 8: 180 FreeCompleted,
//    9:  190 Alloc 0x10300 (48 B) again
//   10:  200 SegmentAlloc 0x90000, 11: 210 SegmentFree
//   12: 1100 Alloc 0x20000 (step 0; attribute), 13: 1500 FreeCompleted
//   14: 1950 Alloc 0x21000 (500 B) between steps 0 and 1
//   15: 1960 Alloc 0x10000 on device 1 (77 B)
//   16: 2000 Alloc 0x30000 (at step 1's start)  17: 2200 Alloc 0x30100 (fwd 1)
//   18: 2500 FreeCompleted 0x30000              19: 2600 Oom (attribute)
//   20: 3100 Alloc 0x31000 (fwd 2)              21: 3900 FreeCompleted 0x31000
//   22: 4100 Alloc 0x40000 (step 3; attribute)  23: 4500 FreeCompleted 0x10000
// The end state holds segment 0x10000 (blocks 0x10000 allocated above,
// 0x10400 and 0x10600 that no event allocated, 0x10500 inactive) and segment
// 0x80000 that no event opened, with one block.
struct FourSteps {
    Trace trace;
    StackId param_stack, state_stack, seg_stack;
};

FourSteps fourSteps() {
    FourSteps f;
    Trace& t = f.trace;
    f.param_stack = stackOf(t, "init_weights");
    f.state_stack = stackOf(t, "adam_state");
    f.seg_stack = stackOf(t, "cudaMalloc");

    const PhaseId train = addPhase(t, "train", PhaseKind::Range, 50, 5500);
    addPhase(t, "warmup", PhaseKind::Range, 500, 500);
    for (int32_t k = 0; k < 4; ++k) {
        const int64_t s = 1000 * (k + 1);
        const PhaseId step =
            addPhase(t, "step " + std::to_string(k), PhaseKind::Step, s, s + 900, train, k);
        addPhase(t, "forward", PhaseKind::Forward, s + 100, s + 500, step, k);
    }
    addPhase(t, "profiler", PhaseKind::Range, 2500, 2500);

    using K = EventKind;
    using C = Category;
    auto& ev = t.events;
    ev.push_back(event(100, K::SegmentAlloc, 0x10000, 8192, C::Unknown));
    ev.back().stack = f.seg_stack;
    ev.push_back(event(110, K::Alloc, 0x10000, 256, C::Parameter));
    ev.back().stack = f.param_stack;
    ev.back().stream = t.internStream(0x77);
    addAttribute(t, "user_metadata", "weights");
    ev.push_back(event(120, K::Alloc, 0x10100, 64, C::Temporary));
    ev.push_back(event(130, K::FreeRequested, 0x10100, 64, C::Temporary));
    ev.push_back(event(140, K::FreeCompleted, 0x10100, 64, C::Temporary));
    ev.push_back(event(150, K::Alloc, 0x10200, 32, C::Temporary));
    ev.push_back(event(160, K::FreeRequested, 0x10200, 32, C::Temporary));
    ev.push_back(event(170, K::Alloc, 0x10300, 16, C::Activation));
    ev.push_back(event(180, K::FreeCompleted, 0x10300, 16, C::Activation));
    ev.push_back(event(190, K::Alloc, 0x10300, 48, C::Activation));
    ev.push_back(event(200, K::SegmentAlloc, 0x90000, 4096, C::Unknown));
    ev.push_back(event(210, K::SegmentFree, 0x90000, 4096, C::Unknown));
    ev.push_back(event(1100, K::Alloc, 0x20000, 100, C::Activation));
    addAttribute(t, "compile_context", "step 0");
    ev.push_back(event(1500, K::FreeCompleted, 0x20000, 100, C::Activation));
    ev.push_back(event(1950, K::Alloc, 0x21000, 500, C::Input));
    ev.push_back(event(1960, K::Alloc, 0x10000, 77, C::Input, {}, 1));
    ev.push_back(event(2000, K::Alloc, 0x30000, 128, C::Activation));
    ev.push_back(event(2200, K::Alloc, 0x30100, 64, C::Activation));
    ev.push_back(event(2500, K::FreeCompleted, 0x30000, 128, C::Activation));
    ev.push_back(event(2600, K::Oom, 0, 1 << 20, C::Unknown));
    addAttribute(t, "device_free", "123");
    ev.push_back(event(3100, K::Alloc, 0x31000, 256, C::Gradient));
    ev.push_back(event(3900, K::FreeCompleted, 0x31000, 256, C::Gradient));
    ev.push_back(event(4100, K::Alloc, 0x40000, 8, C::Activation));
    addAttribute(t, "user_metadata", "late");
    ev.push_back(event(4500, K::FreeCompleted, 0x10000, 256, C::Parameter));
    for (Event& e : ev) e.phase = PhaseId(999);  // stale: must be reassigned

    for (int64_t at : {500, 2000, 2500, 3900, 4000}) addAnnotation(t, at, std::to_string(at));

    AllocatorState state;
    Segment a;
    a.address = 0x10000;
    a.total_size = 8192;
    a.device = 0;
    a.first_block = 0;
    a.block_count = 4;
    state.segments.push_back(a);
    state.blocks.push_back({0x10000, 256, 256, f.param_stack, BlockState::ActiveAllocated});
    state.blocks.push_back({0x10400, 128, 100, f.state_stack, BlockState::ActiveAllocated});
    state.blocks.push_back({0x10500, 64, 64, {}, BlockState::Inactive});
    state.blocks.push_back({0x10600, 32, 30, {}, BlockState::ActivePendingFree});
    Segment b;
    b.address = 0x80000;
    b.total_size = 4096;
    b.device = 0;
    b.stack = f.seg_stack;
    b.first_block = 4;
    b.block_count = 1;
    state.segments.push_back(b);
    state.blocks.push_back({0x80000, 1024, 1000, f.state_stack, BlockState::ActiveAllocated});
    t.allocator_state = state;
    t.inferred_block_categories.resize(state.blocks.size());
    t.metadata.name = "four steps";
    return f;
}

RecordedRangeSpec steps(int32_t first, int32_t last) {
    RecordedRangeSpec s;
    s.steps = std::pair{first, last};
    return s;
}

RecordedRangeSpec nvtx(const std::string& name) {
    RecordedRangeSpec s;
    s.nvtx = name;
    return s;
}

// The attribute `key` of event `index`, "" when it has none.
std::string attribute(const Trace& t, uint64_t index, const std::string& key) {
    for (const EventAttribute& a : t.attributes)
        if (a.event == index && t.string(a.key) == key) return std::string(t.string(a.value));
    return "";
}

std::vector<int64_t> timesOf(const Trace& t) {
    std::vector<int64_t> out;
    for (const Event& e : t.events) out.push_back(e.time);
    return out;
}

std::vector<std::string> phaseNames(const Trace& t) {
    std::vector<std::string> out;
    for (const Phase& p : t.phases) out.emplace_back(t.string(p.name));
    return out;
}

std::string property(const Trace& t, const std::string& key) {
    const std::string* v = t.metadata.property(key);
    return v ? *v : "<none>";
}

// ------------------------------------------------------------------ steps

TEST(RecordedRange, StepsKeepTheEventsInsideTheRange) {
    FourSteps f = fourSteps();
    Trace& t = f.trace;
    auto r = applyRecordedRange(t, steps(1, 2));
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(r->start, 2000);
    EXPECT_EQ(r->end, 3900);
    // 6 blocks and segments carried from the events, 4 from the end state,
    // then events 16-21: the range's bounds are inside it.
    ASSERT_EQ(t.events.size(), 16u);
    const std::vector<int64_t> range_times = {2000, 2200, 2500, 2600, 3100, 3900};
    const std::vector<int64_t> times = timesOf(t);
    EXPECT_EQ(std::vector<int64_t>(times.begin() + 10, times.end()), range_times);
    for (size_t i = 0; i < 10; ++i) EXPECT_EQ(t.events[i].time, 2000) << i;
    EXPECT_EQ(t.events[10].address, 0x30000u);
    EXPECT_EQ(t.events[13].kind, EventKind::Oom);
    EXPECT_EQ(t.events[15].kind, EventKind::FreeCompleted);
    EXPECT_EQ(t.events[15].address, 0x31000u);
}

TEST(RecordedRange, BlocksAndSegmentsAliveAtTheStartAreCarriedIn) {
    FourSteps f = fourSteps();
    Trace& t = f.trace;
    auto r = applyRecordedRange(t, steps(1, 2));
    ASSERT_TRUE(r) << r.message();
    ASSERT_GE(t.events.size(), 6u);

    // In the order they were allocated, as allocations at the range's start.
    struct Want {
        EventKind kind;
        uint64_t address, size;
        int16_t device;
        Category category;
        const char* allocated_at;
    };
    const Want want[] = {
        {EventKind::SegmentAlloc, 0x10000, 8192, 0, Category::Unknown, "100"},
        {EventKind::Alloc, 0x10000, 256, 0, Category::Parameter, "110"},
        // Free requested, never completed: still the allocator's.
        {EventKind::Alloc, 0x10200, 32, 0, Category::Temporary, "150"},
        // Allocated, freed, allocated again: the second allocation.
        {EventKind::Alloc, 0x10300, 48, 0, Category::Activation, "190"},
        {EventKind::Alloc, 0x21000, 500, 0, Category::Input, "1950"},
        // The same address on another device is another block.
        {EventKind::Alloc, 0x10000, 77, 1, Category::Input, "1960"},
    };
    for (size_t i = 0; i < std::size(want); ++i) {
        const Event& e = t.events[i];
        SCOPED_TRACE(i);
        EXPECT_EQ(e.kind, want[i].kind);
        EXPECT_EQ(e.address, want[i].address);
        EXPECT_EQ(e.size, want[i].size);
        EXPECT_EQ(e.device, want[i].device);
        EXPECT_EQ(e.category, want[i].category);
        EXPECT_EQ(e.time, 2000);
        EXPECT_EQ(attribute(t, i, "allocated_at_ns"), want[i].allocated_at);
    }
    // Their stacks, streams and attributes go with them.
    EXPECT_EQ(t.events[0].stack, f.seg_stack);
    EXPECT_EQ(t.events[1].stack, f.param_stack);
    EXPECT_EQ(t.streams[t.events[1].stream], 0x77u);
    EXPECT_EQ(attribute(t, 1, "user_metadata"), "weights");

    // Blocks freed before the start (0x10100, 0x20000) and the segment
    // released before it (0x90000) are not there.
    for (const Event& e : t.events) {
        EXPECT_NE(e.address, 0x10100u);
        EXPECT_NE(e.address, 0x20000u);
        EXPECT_NE(e.address, 0x90000u);
    }
}

TEST(RecordedRange, AttributesFollowTheirEventsAndStaySorted) {
    FourSteps f = fourSteps();
    Trace& t = f.trace;
    ASSERT_TRUE(applyRecordedRange(t, steps(1, 2)));
    EXPECT_TRUE(std::is_sorted(
        t.attributes.begin(), t.attributes.end(),
        [](const EventAttribute& a, const EventAttribute& b) { return a.event < b.event; }));
    // The OOM (event 19) is event 13 now; the attributes of cut events are gone.
    EXPECT_EQ(attribute(t, 13, "device_free"), "123");
    for (const EventAttribute& a : t.attributes) {
        EXPECT_LT(a.event, t.events.size());
        EXPECT_NE(t.string(a.value), "late");
        EXPECT_NE(t.string(a.value), "step 0");
        EXPECT_NE(t.string(a.key), "compile_context");
    }
    // One allocated_at_ns per carried event, none on the range's own events.
    size_t carried = 0;
    for (const EventAttribute& a : t.attributes)
        if (t.string(a.key) == "allocated_at_ns") {
            ++carried;
            EXPECT_LT(a.event, 10u);
        }
    EXPECT_EQ(carried, 10u);
    EXPECT_EQ(t.attributes.size(), 10u + 1u + 1u);
}

TEST(RecordedRange, AnEndStateFromAfterTheRangeIsDroppedAndItsOldBlocksCarried) {
    FourSteps f = fourSteps();
    Trace& t = f.trace;
    auto r = applyRecordedRange(t, steps(1, 2));
    ASSERT_TRUE(r) << r.message();
    EXPECT_FALSE(t.allocator_state.has_value());
    EXPECT_TRUE(t.inferred_block_categories.empty());
    // The end state's blocks that no event allocated were alive all along:
    // 0x10400 and 0x10600 (pending free) in segment 0x10000, which an event
    // opened; segment 0x80000, which none did, and its block. Not the
    // inactive 0x10500, nor 0x10000 (carried from its event).
    ASSERT_GE(t.events.size(), 10u);
    struct Want {
        EventKind kind;
        uint64_t address, size;
        StackId stack;
    };
    const Want want[] = {
        {EventKind::Alloc, 0x10400, 128, f.state_stack},
        {EventKind::Alloc, 0x10600, 32, {}},
        {EventKind::SegmentAlloc, 0x80000, 4096, f.seg_stack},
        {EventKind::Alloc, 0x80000, 1024, f.state_stack},
    };
    for (size_t i = 0; i < std::size(want); ++i) {
        const Event& e = t.events[6 + i];
        SCOPED_TRACE(i);
        EXPECT_EQ(e.kind, want[i].kind);
        EXPECT_EQ(e.address, want[i].address);
        EXPECT_EQ(e.size, want[i].size);
        EXPECT_EQ(e.stack, want[i].stack);
        EXPECT_EQ(e.device, 0);
        EXPECT_EQ(e.time, 2000);
        EXPECT_EQ(attribute(t, 6 + i, "allocated_at_ns"), "before the recording");
    }
    EXPECT_EQ(r->alive_at_start, 10u);
    EXPECT_EQ(r->alive_bytes, 256u + 32 + 48 + 500 + 77 + 128 + 32 + 1024);
}

TEST(RecordedRange, EndStateSegmentsCarriedInKeepTheirStream) {
    // Event::stream indexes Trace::streams; Segment::stream is the raw value.
    FourSteps f = fourSteps();
    Trace& t = f.trace;
    t.allocator_state->segments[1].stream = 0xabc;
    ASSERT_TRUE(applyRecordedRange(t, steps(1, 2)));
    ASSERT_GE(t.events.size(), 10u);
    ASSERT_EQ(t.events[8].kind, EventKind::SegmentAlloc);
    EXPECT_EQ(t.streams[t.events[8].stream], 0xabcu);
    EXPECT_EQ(t.streams[t.events[9].stream], 0xabcu);  // its block
    EXPECT_EQ(t.streams[t.events[6].stream], 0u);      // segment 0x10000's, on stream 0
}

TEST(RecordedRange, TheEndStateStaysWhenNothingAfterTheRangeWasCut) {
    FourSteps f = fourSteps();
    Trace& t = f.trace;
    auto r = applyRecordedRange(t, steps(2, 3));
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(r->start, 3000);
    EXPECT_EQ(r->end, 4900);
    ASSERT_TRUE(t.allocator_state.has_value());
    EXPECT_EQ(t.allocator_state->segments.size(), 2u);
    EXPECT_EQ(t.inferred_block_categories.size(), 5u);
    // Only what events allocated: segment 0x10000, blocks 0x10000, 0x10200,
    // 0x10300, 0x21000, device 1's 0x10000, and 0x30100 from step 1.
    EXPECT_EQ(r->alive_at_start, 7u);
    EXPECT_EQ(r->alive_bytes, 256u + 32 + 48 + 500 + 77 + 64);
    for (const EventAttribute& a : t.attributes)
        EXPECT_NE(t.string(a.value), "before the recording");
    EXPECT_EQ(timesOf(t), (std::vector<int64_t>{3000, 3000, 3000, 3000, 3000, 3000, 3000, 3100,
                                                3900, 4100, 4500}));
    EXPECT_EQ(attribute(t, 6, "allocated_at_ns"), "2200");
    EXPECT_EQ(attribute(t, 9, "user_metadata"), "late");
}

TEST(RecordedRange, PhasesAreCutToTheRangeAndRenumbered) {
    FourSteps f = fourSteps();
    Trace& t = f.trace;
    ASSERT_TRUE(applyRecordedRange(t, steps(1, 2)));
    // Steps 0 and 3 and their forwards are gone; the run-wide NVTX range and
    // the open phases are clipped to the range.
    ASSERT_EQ(phaseNames(t), (std::vector<std::string>{"train", "warmup", "step 1", "forward",
                                                       "step 2", "forward", "profiler"}));
    struct Want {
        int64_t start, end;
        uint32_t parent;
        int32_t step;
    };
    const Want want[] = {{2000, 3900, 0, -1}, {2000, 3900, 0, -1}, {2000, 2900, 1, 1},
                         {2100, 2500, 3, 1},  {3000, 3900, 1, 2},  {3100, 3500, 5, 2},
                         {2500, 3900, 0, -1}};
    for (size_t i = 0; i < std::size(want); ++i) {
        const Phase& p = t.phases[i];
        SCOPED_TRACE(i);
        EXPECT_EQ(p.start, want[i].start);
        EXPECT_EQ(p.end, want[i].end);
        EXPECT_EQ(p.parent.value, want[i].parent);
        EXPECT_EQ(p.step, want[i].step);
    }
    EXPECT_EQ(t.phases[2].kind, PhaseKind::Step);
    EXPECT_EQ(t.phases[3].kind, PhaseKind::Forward);
}

TEST(RecordedRange, EventsTakeThePhasesOfTheCutTrace) {
    FourSteps f = fourSteps();
    Trace& t = f.trace;
    ASSERT_TRUE(applyRecordedRange(t, steps(1, 2)));
    ASSERT_EQ(t.events.size(), 16u);
    std::vector<uint32_t> phases;
    for (const Event& e : t.events) phases.push_back(e.phase.value);
    // The carried events and the event at 2000 are in step 1 (3); 2200 in its
    // forward (4); 2500 and 2600 in "profiler" (7), open from 2500; 3100 in
    // step 2's forward (6); 3900, where every clipped phase ends, in none.
    EXPECT_EQ(phases, (std::vector<uint32_t>{3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 4, 7, 7, 6, 0}));
}

TEST(RecordedRange, AnnotationsOutsideTheRangeAreDropped) {
    FourSteps f = fourSteps();
    Trace& t = f.trace;
    ASSERT_TRUE(applyRecordedRange(t, steps(1, 2)));
    std::vector<int64_t> times;
    for (const Annotation& a : t.annotations) times.push_back(a.time);
    EXPECT_EQ(times, (std::vector<int64_t>{2000, 2500, 3900}));
}

TEST(RecordedRange, TheMetadataSaysWhatWasRecorded) {
    FourSteps f = fourSteps();
    Trace& t = f.trace;
    ASSERT_TRUE(applyRecordedRange(t, steps(1, 2)));
    EXPECT_EQ(property(t, "recorded_range"), "steps 1-2");
    EXPECT_EQ(property(t, "recorded_range.start_ns"), "2000");
    EXPECT_EQ(property(t, "recorded_range.end_ns"), "3900");
    EXPECT_EQ(property(t, "recorded_range.alive_at_start"),
              "10 blocks and segments, " +
                  std::to_string(256 + 32 + 48 + 500 + 77 + 128 + 32 + 1024) + " B in blocks");
    EXPECT_EQ(t.metadata.name, "four steps");

    FourSteps g = fourSteps();
    ASSERT_TRUE(applyRecordedRange(g.trace, steps(2, 2)));
    EXPECT_EQ(property(g.trace, "recorded_range"), "step 2");
    EXPECT_EQ(property(g.trace, "recorded_range.start_ns"), "3000");
    EXPECT_EQ(property(g.trace, "recorded_range.end_ns"), "3900");
}

TEST(RecordedRange, StepsPastTheLastEndWithIt) {
    // --steps 2:9 on a four-step job: steps 2 and 3.
    FourSteps f = fourSteps();
    auto r = applyRecordedRange(f.trace, steps(2, 9));
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(r->start, 3000);
    EXPECT_EQ(r->end, 4900);
}

TEST(RecordedRange, StepsThatTouchKeepOnlyTheRangesSteps) {
    // Steps without an optimizer (loops.py no_optimizer) or split by
    // forwards: each starts where the last ended. The neighbours of the
    // range touch it at one point only and are not part of it; cut to that
    // point they would read as phases still open at the end.
    Trace t;
    for (int32_t k = 0; k < 4; ++k)
        addPhase(t, "step " + std::to_string(k), PhaseKind::Step, 1000 * (k + 1), 1000 * (k + 2),
                 {}, k);
    for (int64_t at : {1500, 2000, 2500, 3500, 4000, 4500})
        t.events.push_back(event(at, EventKind::Marker, 0, 0, Category::Unknown));
    auto r = applyRecordedRange(t, steps(1, 2));
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(r->start, 2000);
    EXPECT_EQ(r->end, 4000);
    EXPECT_EQ(phaseNames(t), (std::vector<std::string>{"step 1", "step 2"}));
    for (const Phase& p : t.phases) EXPECT_LT(p.start, p.end);
    std::vector<uint32_t> phases;
    for (const Event& e : t.events) phases.push_back(e.phase.value);
    EXPECT_EQ(phases, (std::vector<uint32_t>{1, 1, 2, 0}));
}

// ------------------------------------------------------------- focused cases

// A trace of one step [1000, 2000] and `before` events earlier.
Trace oneStepAfter(std::vector<Event> before) {
    Trace t;
    addPhase(t, "step 0", PhaseKind::Step, 1000, 2000, {}, 0);
    t.events = std::move(before);
    t.events.push_back(event(1500, EventKind::Marker, 0, 0, Category::Unknown));
    return t;
}

TEST(RecordedRange, AFreeRequestedButNotCompletedKeepsTheBlockAlive) {
    Trace t = oneStepAfter({event(10, EventKind::Alloc, 0x100, 64, Category::Activation),
                            event(20, EventKind::FreeRequested, 0x100, 64, Category::Activation)});
    auto r = applyRecordedRange(t, steps(0, 0));
    ASSERT_TRUE(r) << r.message();
    ASSERT_EQ(t.events.size(), 2u);
    EXPECT_EQ(t.events[0].kind, EventKind::Alloc);
    EXPECT_EQ(t.events[0].address, 0x100u);
    EXPECT_EQ(t.events[0].time, 1000);
    EXPECT_EQ(attribute(t, 0, "allocated_at_ns"), "10");
    EXPECT_EQ(r->alive_at_start, 1u);
    EXPECT_EQ(r->alive_bytes, 64u);
}

TEST(RecordedRange, AnAddressAllocatedTwiceCarriesOnlyTheSecondBlock) {
    Trace t = oneStepAfter({event(10, EventKind::Alloc, 0x100, 64, Category::Activation),
                            event(20, EventKind::FreeRequested, 0x100, 64, Category::Activation),
                            event(30, EventKind::FreeCompleted, 0x100, 64, Category::Activation),
                            event(40, EventKind::Alloc, 0x100, 96, Category::Gradient)});
    auto r = applyRecordedRange(t, steps(0, 0));
    ASSERT_TRUE(r) << r.message();
    ASSERT_EQ(t.events.size(), 2u);
    EXPECT_EQ(t.events[0].size, 96u);
    EXPECT_EQ(t.events[0].category, Category::Gradient);
    EXPECT_EQ(attribute(t, 0, "allocated_at_ns"), "40");
    EXPECT_EQ(r->alive_at_start, 1u);
}

TEST(RecordedRange, FreedBlocksAndSegmentsAreNotCarried) {
    Trace t = oneStepAfter({event(10, EventKind::SegmentMap, 0x1000, 4096, Category::Unknown),
                            event(11, EventKind::Alloc, 0x1000, 64, Category::Activation),
                            event(12, EventKind::FreeCompleted, 0x1000, 64, Category::Activation),
                            event(13, EventKind::SegmentUnmap, 0x1000, 4096, Category::Unknown),
                            event(14, EventKind::SegmentMap, 0x2000, 4096, Category::Unknown),
                            event(15, EventKind::Oom, 0, 0, Category::Unknown),
                            event(16, EventKind::Snapshot, 0, 64, Category::Unknown)});
    auto r = applyRecordedRange(t, steps(0, 0));
    ASSERT_TRUE(r) << r.message();
    ASSERT_EQ(t.events.size(), 2u);
    EXPECT_EQ(t.events[0].kind, EventKind::SegmentMap);
    EXPECT_EQ(t.events[0].address, 0x2000u);
    EXPECT_EQ(r->alive_at_start, 1u);
    EXPECT_EQ(r->alive_bytes, 0u);  // bytes count blocks only
}

// ------------------------------------------------------------------ NVTX

TEST(RecordedRange, NvtxTakesTheFirstRangeOfThatName) {
    FourSteps f = fourSteps();
    Trace& t = f.trace;
    addPhase(t, "epoch", PhaseKind::Range, 2100, 2800);
    addPhase(t, "epoch", PhaseKind::Range, 1100, 1700);
    auto r = applyRecordedRange(t, nvtx("epoch"));
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(r->start, 1100);
    EXPECT_EQ(r->end, 1700);
    EXPECT_EQ(property(t, "recorded_range"), "NVTX range epoch");
    EXPECT_EQ(property(t, "recorded_range.start_ns"), "1100");
    EXPECT_EQ(property(t, "recorded_range.end_ns"), "1700");
    // Event 12 (1100) and 13 (1500) are the range's.
    ASSERT_GE(t.events.size(), 2u);
    EXPECT_EQ(timesOf(t).back(), 1500);
    EXPECT_FALSE(t.allocator_state.has_value());
}

TEST(RecordedRange, NvtxOverTheWholeRunCutsNothing) {
    FourSteps f = fourSteps();
    Trace& t = f.trace;
    const size_t events = t.events.size();
    auto r = applyRecordedRange(t, nvtx("train"));
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(r->start, 50);
    EXPECT_EQ(r->end, 5500);
    EXPECT_EQ(r->alive_at_start, 0u);
    EXPECT_EQ(t.events.size(), events);
    EXPECT_TRUE(t.allocator_state.has_value());
    EXPECT_EQ(t.phases.size(), 11u);
    EXPECT_EQ(t.annotations.size(), 5u);
}

TEST(RecordedRange, AnOpenNvtxRangeRunsToTheTracesEnd) {
    FourSteps f = fourSteps();
    Trace& t = f.trace;
    addPhase(t, "open", PhaseKind::Range, 3000, 3000);
    auto r = applyRecordedRange(t, nvtx("open"));
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(r->start, 3000);
    EXPECT_EQ(r->end, 4500);  // the last event
}

TEST(RecordedRange, AnOpenNvtxRangeAfterTheLastEventIsEmpty) {
    // Pushed after the last allocator event and never popped: the range
    // holds no event, and no phase is cut to end before it starts.
    FourSteps f = fourSteps();
    Trace& t = f.trace;
    addPhase(t, "late", PhaseKind::Range, 5000, 5000);
    auto r = applyRecordedRange(t, nvtx("late"));
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(r->start, 5000);
    EXPECT_EQ(r->end, 5000);
    for (const Phase& p : t.phases) EXPECT_LE(p.start, p.end) << t.string(p.name);
    EXPECT_EQ(property(t, "recorded_range.end_ns"), "5000");
}

TEST(RecordedRange, TheHooksNvtxRangeStandsInWhereTheTraceHasNone) {
    FourSteps f = fourSteps();
    Trace& t = f.trace;
    RecordedRangeSpec spec = nvtx("hooked");
    spec.nvtx_hint = std::pair<int64_t, int64_t>{2000, 3900};
    auto r = applyRecordedRange(t, spec);
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(r->start, 2000);
    EXPECT_EQ(r->end, 3900);
    EXPECT_EQ(property(t, "recorded_range"), "NVTX range hooked");

    // The trace's own range wins over the hint.
    FourSteps g = fourSteps();
    spec = nvtx("train");
    spec.nvtx_hint = std::pair<int64_t, int64_t>{2000, 3900};
    r = applyRecordedRange(g.trace, spec);
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(r->start, 50);
    EXPECT_EQ(r->end, 5500);
}

// ----------------------------------------------------------------- errors

testing::AssertionResult failsWith(Trace& t, const RecordedRangeSpec& spec,
                                   const std::vector<std::string>& parts) {
    const size_t events = t.events.size(), phases = t.phases.size();
    auto r = applyRecordedRange(t, spec);
    if (r) return testing::AssertionFailure() << "succeeded";
    for (const std::string& part : parts)
        if (r.message().find(part) == std::string::npos)
            return testing::AssertionFailure()
                   << "\"" << r.message() << "\" lacks \"" << part << "\"";
    // The trace is left whole (the caller keeps the whole run).
    if (t.events.size() != events || t.phases.size() != phases ||
        t.metadata.property("recorded_range"))
        return testing::AssertionFailure() << "the trace was changed";
    return testing::AssertionSuccess();
}

TEST(RecordedRange, ARangeThatNeverBeganSaysWhatTheTraceHas) {
    FourSteps f = fourSteps();
    EXPECT_TRUE(failsWith(f.trace, steps(5, 6), {"--steps 5:6", "before step 5", "steps 0-3"}));
    EXPECT_TRUE(f.trace.allocator_state.has_value());
}

TEST(RecordedRange, ATraceWithoutStepsHasNoStepRange) {
    Trace t;
    addPhase(t, "forward", PhaseKind::Forward, 100, 200);
    addPhase(t, "train", PhaseKind::Range, 50, 300);
    t.events.push_back(event(150, EventKind::Alloc, 0x10, 8, Category::Activation));
    EXPECT_TRUE(failsWith(t, steps(0, 1), {"--steps 0:1", "no training step"}));
    Trace empty;
    EXPECT_TRUE(failsWith(empty, steps(0, 0), {"no training step"}));
}

TEST(RecordedRange, NoNvtxRangeOfThatName) {
    FourSteps f = fourSteps();
    EXPECT_TRUE(failsWith(f.trace, nvtx("eval"), {"nvtx:eval", "no NVTX range"}));
}

TEST(RecordedRange, AnEmptySpecIsAnError) {
    FourSteps f = fourSteps();
    EXPECT_TRUE(failsWith(f.trace, RecordedRangeSpec{}, {}));
    // A hint alone names no range.
    RecordedRangeSpec hint_only;
    hint_only.nvtx_hint = std::pair<int64_t, int64_t>{2000, 3900};
    EXPECT_TRUE(hint_only.empty());
    EXPECT_TRUE(failsWith(f.trace, hint_only, {}));
}

TEST(RecordedRange, StepsTheWrongWayRoundAreAnError) {
    FourSteps f = fourSteps();
    EXPECT_TRUE(failsWith(f.trace, steps(2, 1), {"--steps 2:1"}));
}

}  // namespace
}  // namespace memscope
