// The kineto fixture loads with every [memory] event, and bad JSON fails cleanly.
#include "memscope/plugins/kineto.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <map>
#include <random>

#include "memscope/plugins/pytorch_snapshot.h"
#include "test_util.h"

namespace memscope {
namespace {

const auto kFixture = [] {
    return test::fixtures() / "profiler" / "hta_kineto_trace_with_memory_events.json.gz";
};

Result<Trace> fromText(const std::string& s) {
    return kineto::importBytes(std::as_bytes(std::span(s)));
}

TEST(Kineto, FixtureLoadsAllMemoryEvents) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    auto t = kineto::importFile(kFixture().string());
    ASSERT_TRUE(t.ok()) << t.message();
    // 28,010 [memory] events and one segment event: Total Reserved never changes.
    EXPECT_EQ(t->events.size(), 28011u);
    EXPECT_EQ(t->metadata.rank, 1);
    EXPECT_EQ(t->metadata.pid, 783658);
    EXPECT_EQ(t->metadata.time_base, TimeBase::Nanoseconds);
    const auto s = test::summaryOf(*t);
    ASSERT_EQ(s.devices.size(), 2u);  // the CPU (-1) and GPU 1
    EXPECT_EQ(s.devices.at(1).trace_entries, 26771u);
    EXPECT_EQ(s.devices.at(-1).trace_entries, 1240u);
    EXPECT_EQ(s.devices.at(1).alloc_count, 13385u);
    EXPECT_EQ(s.devices.at(1).free_completed_count, 13385u);
    // The first memory event: {"Device Id": 1, "Addr": 139926520725504, "Bytes": 5242880}
    const Event* first = nullptr;
    for (const Event& e : t->events)
        if (e.device == 1 && e.kind == EventKind::Alloc) {
            first = &e;
            break;
        }
    ASSERT_TRUE(first);
    EXPECT_EQ(first->address, 139926520725504u);
    EXPECT_EQ(first->size, 5242880u);
    EXPECT_EQ(first->time, 1669783687464300000);
}

// Phases from the ops: ProfilerStep#2..#6, each with forward, backward and
// optimizer children and a zero_grad range; the kinds are inferred from names.
TEST(Kineto, FixturePhasesFromOps) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    auto t = kineto::importFile(kFixture().string());
    ASSERT_TRUE(t.ok()) << t.message();
    ASSERT_TRUE(t->metadata.property("phases"));
    EXPECT_EQ(*t->metadata.property("phases"), "inferred from profiler ops");
    std::vector<uint32_t> steps;
    for (uint32_t i = 0; i < t->phases.size(); ++i)
        if (t->phases[i].kind == PhaseKind::Step) steps.push_back(i + 1);
    ASSERT_EQ(steps.size(), 5u);
    for (size_t k = 0; k < steps.size(); ++k) {
        const Phase& step = *t->phase(PhaseId(steps[k]));
        EXPECT_EQ(step.step, int32_t(k + 2));
        EXPECT_EQ(t->string(step.name), "ProfilerStep#" + std::to_string(k + 2));
        EXPECT_EQ(step.device, -1);
        std::map<PhaseKind, const Phase*> children;
        int zero_grads = 0;
        for (const Phase& p : t->phases) {
            if (p.parent.value == steps[k]) children[p.kind] = &p;
            if (t->string(p.name) == "zero_grad" && p.step == step.step) ++zero_grads;
        }
        ASSERT_TRUE(children.count(PhaseKind::Forward)) << k;
        ASSERT_TRUE(children.count(PhaseKind::Backward)) << k;
        ASSERT_TRUE(children.count(PhaseKind::Optimizer)) << k;
        EXPECT_EQ(zero_grads, 1) << k;
        const Phase &fw = *children[PhaseKind::Forward], &bw = *children[PhaseKind::Backward],
                    &opt = *children[PhaseKind::Optimizer];
        EXPECT_EQ(t->string(fw.name), "forward");
        EXPECT_EQ(t->string(bw.name), "backward");
        EXPECT_EQ(t->string(opt.name), "optimizer");
        EXPECT_EQ(fw.start, step.start);
        EXPECT_EQ(fw.end, bw.start);
        EXPECT_LT(bw.start, bw.end);
        EXPECT_LE(bw.end, opt.start);
        EXPECT_LE(opt.end, step.end);
        EXPECT_EQ(fw.step, step.step);
    }
    // The first step: {"name": "ProfilerStep#2", "ts": 1669783687384669, "dur": 345770}
    EXPECT_EQ(t->phase(PhaseId(steps[0]))->start, 1669783687384669000);
    EXPECT_EQ(t->phase(PhaseId(steps[0]))->end, 1669783687730439000);
    // Every event gets its innermost phase by time.
    size_t with_phase = 0;
    size_t by_kind[8] = {};
    for (const Event& e : t->events) {
        if (e.phase.isNull()) continue;
        ++with_phase;
        const Phase& p = *t->phase(e.phase);
        EXPECT_LE(p.start, e.time);
        EXPECT_GE(p.end, e.time);
        ++by_kind[int(p.kind)];  // a Step where no child covers the moment
    }
    std::printf("events by innermost phase kind (step, forward, backward, optimizer, range):");
    for (int k : {0, 1, 2, 3, 6}) std::printf(" %zu", by_kind[k]);
    std::printf(" of %zu\n", t->events.size());
    EXPECT_GT(with_phase, t->events.size() * 9 / 10);
    // summary --json's peaks_by_phase comes from these.
    const auto s = test::summaryOf(*t);
    for (TrainingPhase ph : kAllTrainingPhases)
        EXPECT_TRUE(s.devices.at(1).phase_peaks.by_phase[size_t(index(ph))]) << int(ph);
    EXPECT_EQ(s.devices.at(1).phase_peaks.by_step.size(), 5u);
}

