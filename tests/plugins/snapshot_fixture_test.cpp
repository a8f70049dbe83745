// Every real snapshot fixture loads with exactly the figures of EXPECTED.json,
// and survives export -> import (ours, CPython's restricted unpickler and
// PyTorch's memory_viz). Without the fixtures folder every test here skips.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "memscope/plugins/pytorch_snapshot.h"
#include "snapshot_shape.h"
#include "test_util.h"

namespace memscope {
namespace {

nlohmann::json expected() {
    std::ifstream in(test::fixtures() / "snapshots" / "EXPECTED.json");
    return nlohmann::json::parse(in, nullptr, false);
}

// Without the fixtures folder: one placeholder, whose tests skip saying why.
constexpr const char* kMissing = "fixtures_missing";

std::vector<std::string> fixtureNames() {
    if (!test::haveFixtures()) return {kMissing};
    std::vector<std::string> names;
    const auto e = expected();
    if (e.is_object())
        for (const auto& [name, _] : e.items()) names.push_back(name);
    return names;
}

// memory_viz wants a 'device_traces' list for every device from 0 to the last
// one that holds a segment or has trace entries: the devices of EXPECTED.json.
size_t deviceLists(const nlohmann::json& want) {
    int last = -1;
    for (const auto& [dev, _] : want.items()) last = std::max(last, std::stoi(dev));
    return size_t(last + 1);
}

// What the export writes: a list per device with figures, and at least as
// many as the fixture's own 'device_traces' had (empty ones included).
size_t exportedLists(const std::string& name, const nlohmann::json& want) {
    auto source = test::readShape(test::fixtures() / "snapshots" / name);
    const size_t own = source.ok() ? source->device_traces.size() : 0;  // a bare list has none
    return std::max(deviceLists(want), own);
}

template <typename T>
nlohmann::json opt(const std::optional<T>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

void expectFigures(const std::string& name, const TraceSummary& s, const nlohmann::json& want) {
    ASSERT_EQ(s.devices.size(), want.size()) << name << ": number of devices";
    for (const auto& [dev, w] : want.items()) {
        const int16_t d = int16_t(std::stoi(dev));
        ASSERT_TRUE(s.devices.count(d)) << name << ": device " << dev << " missing";
        const DeviceSummary& g = s.devices.at(d);
        SCOPED_TRACE(name + " device " + dev);
        EXPECT_EQ(opt(g.segments), w["segments"]);
        EXPECT_EQ(opt(g.reserved_bytes), w["reserved_bytes"]);
        EXPECT_EQ(opt(g.final_active_bytes), w["final_active_bytes"]);
        EXPECT_EQ(g.trace_entries, w["trace_entries"].get<uint64_t>());
        EXPECT_EQ(g.alloc_count, w["alloc_count"].get<uint64_t>());
        EXPECT_EQ(g.free_completed_count, w["free_completed_count"].get<uint64_t>());
        EXPECT_EQ(g.segment_alloc_count, w["segment_alloc_count"].get<uint64_t>());
        EXPECT_EQ(g.oom_count, w["oom_count"].get<uint64_t>());
        EXPECT_EQ(g.peak_active_bytes, w["peak_active_bytes"].get<int64_t>());
        EXPECT_EQ(g.peak_event_index, w["peak_event_index"].get<int64_t>());
        EXPECT_EQ(opt(g.first_time_us), w["first_time_us"]);
        EXPECT_EQ(opt(g.last_time_us), w["last_time_us"]);
    }
}

bool sameSummary(const TraceSummary& a, const TraceSummary& b) {
    if (a.devices.size() != b.devices.size()) return false;
    for (const auto& [d, x] : a.devices) {
        auto it = b.devices.find(d);
        if (it == b.devices.end()) return false;
        const DeviceSummary& y = it->second;
        if (x.segments != y.segments || x.reserved_bytes != y.reserved_bytes ||
            x.final_active_bytes != y.final_active_bytes || x.trace_entries != y.trace_entries ||
            x.alloc_count != y.alloc_count || x.free_completed_count != y.free_completed_count ||
            x.segment_alloc_count != y.segment_alloc_count || x.oom_count != y.oom_count ||
            x.peak_active_bytes != y.peak_active_bytes ||
            x.peak_event_index != y.peak_event_index || x.peak_time_us != y.peak_time_us ||
            x.first_time_us != y.first_time_us || x.last_time_us != y.last_time_us ||
            x.categories_at_peak != y.categories_at_peak)
            return false;
    }
    return true;
}

class SnapshotFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(SnapshotFixture, FiguresMatchExpected) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    const std::string name = GetParam();
    auto trace = pytorch_snapshot::importFile((test::fixtures() / "snapshots" / name).string());
    ASSERT_TRUE(trace.ok()) << trace.message();
    EXPECT_EQ(trace->metadata.source_format, "pytorch-snapshot");
    expectFigures(name, test::summaryOf(*trace), expected()[name]);
}

TEST_P(SnapshotFixture, ExportThenImportKeepsTheSummary) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    const std::string name = GetParam();
    auto trace = pytorch_snapshot::importFile((test::fixtures() / "snapshots" / name).string());
    ASSERT_TRUE(trace.ok()) << trace.message();
    const auto out = test::tempPath("roundtrip-" + name + ".pickle");
    auto written = pytorch_snapshot::exportFile(*trace, out.string());
    ASSERT_TRUE(written.ok()) << written.message();
    auto shape = test::readShape(out);
    ASSERT_TRUE(shape.ok()) << shape.message();
    ASSERT_TRUE(shape->has_device_traces);
    EXPECT_EQ(shape->device_traces.size(), exportedLists(name, expected()[name])) << name;
    auto back = pytorch_snapshot::importFile(out.string());
    ASSERT_TRUE(back.ok()) << back.message();
    expectFigures(name + " (round trip)", test::summaryOf(*back), expected()[name]);
    EXPECT_TRUE(sameSummary(test::summaryOf(*trace), test::summaryOf(*back)));
    EXPECT_EQ(back->events.size(), trace->events.size());
    EXPECT_EQ(back->attributes.size(), trace->attributes.size());
    EXPECT_EQ(back->annotations.size(), trace->annotations.size());
    EXPECT_EQ(back->metadata.time_base, trace->metadata.time_base);
    for (size_t i = 0; i < trace->events.size(); ++i) {
        const Event& a = trace->events[i];
        const Event& b = back->events[i];
        ASSERT_TRUE(a.time == b.time && a.address == b.address && a.size == b.size &&
                    a.kind == b.kind && a.device == b.device &&
                    trace->streams[a.stream] == back->streams[b.stream])
            << name << ": event " << i << " differs after the round trip";
        const auto sa = trace->stack(a.stack);
        const auto sb = back->stack(b.stack);
        ASSERT_EQ(sa.size(), sb.size()) << "event " << i;
        for (size_t f = 0; f < sa.size(); ++f) {
            const Frame& fa = trace->frame(sa[f]);
            const Frame& fb = back->frame(sb[f]);
            ASSERT_EQ(trace->string(fa.function), back->string(fb.function));
            ASSERT_EQ(trace->string(fa.file), back->string(fb.file));
            ASSERT_EQ(fa.line, fb.line);
        }
    }
    // Phases made of the annotations come back as they were, not twice.
    ASSERT_EQ(back->phases.size(), trace->phases.size());
    for (size_t i = 0; i < trace->phases.size(); ++i) {
        const Phase& a = trace->phases[i];
        const Phase& b = back->phases[i];
        EXPECT_EQ(back->string(b.name), trace->string(a.name));
        EXPECT_TRUE(a.kind == b.kind && a.parent == b.parent && a.step == b.step &&
                    a.block == b.block && a.device == b.device && a.start == b.start &&
                    a.end == b.end)
            << name << ": phase " << i << " differs after the round trip";
    }
    for (size_t i = 0; i < trace->events.size(); ++i)
        ASSERT_EQ(back->events[i].phase, trace->events[i].phase) << name << ": event " << i;
    ASSERT_EQ(back->allocator_state.has_value(), trace->allocator_state.has_value());
    if (trace->allocator_state) {
        EXPECT_EQ(back->allocator_state->segments.size(), trace->allocator_state->segments.size());
        EXPECT_EQ(back->allocator_state->blocks.size(), trace->allocator_state->blocks.size());
    }
    for (const auto& [k, v] : trace->metadata.properties) {
        const std::string* got = back->metadata.property(k);
        ASSERT_TRUE(got) << "property " << k << " lost";
        if (k.starts_with("allocator_settings.")) {
            EXPECT_EQ(*got, v) << k;
        }
    }
    std::filesystem::remove(out);
}

TEST_P(SnapshotFixture, CPythonRestrictedUnpicklerReadsTheExport) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    if (std::system("python3 -c 'import pickle' > /dev/null 2>&1") != 0)
        GTEST_SKIP() << "no python3";
    const std::string name = GetParam();
    auto trace = pytorch_snapshot::importFile((test::fixtures() / "snapshots" / name).string());
    ASSERT_TRUE(trace.ok()) << trace.message();
    const auto out = test::tempPath("python-" + name + ".pickle");
    ASSERT_TRUE(pytorch_snapshot::exportFile(*trace, out.string()).ok());
    const nlohmann::json all = expected();
    const nlohmann::json& e = all[name];
    uint64_t entries = 0;
    for (const auto& [_, d] : e.items()) entries += d["trace_entries"].get<uint64_t>();
    const std::string cmd = std::string("python3 ") + MEMSCOPE_CHECK_SNAPSHOT_PY + " " +
                            out.string() + " " + std::to_string(entries) + " " +
                            std::to_string(exportedLists(name, e));
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::filesystem::remove(out);
}

