// Phases through a memory snapshot: exported as external_annotations START/END
// pairs (as PyTorch >= 2.5 writes record_function scopes), imported back into
// phases with their kinds, nesting and times, and the events pointing at the
// innermost phase. Also: a 'device_traces' list for every device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>

#include "memscope/plugins/pytorch_snapshot.h"
#include "snapshot_shape.h"
#include "test_util.h"

namespace memscope {
namespace {

constexpr int64_t kT0 = 1'700'000'000'000'000'000;  // ns since the epoch
int64_t us(double v) {
    return kT0 + std::llround(v * 1000);
}

struct Built {
    Trace trace;
    std::map<std::string, PhaseId> ids;
};

// A trainer-like trace (names as memscope-train writes them: the path of the
// phase) on devices 0 and 1 and the host, and a segment on device 3 with no
// events. Times are deliberately not whole microseconds.
Built makeTrace() {
    Built b;
    Trace& t = b.trace;
    t.metadata.source_format = "memscope-train";
    t.metadata.time_base = TimeBase::Nanoseconds;
    auto phase = [&](const std::string& name, PhaseKind kind, const std::string& parent,
                     double start, double end, int32_t step, int32_t block = -1,
                     int16_t device = -1) {
        Phase p;
        p.name = t.internString(name);
        p.kind = kind;
        p.parent = parent.empty() ? PhaseId() : b.ids.at(parent);
        p.step = step;
        p.block = block;
        p.device = device;
        p.start = us(start);
        p.end = us(end);
        b.ids[name] = t.addPhase(p);
    };
    phase("setup", PhaseKind::Range, "", 0.2, 0.9, -1);
    phase("step 0", PhaseKind::Step, "", 1.0, 100.0, 0);
    phase("step 0 / forward", PhaseKind::Forward, "step 0", 1.5, 40.3, 0);
    phase("step 0 / forward / block 0", PhaseKind::Block, "step 0 / forward", 2.1, 20.2, 0, 0);
    phase("step 0 / forward / block 1", PhaseKind::Block, "step 0 / forward", 20.2, 40.3, 0, 1);
    phase("step 0 / backward", PhaseKind::Backward, "step 0", 40.3, 80.7, 0);
    phase("step 0 / backward / block 1", PhaseKind::Block, "step 0 / backward", 41.4, 60.6, 0, 1);
    phase("step 0 / backward / block 1 / recompute block 1", PhaseKind::Recompute,
          "step 0 / backward / block 1", 41.4, 50.5, 0, 1);
    phase("nccl all_reduce", PhaseKind::Range, "step 0 / backward", 62.25, 70.75, 0, -1, 1);
    phase("step 0 / optimizer", PhaseKind::Optimizer, "step 0", 80.7, 100.0, 0);
    phase("step 0 / optimizer / adam w1", PhaseKind::Optimizer, "step 0 / optimizer", 81.9, 90.1,
          0);
    phase("step 1", PhaseKind::Step, "", 100.0, 150.0, 1);
    phase("step 1 / forward", PhaseKind::Forward, "step 1", 100.0, 120.5, 1);
    phase("step 1 / forward / embedding", PhaseKind::Range, "step 1 / forward", 100.0, 100.0, 1);

    // Events well inside their phases (the importer sees whole microseconds).
    uint64_t address = 0x10000;
    auto event = [&](double at, int16_t device, const std::string& in) {
        Event e;
        e.time = us(at);
        e.kind = EventKind::Alloc;
        e.address = address += 0x1000;
        e.size = 512;
        e.device = device;
        e.phase = in.empty() ? PhaseId() : b.ids.at(in);
        t.events.push_back(e);
    };
    event(0.5, 0, "setup");
    event(3.0, 0, "step 0 / forward / block 0");
    event(3.5, 1, "step 0 / forward / block 0");
    event(25.0, 0, "step 0 / forward / block 1");
    event(30.0, -1, "step 0 / forward / block 1");
    event(45.0, 0, "step 0 / backward / block 1 / recompute block 1");
    event(55.0, 1, "step 0 / backward / block 1");
    event(65.0, 0, "step 0 / backward");
    event(66.0, 1, "nccl all_reduce");
    event(85.0, 0, "step 0 / optimizer / adam w1");
    event(95.0, 1, "step 0 / optimizer");
    event(110.0, 0, "step 1 / forward");
    event(130.0, 0, "step 1");
    event(160.0, 0, "");
    // Not in time order across devices, as an importer may see them.
    std::swap(t.events[2], t.events[3]);

    Annotation a;
    a.time = us(85.5);
    a.name = t.internString("checkpoint saved");
    a.device = 0;
    a.stage = AnnotationStage::Instant;
    t.annotations.push_back(a);

    t.allocator_state.emplace();
    Segment s;
    s.address = 0x7f0000000000;
    s.total_size = 2 << 20;
    s.device = 3;
    s.block_count = 1;
    t.allocator_state->segments.push_back(s);
    t.allocator_state->blocks.push_back(
        Block{s.address, s.total_size, 0, {}, BlockState::Inactive});
    return b;
}

const Phase* byName(const Trace& t, std::string_view name, PhaseId* id = nullptr) {
    for (size_t i = 0; i < t.phases.size(); ++i)
        if (t.string(t.phases[i].name) == name) {
            if (id) *id = PhaseId(uint32_t(i + 1));
            return &t.phases[i];
        }
    return nullptr;
}

std::string nameOf(const Trace& t, PhaseId id) {
    const Phase* p = t.phase(id);
    return p ? std::string(t.string(p->name)) : std::string();
}

TEST(SnapshotPhases, ExportedAsAnnotationsPerDevice) {
    const Built b = makeTrace();
    const auto out = test::tempPath("phases-shape.pickle");
    ASSERT_TRUE(pytorch_snapshot::exportFile(b.trace, out.string()).ok());
    auto shape = test::readShape(out);
    ASSERT_TRUE(shape.ok()) << shape.message();
    // Devices 0..3: 3 holds only a segment, 2 nothing at all.
    ASSERT_EQ(shape->device_traces.size(), 4u);
    EXPECT_EQ(shape->device_traces[0], 9u);
    EXPECT_EQ(shape->device_traces[1], 4u);
    EXPECT_EQ(shape->device_traces[2], 0u);
    EXPECT_EQ(shape->device_traces[3], 0u);

    // 13 phases of all devices on devices 0, 1 and 3 (those the trace has),
    // one of device 1, two entries each, and the instant annotation.
    ASSERT_TRUE(shape->has_annotations);
    EXPECT_EQ(shape->annotations.size(), size_t((13 * 3 + 1) * 2 + 1));
    std::map<int64_t, std::vector<test::AnnotationRow>> per_device;
    for (const auto& a : shape->annotations) per_device[a.device].push_back(a);
    ASSERT_EQ(per_device.size(), 3u);
    EXPECT_EQ(per_device[1].size(), 28u);

    // Device 0 in order: START rounded down, END rounded up, nesting kept at
    // equal times (backward ends where optimizer starts, step 0 where step 1 does).
    std::vector<std::string> seq;
    for (const auto& a : per_device[0])
        if (a.stage != "INSTANT")
            seq.push_back(a.stage + " " + a.name + " " + std::to_string(a.time_us - kT0 / 1000));
    const std::vector<std::string> want = {
        "START setup 0",
        "END setup 1",
        "START step 0 1",
        "START step 0 / forward 1",
        "START step 0 / forward / block 0 2",
        "END step 0 / forward / block 0 21",
        "START step 0 / forward / block 1 20",
        "END step 0 / forward / block 1 41",
        "END step 0 / forward 41",
        "START step 0 / backward 40",
        "START step 0 / backward / block 1 41",
        "START step 0 / backward / block 1 / recompute block 1 41",
        "END step 0 / backward / block 1 / recompute block 1 51",
        "END step 0 / backward / block 1 61",
        "END step 0 / backward 81",
        "START step 0 / optimizer 80",
        "START step 0 / optimizer / adam w1 81",
        "END step 0 / optimizer / adam w1 91",
        "END step 0 / optimizer 100",
        "END step 0 100",
        "START step 1 100",
        "START step 1 / forward 100",
        "START step 1 / forward / embedding 100",
        "END step 1 / forward / embedding 100",
        "END step 1 / forward 121",
        "END step 1 150",
    };
    EXPECT_EQ(seq, want);
    std::filesystem::remove(out);
}

TEST(SnapshotPhases, RoundTripKeepsPhasesAndEventPhases) {
    const Built b = makeTrace();
    const Trace& t = b.trace;
    const auto out = test::tempPath("phases-roundtrip.pickle");
    ASSERT_TRUE(pytorch_snapshot::exportFile(t, out.string()).ok());
    auto back = pytorch_snapshot::importFile(out.string());
    ASSERT_TRUE(back.ok()) << back.message();
    ASSERT_EQ(back->metadata.time_base, TimeBase::Nanoseconds);
    ASSERT_EQ(back->phases.size(), t.phases.size());
    for (const Phase& p : t.phases) {
        const std::string name(t.string(p.name));
        SCOPED_TRACE(name);
        const Phase* q = byName(*back, name);
        ASSERT_TRUE(q);
        EXPECT_EQ(q->kind, p.kind);
        EXPECT_EQ(q->step, p.step);
        EXPECT_EQ(q->block, p.block);
        EXPECT_EQ(q->device, p.device);
        EXPECT_EQ(nameOf(*back, q->parent), nameOf(t, p.parent));
        EXPECT_LE(std::abs(q->start - p.start), 1000);
        EXPECT_LE(std::abs(q->end - p.end), 1000);
        EXPECT_LE(q->start, p.start);
        EXPECT_GE(q->end, p.end);
        // A parent always comes before its children.
        EXPECT_LT(q->parent.value, uint32_t(q - back->phases.data()) + 1);
    }
    ASSERT_EQ(back->events.size(), t.events.size());
    for (size_t i = 0; i < t.events.size(); ++i) {
        // Events come back per device, in time order.
        const Event& want = t.events[i];
        const Event* got = nullptr;
        for (const Event& e : back->events)
            if (e.address == want.address) got = &e;
        ASSERT_TRUE(got) << "event " << i;
        EXPECT_EQ(nameOf(*back, got->phase), nameOf(t, want.phase))
            << "event " << i << " at " << want.time;
    }
    ASSERT_EQ(back->annotations.size(), (13 * 3 + 1) * 2 + 1u);  // kept as annotations too

    // Exported again, the annotations are not doubled and the phases stay.
    const auto again = test::tempPath("phases-roundtrip-2.pickle");
    ASSERT_TRUE(pytorch_snapshot::exportFile(*back, again.string()).ok());
    auto third = pytorch_snapshot::importFile(again.string());
    ASSERT_TRUE(third.ok()) << third.message();
    EXPECT_EQ(third->annotations.size(), back->annotations.size());
    ASSERT_EQ(third->phases.size(), back->phases.size());
    for (size_t i = 0; i < back->phases.size(); ++i) {
        EXPECT_EQ(third->string(third->phases[i].name), back->string(back->phases[i].name));
        EXPECT_EQ(third->phases[i].start, back->phases[i].start);
        EXPECT_EQ(third->phases[i].end, back->phases[i].end);
        EXPECT_EQ(third->phases[i].parent, back->phases[i].parent);
        EXPECT_EQ(third->phases[i].device, back->phases[i].device);
    }
    std::filesystem::remove(out);
    std::filesystem::remove(again);
}

// A trace without a clock has no time for its phases: they are not exported.
TEST(SnapshotPhases, EventIndexTracesExportNoPhases) {
    Built b = makeTrace();
    b.trace.metadata.time_base = TimeBase::EventIndex;
    b.trace.annotations.clear();
    const auto out = test::tempPath("phases-eventindex.pickle");
    ASSERT_TRUE(pytorch_snapshot::exportFile(b.trace, out.string()).ok());
    auto shape = test::readShape(out);
    ASSERT_TRUE(shape.ok()) << shape.message();
    EXPECT_FALSE(shape->has_annotations);
    EXPECT_EQ(shape->device_traces.size(), 4u);
    std::filesystem::remove(out);
}

// The importer's rules on PyTorch-style annotations: per device and name as a
// stack, an END without START ignored, a START without END open to the last
// event, kinds from the last " / " component.
TEST(SnapshotPhases, AnnotationPairsBecomePhases) {
    Trace t;
    t.metadata.time_base = TimeBase::Nanoseconds;
    auto event = [&](double at, int16_t device) {
        Event e;
        e.time = us(at);
        e.address = 0x1000 + t.events.size() * 0x100;
        e.size = 64;
        e.device = device;
        t.events.push_back(e);
    };
    for (double at : {5.0, 12.0, 25.0, 33.0, 47.0}) event(at, 0);
    event(15.0, 1);
    event(55.0, 1);
    auto ann = [&](double at, const std::string& name, AnnotationStage stage, int16_t device) {
        t.annotations.push_back(Annotation{us(at), t.internString(name), device, stage});
    };
    using S = AnnotationStage;
    ann(1, "ProfilerStep#7", S::Start, 0);
    ann(1, "ProfilerStep#7", S::Start, 1);
    ann(2, "a", S::Start, 0);
    ann(3, "nope", S::End, 0);  // never started: ignored
    ann(10, "a", S::Start, 0);  // "a" inside "a"
    ann(20, "a", S::End, 0);    // closes the inner "a"
    ann(22, "train / Optimizer.step#AdamW.step", S::Start, 0);
    ann(30, "train / Optimizer.step#AdamW.step", S::End, 0);
    ann(31, "a", S::End, 0);  // closes the outer "a"
    ann(40, "recompute attention 4", S::Start, 0);
    ann(41, "block 4", S::Start, 0);  // left open
    ann(45, "recompute attention 4", S::End, 0);
    ann(50, "ProfilerStep#7", S::End, 0);
    ann(50, "ProfilerStep#7", S::End, 1);
    ann(52, "forward", S::Start, 1);  // left open
    const auto out = test::tempPath("phases-annotations.pickle");
    ASSERT_TRUE(pytorch_snapshot::exportFile(t, out.string()).ok());
    auto back = pytorch_snapshot::importFile(out.string());
    ASSERT_TRUE(back.ok()) << back.message();
    const Trace& r = *back;
    ASSERT_EQ(r.annotations.size(), t.annotations.size());
    ASSERT_EQ(r.phases.size(), 7u);
    struct Want {
        std::string name;
        PhaseKind kind;
        int16_t device;
        double start, end;
        std::string parent;
        int32_t step, block;
    };
    const std::vector<Want> want = {
        {"ProfilerStep#7", PhaseKind::Step, -1, 1, 50, "", 7, -1},  // alike on both devices
        {"a", PhaseKind::Range, 0, 2, 31, "ProfilerStep#7", 7, -1},
        {"a", PhaseKind::Range, 0, 10, 20, "a", 7, -1},
        {"train / Optimizer.step#AdamW.step", PhaseKind::Optimizer, 0, 22, 30, "a", 7, -1},
        {"recompute attention 4", PhaseKind::Recompute, 0, 40, 45, "ProfilerStep#7", 7, 4},
        {"block 4", PhaseKind::Block, 0, 41, 47, "recompute attention 4", 7, 4},
        {"forward", PhaseKind::Forward, 1, 52, 55, "", -1, -1},
    };
    for (size_t i = 0; i < want.size(); ++i) {
        const Phase& p = r.phases[i];
        SCOPED_TRACE(want[i].name);
        EXPECT_EQ(r.string(p.name), want[i].name);
        EXPECT_EQ(p.kind, want[i].kind);
        EXPECT_EQ(p.device, want[i].device);
        EXPECT_EQ(p.start, us(want[i].start));
        EXPECT_EQ(p.end, us(want[i].end));
        EXPECT_EQ(nameOf(r, p.parent), want[i].parent);
        EXPECT_EQ(p.step, want[i].step);
        EXPECT_EQ(p.block, want[i].block);
    }
    // Events: 5 -> outer a, 12 -> inner a, 25 -> optimizer step, 33 -> step,
    // 47 -> block 4 (still open); device 1: 15 -> step, 55 -> forward.
    const std::vector<uint32_t> phase_of = {2, 3, 4, 1, 6, 1, 7};
    ASSERT_EQ(r.events.size(), phase_of.size());
    for (size_t i = 0; i < r.events.size(); ++i)
        EXPECT_EQ(r.events[i].phase, PhaseId(phase_of[i]))
            << "event " << i << " at " << r.events[i].time;
    std::filesystem::remove(out);
}

TEST(SnapshotPhases, PytorchMemoryVizReadsAnExportWithPhases) {
    static const std::string python = test::pythonWith("torch.cuda._memory_viz");
    if (python.empty())
        GTEST_SKIP() << "torch.cuda._memory_viz cannot be imported (python3-torch not installed)";
    const Built b = makeTrace();
    const auto out = test::tempPath("phases-memory-viz.pickle");
    ASSERT_TRUE(pytorch_snapshot::exportFile(b.trace, out.string()).ok());
    const std::string cmd = python + " " + MEMSCOPE_MEMORY_VIZ_CHECK_PY + " " + out.string() + " 4";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::filesystem::remove(out);
}

}  // namespace
}  // namespace memscope