// Each memory event's innermost enclosing CPU op on its thread is its stack.
TEST(Kineto, FixtureStacksNameTheOp) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    auto t = kineto::importFile(kFixture().string());
    ASSERT_TRUE(t.ok()) << t.message();
    size_t cuda = 0, with_op = 0;
    for (const Event& e : t->events) {
        if (e.device < 0 || (e.kind != EventKind::Alloc && e.kind != EventKind::FreeCompleted))
            continue;
        ++cuda;
        const auto frames = t->stack(e.stack);
        if (frames.size() != 1) continue;
        const Frame& f = t->frame(frames[0]);
        EXPECT_FALSE(t->string(f.function).empty());
        EXPECT_EQ(t->string(f.file), "");
        EXPECT_EQ(f.line, 0u);
        ++with_op;
    }
    ASSERT_EQ(cuda, 26770u);
    std::printf("CUDA memory events with an op: %zu of %zu\n", with_op, cuda);
    EXPECT_GE(with_op * 100, cuda * 99);
    // The first one has an op.
    for (const Event& e : t->events)
        if (e.device == 1 && e.kind == EventKind::Alloc) {
            ASSERT_FALSE(e.stack.isNull());
            EXPECT_FALSE(t->string(t->frame(t->stack(e.stack)[0]).function).empty());
            break;
        }
}

TEST(Kineto, FixtureReservedCurveFollowsTotalReserved) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    auto t = kineto::importFile(kFixture().string());
    ASSERT_TRUE(t.ok()) << t.message();
    const auto s = test::summaryOf(*t);
    EXPECT_EQ(s.devices.at(1).segment_alloc_count, 1u);
    ASSERT_TRUE(s.devices.at(1).reserved_bytes);
    EXPECT_EQ(*s.devices.at(1).reserved_bytes, 12782141440u);
    auto tl = Timeline::build(*t);
    ASSERT_TRUE(tl.ok());
    for (const auto& d : (*tl)->devices())
        if (d.device == 1) {
            ASSERT_FALSE(d.reserved.empty());
            EXPECT_EQ(d.reserved.valueAt(d.end), 12782141440);
        }
}