TEST_P(SnapshotFixture, PytorchMemoryVizReadsTheExport) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    static const std::string python = test::pythonWith("torch.cuda._memory_viz");
    if (python.empty())
        GTEST_SKIP() << "torch.cuda._memory_viz cannot be imported (python3-torch not installed)";
    const std::string name = GetParam();
    auto trace = pytorch_snapshot::importFile((test::fixtures() / "snapshots" / name).string());
    ASSERT_TRUE(trace.ok()) << trace.message();
    const auto out = test::tempPath("memory-viz-" + name + ".pickle");
    ASSERT_TRUE(pytorch_snapshot::exportFile(*trace, out.string()).ok());
    const std::string cmd = python + " " + MEMSCOPE_MEMORY_VIZ_CHECK_PY + " " + out.string() + " " +
                            std::to_string(exportedLists(name, expected()[name]));
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::filesystem::remove(out);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SnapshotFixture, ::testing::ValuesIn(fixtureNames()),
                         [](const auto& info) {
                             std::string n = info.param.substr(0, info.param.find("__"));
                             for (char& c : n)
                                 if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                             return n;
                         });

TEST(SnapshotFixtures, ExpectedJsonIsReadable) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    ASSERT_TRUE(expected().is_object());
    ASSERT_FALSE(expected().empty());
}