// Ops and memory events on two threads, Total Reserved that rises, stays and
// falls, a GPU kernel that must not count as an op.
TEST(Kineto, OpsGivePhasesStacksAndReserved) {
    const std::string json = R"({"traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 1, "tid": 1, "ts": 100, "dur": 100},
      {"ph": "X", "cat": "user_annotation", "name": "Optimizer.zero_grad#SGD.zero_grad", "pid": 1, "tid": 1, "ts": 101, "dur": 2},
      {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 105, "dur": 20},
      {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 106, "dur": 2},
      {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 105, "dur": 50},
      {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: MmBackward0", "pid": 1, "tid": 2, "ts": 140, "dur": 10},
      {"ph": "X", "cat": "cpu_op", "name": "MmBackward0", "pid": 1, "tid": 2, "ts": 141, "dur": 8},
      {"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#SGD.step", "pid": 1, "tid": 1, "ts": 170, "dur": 20},
      {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 107, "args": {"Device Type": 1, "Device Id": 0, "Addr": 1, "Bytes": 100, "Total Reserved": 1000}},
      {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 110, "args": {"Device Type": 1, "Device Id": 0, "Addr": 2, "Bytes": 50, "Total Reserved": 1000}},
      {"ph": "i", "name": "[memory]", "pid": 1, "tid": 2, "ts": 145, "args": {"Device Type": 1, "Device Id": 0, "Addr": 3, "Bytes": 10, "Total Reserved": 3000}},
      {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 145, "args": {"Device Type": 0, "Device Id": -1, "Addr": 4, "Bytes": 8, "Total Reserved": 0}},
      {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 180, "args": {"Device Type": 1, "Device Id": 0, "Addr": 1, "Bytes": -100, "Total Reserved": 2000}},
      {"ph": "i", "name": "[memory]", "pid": 1, "tid": 3, "ts": 300, "args": {"Device Type": 1, "Device Id": 0, "Addr": 2, "Bytes": -50, "Total Reserved": 2000}}]})";
    auto t = fromText(json);
    ASSERT_TRUE(t.ok()) << t.message();
    // 6 memory events and 3 changes of Total Reserved: +1000, +2000, -1000.
    ASSERT_EQ(t->events.size(), 9u);
    std::vector<std::pair<EventKind, uint64_t>> segments;
    for (const Event& e : t->events)
        if (e.kind == EventKind::SegmentAlloc || e.kind == EventKind::SegmentFree)
            segments.push_back({e.kind, e.size});
    const std::vector<std::pair<EventKind, uint64_t>> want = {{EventKind::SegmentAlloc, 1000},
                                                              {EventKind::SegmentAlloc, 2000},
                                                              {EventKind::SegmentFree, 1000}};
    EXPECT_EQ(segments, want);
    const auto s = test::summaryOf(*t);
    EXPECT_EQ(*s.devices.at(0).reserved_bytes, 2000u);
    EXPECT_EQ(s.devices.at(-1).trace_entries, 1u);  // the host stays the host

    auto opOf = [&](const Event& e) -> std::string {
        const auto frames = t->stack(e.stack);
        return frames.empty() ? "" : std::string(t->string(t->frame(frames[0]).function));
    };
    auto phaseOf = [&](const Event& e) -> std::string {
        return e.phase.isNull() ? "" : std::string(t->string(t->phase(e.phase)->name));
    };
    std::vector<std::pair<std::string, std::string>> got;
    for (const Event& e : t->events)
        if (e.kind == EventKind::Alloc || e.kind == EventKind::FreeCompleted)
            got.push_back({opOf(e), phaseOf(e)});
    const std::vector<std::pair<std::string, std::string>> expected = {
        {"aten::empty", "forward"},      // innermost of linear > empty
        {"aten::linear", "forward"},     // after empty ended
        {"MmBackward0", "backward"},     // on the autograd thread
        {"ProfilerStep#7", "backward"},  // on tid 1 only the step is open at 145
        {"Optimizer.step#SGD.step", "optimizer"},
        {"", ""},  // after the step, on a thread without ops
    };
    EXPECT_EQ(got, expected);

    ASSERT_EQ(t->phases.size(), 5u);  // step, forward, backward, optimizer, zero_grad
    const Phase& step = t->phases[0];
    EXPECT_EQ(step.kind, PhaseKind::Step);
    EXPECT_EQ(step.step, 7);
    EXPECT_EQ(step.start, 100000);
    EXPECT_EQ(step.end, 200000);
    const Phase& fw = t->phases[1];
    EXPECT_EQ(fw.kind, PhaseKind::Forward);
    EXPECT_EQ(fw.parent, PhaseId(1));
    EXPECT_EQ(fw.start, 100000);
    EXPECT_EQ(fw.end, 140000);
    const Phase& bw = t->phases[2];
    EXPECT_EQ(bw.kind, PhaseKind::Backward);
    EXPECT_EQ(bw.start, 140000);
    EXPECT_EQ(bw.end, 150000);
    const Phase& opt = t->phases[3];
    EXPECT_EQ(opt.kind, PhaseKind::Optimizer);
    EXPECT_EQ(t->string(opt.name), "optimizer");
    EXPECT_EQ(opt.start, 170000);
    EXPECT_EQ(opt.end, 190000);
    const Phase& zg = t->phases[4];
    EXPECT_EQ(zg.kind, PhaseKind::Range);
    EXPECT_EQ(t->string(zg.name), "zero_grad");
    EXPECT_EQ(zg.parent, PhaseId(2));  // inside forward
    for (const Phase& p : t->phases) EXPECT_EQ(p.device, -1);
    EXPECT_EQ(*t->metadata.property("phases"), "inferred from profiler ops");
}

TEST(Kineto, LongOpNamesAreCutWithAWarning) {
    const std::string name(5000, 'a');
    const std::string json = R"({"traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": ")" +
                             name + R"(", "pid": 1, "tid": 1, "ts": 1, "dur": 5},
      {"ph": "X", "cat": "kernel", "name": ")" +
                             name + R"(", "pid": 0, "tid": 1, "ts": 1, "dur": 5},
      {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 2, "args": {"Device Type": 1, "Device Id": 0, "Addr": 1, "Bytes": 100}}]})";
    std::vector<LoadWarning> warnings;
    TaskContext ctx;
    ctx.warnings = &warnings;
    auto t = kineto::importBytes(std::as_bytes(std::span(json)), ctx);
    ASSERT_TRUE(t.ok()) << t.message();
    ASSERT_EQ(t->events.size(), 1u);
    EXPECT_EQ(t->string(t->frame(t->stack(t->events[0].stack)[0]).function).size(), 1024u);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_EQ(warnings[0].count, 1u);  // the kernel is no op: not counted
}

TEST(Kineto, NoStepsNoPhases) {
    const std::string json = R"({"traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1, "dur": 5},
      {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#x", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
      {"ph": "X", "cat": "cpu_op", "name": "aten::bad", "pid": 1, "tid": 1, "ts": 1, "dur": -5},
      {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 2, "args": {"Device Type": 1, "Device Id": 0, "Addr": 1, "Bytes": 100}}]})";
    auto t = fromText(json);
    ASSERT_TRUE(t.ok()) << t.message();
    EXPECT_TRUE(t->phases.empty());
    EXPECT_FALSE(t->metadata.property("phases"));
    ASSERT_EQ(t->events.size(), 1u);
    EXPECT_EQ(t->string(t->frame(t->stack(t->events[0].stack)[0]).function), "aten::add");
}

TEST(Kineto, ExportToSnapshotAndBackKeepsTheSummary) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    auto t = kineto::importFile(kFixture().string());
    ASSERT_TRUE(t.ok()) << t.message();
    const auto out = test::tempPath("kineto.pickle");
    ASSERT_TRUE(pytorch_snapshot::exportFile(*t, out.string()).ok());
    auto back = pytorch_snapshot::importFile(out.string());
    ASSERT_TRUE(back.ok()) << back.message();
    const auto a = test::summaryOf(*t), b = test::summaryOf(*back);
    ASSERT_EQ(a.devices.size(), b.devices.size());
    for (const auto& [d, x] : a.devices) {
        const auto& y = b.devices.at(d);
        EXPECT_EQ(x.peak_active_bytes, y.peak_active_bytes) << d;
        EXPECT_EQ(x.peak_event_index, y.peak_event_index) << d;
        EXPECT_EQ(x.trace_entries, y.trace_entries) << d;
        EXPECT_EQ(x.final_active_bytes, y.final_active_bytes) << d;
        EXPECT_EQ(x.reserved_bytes, y.reserved_bytes) << d;
        EXPECT_EQ(x.first_time_us, y.first_time_us) << d;
        EXPECT_EQ(x.last_time_us, y.last_time_us) << d;
    }
    std::filesystem::remove(out);
}