TEST(SnapshotImport, MetadataOfVariants) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    auto dir = test::fixtures() / "snapshots";
    auto noTime = pytorch_snapshot::importFile(
        (dir / "no_time_us_deep_stacks__Maphsge4_select_n.pickle").string());
    ASSERT_TRUE(noTime.ok());
    EXPECT_EQ(noTime->metadata.time_base, TimeBase::EventIndex);
    ASSERT_TRUE(noTime->metadata.property("pytorch.time_source"));

    auto exp = pytorch_snapshot::importFile(
        (dir / "expandable_map_unmap_oom_3dev_cpp_frames__code_location.pickle").string());
    ASSERT_TRUE(exp.ok());
    EXPECT_EQ(exp->metadata.time_base, TimeBase::Nanoseconds);
    ASSERT_TRUE(exp->metadata.property("allocator_settings.expandable_segments"));
    EXPECT_EQ(*exp->metadata.property("allocator_settings.expandable_segments"), "true");
    EXPECT_FALSE(exp->annotations.empty());
    bool oomAttr = false;
    for (const auto& a : exp->attributes) oomAttr |= exp->string(a.key) == "device_free";
    EXPECT_TRUE(oomAttr);
    bool expandable = false;
    for (const auto& s : exp->allocator_state->segments) expandable |= s.expandable;
    EXPECT_TRUE(expandable);

    auto legacy = pytorch_snapshot::importFile(
        (dir / "legacy_block_history_oom__LLM-inference.pickle").string());
    ASSERT_TRUE(legacy.ok());
    const auto& st = *legacy->allocator_state;
    ASSERT_FALSE(st.blocks.empty());
    EXPECT_EQ(st.blocks.front().address, st.segments.front().address);  // tiled from the segment
    EXPECT_FALSE(st.blocks.front().stack.isNull());                     // frames from history
}

// record_function scopes in external_annotations become phases, with kinds
// from their names, and the events inside them point at them.
TEST(SnapshotImport, AnnotationsBecomePhases) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    auto t = pytorch_snapshot::importFile(
        (test::fixtures() / "snapshots" / "ext_annotations_19k_entries__notHanmin_a2.pickle")
            .string());
    ASSERT_TRUE(t.ok()) << t.message();
    ASSERT_EQ(t->annotations.size(), 4u);
    ASSERT_EQ(t->phases.size(), 2u);
    const Phase& zero = t->phases[0];
    EXPECT_EQ(t->string(zero.name), "Optimizer.zero_grad#AdamW.zero_grad");
    EXPECT_EQ(zero.kind, PhaseKind::Optimizer);
    EXPECT_EQ(zero.start, 1754641328433307000);
    EXPECT_EQ(zero.end, 1754641328434309000);
    EXPECT_EQ(zero.device, -1);  // the trace's only device
    EXPECT_TRUE(zero.parent.isNull());
    const Phase& step = t->phases[1];
    EXPECT_EQ(t->string(step.name), "Optimizer.step#AdamW.step");
    EXPECT_EQ(step.kind, PhaseKind::Optimizer);
    uint64_t inside = 0;
    for (const Event& e : t->events) {
        const bool in_step = e.time >= step.start && e.time < step.end;
        const bool in_zero = e.time >= zero.start && e.time < zero.end;
        EXPECT_EQ(e.phase, in_step ? PhaseId(2) : in_zero ? PhaseId(1) : PhaseId()) << e.time;
        inside += in_step || in_zero;
    }
    EXPECT_GT(inside, 0u);

    // Three devices, annotations on device 0 only: the phases are device 0's.
    auto three = pytorch_snapshot::importFile(
        (test::fixtures() / "snapshots" /
         "expandable_map_unmap_oom_3dev_cpp_frames__code_location.pickle")
            .string());
    ASSERT_TRUE(three.ok()) << three.message();
    ASSERT_EQ(three->phases.size(), 2u);
    for (const Phase& p : three->phases) EXPECT_EQ(p.device, 0);
    for (const Event& e : three->events)
        if (e.device != 0) {
            EXPECT_TRUE(e.phase.isNull());
        }
}

}  // namespace
}  // namespace memscope