TEST(Kineto, OldFormatWithoutAddrStillGivesACurve) {
    const std::string json = R"({"traceEvents": [
      {"ph": "i", "name": "[memory]", "ts": 10.5, "args": {"Device Type": 1, "Device Id": 0, "Bytes": 100}},
      {"ph": "i", "name": "[memory]", "ts": 11, "args": {"Device Type": 1, "Device Id": 0, "Bytes": 50}},
      {"ph": "X", "name": "aten::add", "ts": 11.5, "dur": 3},
      {"ph": "i", "name": "[memory]", "ts": 12, "args": {"Device Type": 1, "Device Id": 0, "Bytes": -100}},
      {"ph": "i", "name": "[memory]", "ts": 13, "args": {"Device Type": 1, "Device Id": 0, "Bytes": -50}}]})";
    auto t = fromText(json);
    ASSERT_TRUE(t.ok()) << t.message();
    ASSERT_EQ(t->events.size(), 4u);
    EXPECT_EQ(t->events[0].time, 10500);
    const auto s = test::summaryOf(*t);
    EXPECT_EQ(s.devices.at(0).peak_active_bytes, 150);
    EXPECT_EQ(*s.devices.at(0).final_active_bytes, 0u);
}

TEST(Kineto, ArrayFormAndGzipInMemory) {
    const std::string json =
        R"([{"ph": "i", "name": "[memory]", "ts": 1, "args": {"Device Type": 1, "Device Id": 2, "Addr": 4096, "Bytes": 8}}])";
    std::vector<unsigned char> gz(compressBound(uLong(json.size())) + 64);
    z_stream z{};
    ASSERT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(json.data()));
    z.avail_in = uInt(json.size());
    z.next_out = gz.data();
    z.avail_out = uInt(gz.size());
    ASSERT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
    gz.resize(z.total_out);
    deflateEnd(&z);
    auto t = kineto::importBytes(std::as_bytes(std::span(gz)));
    ASSERT_TRUE(t.ok()) << t.message();
    ASSERT_EQ(t->events.size(), 1u);
    EXPECT_EQ(t->events[0].device, 2);
    EXPECT_EQ(t->events[0].address, 4096u);
    EXPECT_GE(kineto::probe(std::as_bytes(std::span(gz)), "x.json.gz"), 50);
    // truncated gzip
    auto cut = kineto::importBytes(std::as_bytes(std::span(gz)).first(gz.size() / 2));
    EXPECT_FALSE(cut.ok());
}

TEST(Kineto, BadInputFailsCleanly) {
    const std::string cases[] = {
        "",
        "{",
        "[",
        "{\"traceEvents\": [",
        "{\"traceEvents\": [{\"name\": \"[memory]\", \"args\": {\"Bytes\": }}]}",
        std::string(100000, '['),
        "\x1f\x8b garbage",
        "{\"traceEvents\": [{\"name\": \"[memory]\", \"args\": {\"Device Type\": 1, \"Device Id\": "
        "99999, \"Bytes\": 1}}]}",
    };
    for (const auto& c : cases) {
        auto t = fromText(c);
        EXPECT_FALSE(t.ok()) << c.substr(0, 40);
    }
}

TEST(Kineto, TruncatedAndFlippedFixtureNeverCrashes) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    auto bytes = test::readBytes(kFixture());
    ASSERT_FALSE(bytes.empty());
    const std::span<const std::byte> all(bytes);
    for (size_t n = 0; n < bytes.size(); n += bytes.size() / 10 + 1) {
        auto t = kineto::importBytes(all.first(n));
        EXPECT_FALSE(t.ok()) << n;
    }
    std::mt19937 rng(7);
    auto head = std::vector<std::byte>(bytes.begin(), bytes.begin() + 20000);
    for (int i = 0; i < 200; ++i) {
        auto copy = head;
        copy[rng() % copy.size()] ^= std::byte(1u << (rng() % 8));
        (void)kineto::importBytes(copy);
    }
}

}  // namespace
}  // namespace memscope
