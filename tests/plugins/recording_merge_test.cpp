// The recording merge (core/recording_merge.h, recording_folder.h): a real
// snapshot fed in as the allocator history stream, in one dump or several,
// must give back its own timeline exactly; lost entries become gap markers;
// CUPTI's records of the same segments are not counted twice; the hook's
// phases nest and label the events; the folder stage writes and cleans up.
#include "memscope/recording/recording_merge.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "memscope/analysis/summary.h"
#include "memscope/builtin_plugins.h"
#include "memscope/format/native_format.h"
#include "memscope/open/open_run.h"
#include "memscope/recording/capture_log.h"
#include "memscope/recording/recording_folder.h"
#include "memscope/report/report_json.h"
#include "memscope/timeline/timeline.h"
#include "memscope_test/event_builder.h"
#include "test_util.h"

namespace memscope {
namespace {

using testsupport::makeEvent;

namespace fs = std::filesystem;

// Snapshots with wall-clock times (time_us), the ones a live history gives.
const char* kTimedSnapshots[] = {
    "ext_annotations_19k_entries__notHanmin_a2.pickle",
    "user_metadata_compile_ctx__bcrafton_a2.pickle",
    "time_us_no_settings_snapshot_actions__EoR_NN.pickle",
    "expandable_map_unmap_oom_3dev_cpp_frames__code_location.pickle",
};

Trace loadSnapshot(const std::string& name) {
    auto t = processRegistry().load((test::fixtures() / "snapshots" / name).string());
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.message());
    return t.ok() ? std::move(*t) : Trace();
}

// Events [first, last) of `t` (attributes re-indexed); the allocator's end
// state only in the last dump, as each real dump has its own.
Trace slice(const Trace& t, size_t first, size_t last, bool with_state) {
    Trace out = t;
    out.events.assign(t.events.begin() + long(first), t.events.begin() + long(last));
    out.attributes.clear();
    for (EventAttribute a : t.attributes)
        if (a.event >= first && a.event < last) {
            a.event -= first;
            out.attributes.push_back(a);
        }
    if (!with_state) out.allocator_state.reset();
    return out;
}

// mergeRecording with its warnings and statistics collected.
struct Merged {
    Result<Trace> trace = makeError("not merged");
    std::vector<LoadWarning> warnings;
    MergeStats stats;
};
Merged merge(RecordingParts parts) {
    Merged m;
    TaskContext ctx;
    ctx.warnings = &m.warnings;
    m.trace = mergeRecording(std::move(parts), ctx, &m.stats);
    return m;
}

void expectSameSeries(const StepSeries& a, const StepSeries& b, const std::string& what) {
    ASSERT_EQ(a.initial, b.initial) << what;
    ASSERT_EQ(a.xs().size(), b.xs().size()) << what;
    EXPECT_TRUE(std::equal(a.xs().begin(), a.xs().end(), b.xs().begin())) << what;
    EXPECT_TRUE(std::equal(a.ys().begin(), a.ys().end(), b.ys().begin())) << what;
}

// Same timeline, device by device: live and reserved curves, peak, intervals.
void expectSameTimeline(const Trace& expected, const Trace& actual, const std::string& name) {
    auto a = Timeline::build(expected);
    auto b = Timeline::build(actual);
    ASSERT_TRUE(a.ok() && b.ok()) << name;
    ASSERT_EQ((*a)->devices().size(), (*b)->devices().size()) << name;
    for (const DeviceTimeline& da : (*a)->devices()) {
        const DeviceTimeline* db = (*b)->device(da.device);
        ASSERT_NE(db, nullptr) << name << " device " << da.device;
        const std::string what = name + " device " + std::to_string(da.device);
        expectSameSeries(da.live, db->live, what + " live");
        expectSameSeries(da.reserved, db->reserved, what + " reserved");
        EXPECT_EQ(da.peak.bytes, db->peak.bytes) << what;
        EXPECT_EQ(da.peak.time, db->peak.time) << what;
        EXPECT_EQ(da.initial_live, db->initial_live) << what;
        ASSERT_EQ(da.intervals.size(), db->intervals.size()) << what;
        for (size_t i = 0; i < da.intervals.size(); ++i) {
            EXPECT_EQ(da.intervals[i].start, db->intervals[i].start) << what << " interval " << i;
            EXPECT_EQ(da.intervals[i].end, db->intervals[i].end) << what << " interval " << i;
            EXPECT_EQ(da.intervals[i].size, db->intervals[i].size) << what << " interval " << i;
            // Same stack, by its frames' text (ids differ between traces).
            const auto sa = expected.stack(da.intervals[i].stack);
            const auto sb = actual.stack(db->intervals[i].stack);
            ASSERT_EQ(sa.size(), sb.size()) << what << " interval " << i;
            for (size_t f = 0; f < sa.size(); ++f)
                EXPECT_EQ(expected.string(expected.frame(sa[f]).function),
                          actual.string(actual.frame(sb[f]).function));
        }
    }
}

TEST(RecordingMerge, SnapshotAsOneHistoryDumpGivesItsTimelineBack) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    for (const char* name : kTimedSnapshots) {
        Trace original = loadSnapshot(name);
        ASSERT_EQ(original.metadata.time_base, TimeBase::Nanoseconds) << name;
        RecordingParts parts;
        parts.histories.push_back({original, false});
        MergeStats stats;
        auto merged = mergeRecording(std::move(parts), {}, &stats);
        ASSERT_TRUE(merged.ok()) << merged.message();
        EXPECT_EQ(merged->events.size(), original.events.size()) << name;
        EXPECT_EQ(stats.gaps, 0u);
        expectSameTimeline(original, *merged, name);
    }
}

TEST(RecordingMerge, OverlappingDumpsAreStitchedExactly) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    for (const char* name : kTimedSnapshots) {
        Trace original = loadSnapshot(name);
        const size_t n = original.events.size();
        ASSERT_GT(n, 10u) << name;
        // Three dumps whose ring buffers overlap, as periodic dumps do.
        RecordingParts parts;
        parts.histories.push_back({slice(original, 0, n * 5 / 10, false), false});
        parts.histories.push_back({slice(original, n * 3 / 10, n * 8 / 10, false), false});
        parts.histories.push_back({slice(original, n * 6 / 10, n, true), false});
        MergeStats stats;
        auto merged = mergeRecording(std::move(parts), {}, &stats);
        ASSERT_TRUE(merged.ok()) << merged.message();
        EXPECT_EQ(stats.gaps, 0u) << name;
        EXPECT_EQ(merged->events.size(), n) << name;
        EXPECT_EQ(merged->attributes.size(), original.attributes.size()) << name;
        expectSameTimeline(original, *merged, name);
    }
}

TEST(RecordingMerge, ClearedDumpsFollowOnWithoutAGap) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    Trace original = loadSnapshot(kTimedSnapshots[0]);
    const size_t n = original.events.size();
    RecordingParts parts;
    parts.histories.push_back({slice(original, 0, n / 2, false), false});
    parts.histories.push_back({slice(original, n / 2, n, true), true});
    const Merged m = merge(std::move(parts));
    ASSERT_TRUE(m.trace.ok());
    EXPECT_EQ(m.stats.gaps, 0u);
    EXPECT_TRUE(m.warnings.empty());
    expectSameTimeline(original, *m.trace, "cleared");
}

TEST(RecordingMerge, LostEntriesBecomeAGapMarkerAndAWarning) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    Trace original = loadSnapshot(kTimedSnapshots[0]);
    const size_t n = original.events.size();
    RecordingParts parts;
    parts.histories.push_back({slice(original, 0, n * 4 / 10, false), false});
    parts.histories.push_back({slice(original, n * 6 / 10, n, true), false});
    Merged m = merge(std::move(parts));
    ASSERT_TRUE(m.trace.ok());
    EXPECT_EQ(m.stats.gaps, 1u);
    ASSERT_EQ(m.warnings.size(), 1u);
    EXPECT_EQ(m.warnings[0].kind, WarningKind::DroppedRecords);
    EXPECT_NE(m.warnings[0].message.find("MEMSCOPE_HISTORY_MAX_ENTRIES"), std::string::npos);
    // The gap travels with the trace: opening it warns again.
    auto opened = openTrace(std::move(*m.trace), "merged");
    ASSERT_TRUE(opened.ok());
    bool found = false;
    for (const LoadWarning& w : opened->warnings)
        found |= w.message.find("were lost between") != std::string::npos;
    EXPECT_TRUE(found);
}

// A CUPTI trace that saw the same cudaMalloc/cudaFree calls (a few ms
// earlier, as the allocator logs a segment after cudaMalloc returns), plus
// one segment the allocator never saw (a library's own cudaMalloc).
TEST(RecordingMerge, CuptiSegmentsOfTheAllocatorAreNotCountedTwice) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    // The first timed fixture whose history has segment entries.
    Trace original;
    for (const char* name : kTimedSnapshots) {
        original = loadSnapshot(name);
        if (std::any_of(original.events.begin(), original.events.end(),
                        [](const Event& e) { return e.kind == EventKind::SegmentAlloc; }))
            break;
    }
    Trace cupti;
    cupti.metadata.source_format = "memscope-cupti";
    size_t segment_events = 0;
    for (const Event& e : original.events) {
        if (e.kind != EventKind::SegmentAlloc && e.kind != EventKind::SegmentFree) continue;
        Event c = e;
        c.stack = StackId();
        c.stream = 0;
        c.time -= 3'000'000;
        cupti.events.push_back(c);
        ++segment_events;
    }
    ASSERT_GT(segment_events, 0u);
    const int16_t device = cupti.events.front().device;
    Event outside;
    outside.kind = EventKind::SegmentAlloc;
    outside.device = device;
    outside.address = 0x7f0000000000;
    outside.size = 64 << 20;
    outside.time = original.events.back().time - 1000;
    cupti.events.push_back(outside);
    std::stable_sort(cupti.events.begin(), cupti.events.end(),
                     [](const Event& a, const Event& b) { return a.time < b.time; });

    RecordingParts parts;
    parts.histories.push_back({original, false});
    parts.cupti = std::move(cupti);
    MergeStats stats;
    auto merged = mergeRecording(std::move(parts), {}, &stats);
    ASSERT_TRUE(merged.ok());
    EXPECT_EQ(stats.cupti_segments_matched, segment_events);
    EXPECT_EQ(stats.cupti_events_kept, 1u);

    auto before = Timeline::build(original);
    auto after = Timeline::build(*merged);
    ASSERT_TRUE(before.ok() && after.ok());
    const auto& rb = (*before)->device(device)->reserved;
    const auto& ra = (*after)->device(device)->reserved;
    ASSERT_FALSE(ra.ys().empty());
    EXPECT_EQ(ra.ys().back(), rb.ys().back() + int64_t(64 << 20));
    expectSameSeries((*before)->device(device)->live, (*after)->device(device)->live, "live");
}

HookPhase phase(HookPhaseKind kind, int step, int64_t start, int64_t end) {
    return {kind, step, start, end};
}

// Two steps of hook phases over a synthetic history: the phases nest (step >
// backward > recompute), each event lands in the innermost phase, and the
// summary lists the steps with their phases.
TEST(RecordingMerge, HookPhasesNestAndLabelTheEvents) {
    Trace history;
    history.metadata.source_format = "pytorch-snapshot";
    const int64_t ms = 1'000'000, t0 = 1'700'000'000'000'000'000;
    history.events = {makeEvent(t0 + 1 * ms, EventKind::Alloc, 0x1000, 100),          // forward 0
                      makeEvent(t0 + 4 * ms, EventKind::Alloc, 0x2000, 50),           // recompute 0
                      makeEvent(t0 + 5 * ms, EventKind::FreeCompleted, 0x1000, 100),  // backward 0
                      makeEvent(t0 + 8 * ms, EventKind::Alloc, 0x3000, 10),           // optimizer 0
                      makeEvent(t0 + 11 * ms, EventKind::Alloc, 0x4000, 20)};         // forward 1
    HookSidecar hook;
    hook.pid = 42;
    for (int s = 0; s < 2; ++s) {
        const int64_t b = t0 + s * 10 * ms;
        hook.phases.push_back(phase(HookPhaseKind::Step, s, b, b + 10 * ms));
        hook.phases.push_back(phase(HookPhaseKind::Forward, s, b, b + 3 * ms));
        hook.phases.push_back(phase(HookPhaseKind::Backward, s, b + 3 * ms, b + 7 * ms));
        hook.phases.push_back(
            phase(HookPhaseKind::Recompute, s, b + 3 * ms + 500, b + 4 * ms + 500));
        hook.phases.push_back(phase(HookPhaseKind::Optimizer, s, b + 7 * ms, b + 9 * ms));
    }
    RecordingParts parts;
    parts.hook = hook;
    parts.histories.push_back({std::move(history), false});
    auto merged = mergeRecording(std::move(parts));
    ASSERT_TRUE(merged.ok()) << merged.message();
    const Trace& t = *merged;
    auto pathOf = [&](size_t event) { return phasePath(t, t.events[event].phase); };
    EXPECT_EQ(pathOf(0), "step 0 / forward");
    EXPECT_EQ(pathOf(1), "step 0 / backward / recompute");
    EXPECT_EQ(pathOf(2), "step 0 / backward");
    EXPECT_EQ(pathOf(3), "step 0 / optimizer");
    EXPECT_EQ(pathOf(4), "step 1 / forward");
    EXPECT_EQ(t.metadata.pid, 42);
    ASSERT_NE(t.metadata.property("phases"), nullptr);

    auto tl = Timeline::build(t);
    ASSERT_TRUE(tl.ok());
    FileReport report{"x", "native", &t, tl->get(), summarize(t, **tl), {}, {}};
    const std::string json = summaryToJson(std::span(&report, 1));
    EXPECT_NE(json.find("\"phases_source\""), std::string::npos);
    const size_t steps = json.find("\"steps\"");
    ASSERT_NE(steps, std::string::npos);
    EXPECT_NE(json.find("\"recompute\"", steps), std::string::npos);
    EXPECT_NE(json.find("\"name\": \"step 1\"", steps), std::string::npos);
}

// PyTorch 2.1's history has no time_us: it cannot be merged by time, so it is
// left out with a warning (the folder stage keeps the file), and the phases
// and CPU events still make a trace.
// The run is called after its script (or program) and rank, not its pid.
TEST(RecordingMerge, RunIsNamedAfterTheScriptAndRank) {
    const int64_t t0 = 1'700'000'000'000'000'000;
    HookSidecar hook;
    hook.pid = 30337;
    hook.rank = 1;
    hook.argv = {"/work/train.py", "--lr", "1"};
    hook.orig_argv = {"/usr/bin/python3.11", "-u", "/work/train.py", "--lr", "1"};
    hook.phases.push_back(phase(HookPhaseKind::Step, 0, t0, t0 + 10));
    Trace cupti;
    cupti.metadata.source_format = "memscope-cupti";
    cupti.metadata.pid = 30337;
    cupti.metadata.rank = 1;
    cupti.events.push_back(makeEvent(t0 + 1, EventKind::SegmentAlloc, 0x1000, 1 << 20));

    // The hook alone: its command line names the run; the pid stays the pid.
    RecordingParts alone;
    alone.hook = hook;
    auto merged = mergeRecording(alone);
    ASSERT_TRUE(merged.ok()) << merged.message();
    EXPECT_EQ(merged->metadata.name, "train.py rank 1");
    EXPECT_EQ(merged->metadata.pid, 30337);
    EXPECT_EQ(merged->metadata.rank, 1);
    ASSERT_NE(merged->metadata.property("command"), nullptr);
    EXPECT_EQ(*merged->metadata.property("command"),
              "/usr/bin/python3.11 -u /work/train.py --lr 1");

    // With CUPTI's trace: the hook's name (the script) over the tracer's; the
    // tracer's command line is kept.
    RecordingParts both;
    both.hook = hook;
    both.cupti = cupti;
    both.cupti->metadata.name = "python3.11 rank 1";
    both.cupti->metadata.setProperty("command", "python3.11 -u /work/train.py --lr 1");
    merged = mergeRecording(both);
    ASSERT_TRUE(merged.ok()) << merged.message();
    EXPECT_EQ(merged->metadata.name, "train.py rank 1");
    EXPECT_EQ(*merged->metadata.property("command"), "python3.11 -u /work/train.py --lr 1");

    // A hook that wrote no command line: the tracer's name stands.
    RecordingParts older;
    older.hook = hook;
    older.hook->argv.clear();
    older.hook->orig_argv.clear();
    older.cupti = cupti;
    older.cupti->metadata.name = "my_cuda_app rank 1";
    merged = mergeRecording(older);
    ASSERT_TRUE(merged.ok()) << merged.message();
    EXPECT_EQ(merged->metadata.name, "my_cuda_app rank 1");

    // Nothing names it: the pid, with the rank.
    older.cupti.reset();
    merged = mergeRecording(older);
    ASSERT_TRUE(merged.ok()) << merged.message();
    EXPECT_EQ(merged->metadata.name, "pid 30337 rank 1");
    older.hook->rank = -1;
    merged = mergeRecording(older);
    ASSERT_TRUE(merged.ok()) << merged.message();
    EXPECT_EQ(merged->metadata.name, "pid 30337");

    // `python -c` with the program's own sys.argv (a launcher's runpy).
    RecordingParts code;
    code.hook = hook;
    code.hook->orig_argv = {"python3", "-c", "import runpy; runpy.run_path('t.py')"};
    code.hook->argv = {"train", "3"};
    merged = mergeRecording(code);
    ASSERT_TRUE(merged.ok()) << merged.message();
    EXPECT_EQ(merged->metadata.name, "train rank 1");
}

TEST(RecordingMerge, HistoryWithoutTimestampsIsLeftOutWithAWarning) {
    Trace history;
    history.metadata.time_base = TimeBase::EventIndex;
    history.events.push_back(makeEvent(0, EventKind::Alloc, 0x10, 8));
    RecordingParts parts;
    parts.histories.push_back({std::move(history), false});
    parts.cpu = {{100, 0xa0, 4096}};
    const Merged m = merge(std::move(parts));
    ASSERT_TRUE(m.trace.ok()) << m.trace.message();
    EXPECT_EQ(m.trace->events.size(), 1u);
    EXPECT_EQ(m.stats.untimed_histories, 1u);
    ASSERT_EQ(m.warnings.size(), 1u);
    EXPECT_NE(m.warnings[0].message.find("no timestamps"), std::string::npos);
}

TEST(HookSidecar, BadFilesAreErrorsThatSayWhy) {
    auto bad = [](std::string_view json) { return parseHookSidecar(json, "h.json"); };
    EXPECT_NE(bad("{").message().find("not valid JSON"), std::string::npos);
    EXPECT_NE(bad("[]").message().find("not a memscope hook file"), std::string::npos);
    EXPECT_NE(bad(R"({"format":"memscope-hook","version":3})").message().find("version 3"),
              std::string::npos);
    EXPECT_NE(bad(R"({"format":"memscope-hook","version":1,"histories":[{"file":"../x"}]})")
                  .message()
                  .find("not a plain name"),
              std::string::npos);
    auto ok = bad(R"({"format":"memscope-hook","version":1,"pid":7,
        "phases":[{"kind":"forward","step":0,"start_ns":5,"end_ns":9},
                  {"kind":"nonsense","step":0,"start_ns":5,"end_ns":9},
                  {"kind":"backward","step":0,"start_ns":9,"end_ns":3}]})");
    ASSERT_TRUE(ok.ok()) << ok.message();
    EXPECT_EQ(ok->pid, 7);
    ASSERT_EQ(ok->phases.size(), 1u);
    ASSERT_EQ(ok->warnings.size(), 1u);  // the two malformed phases, counted
}

fs::path freshDir(const std::string& name) {
    const fs::path dir = test::tempPath(name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

void writeText(const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
}

TEST(CaptureLog, PartialLastRecordIsAWarningBadHeaderAnError) {
    const fs::path dir = freshDir("capture-log");
    std::string bytes(kCaptureLogMagic, 8);
    const uint32_t size = kCaptureLogRecordSize, zero = 0;
    bytes.append(reinterpret_cast<const char*>(&size), 4);
    bytes.append(reinterpret_cast<const char*>(&zero), 4);
    const int64_t rec[3] = {123, 0x10, 64};
    bytes.append(reinterpret_cast<const char*>(rec), sizeof(rec));
    bytes.append(10, 'x');  // a record cut short
    writeText(dir / "log.bin", bytes);
    std::vector<LoadWarning> warnings;
    TaskContext ctx;
    ctx.warnings = &warnings;
    auto log = readCaptureLog((dir / "log.bin").string(), ctx);
    ASSERT_TRUE(log.ok()) << log.message();
    ASSERT_EQ(log->size(), 1u);
    EXPECT_EQ((*log)[0].bytes, 64);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_EQ(warnings[0].kind, WarningKind::DamagedTail);

    writeText(dir / "bad.bin", "not a log at all");
    EXPECT_FALSE(readCaptureLog((dir / "bad.bin").string()).ok());
    EXPECT_FALSE(readCaptureLog((dir / "missing.bin").string()).ok());
}

// The folder stage: a tracer trace and a hook folder with a history dump
// become one trace under the tracer's name; the hook folder goes away. A hook
// folder that cannot be read stays, with an error naming it.
TEST(RecordingFolder, MergesEachProcessAndCleansUp) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    const fs::path dir = freshDir("recording-folder");
    const fs::path hook = dir / kHookFolderName / "123";
    fs::create_directories(hook);
    fs::copy_file(test::fixtures() / "snapshots" / kTimedSnapshots[0],
                  hook / "history-0001.pickle");
    writeText(hook / "hook.json", R"({"format":"memscope-hook","version":1,"pid":123,"rank":0,
        "argv":["train.py"],"orig_argv":["python3","train.py"],"complete":true,"exit":"atexit","histories":[{"file":"history-0001.pickle"}],
        "phases":[{"kind":"step","step":0,"start_ns":1,"end_ns":2}]})");
    Trace cupti;
    cupti.metadata.source_format = "memscope-cupti";
    cupti.metadata.pid = 123;
    Event e = makeEvent(5, EventKind::SegmentAlloc, 0x99000000, 1 << 20);
    cupti.events.push_back(e);
    const fs::path tracer = dir / "memscope-123-rank0.memscope";
    ASSERT_TRUE(writeNativeTrace(cupti, tracer.string()).ok());

    const fs::path broken = dir / kHookFolderName / "456";
    fs::create_directories(broken);
    writeText(broken / "hook.json", "{ not json");

    const RecordingFinish done = finishRecording(dir.string(), processRegistry());
    ASSERT_EQ(done.traces.size(), 1u);
    EXPECT_EQ(done.traces[0].path, tracer.string());
    ASSERT_EQ(done.errors.size(), 1u);
    EXPECT_NE(done.errors[0].find("456"), std::string::npos);
    EXPECT_FALSE(fs::exists(hook));
    EXPECT_TRUE(fs::exists(broken));

    auto merged = importNativeTrace(tracer.string());
    ASSERT_TRUE(merged.ok()) << merged.message();
    EXPECT_EQ(merged->metadata.source_format, "memscope-record");
    EXPECT_EQ(merged->metadata.name, "train.py rank 0");
    EXPECT_EQ(merged->metadata.pid, 123);
    Trace original = loadSnapshot(kTimedSnapshots[0]);
    EXPECT_EQ(merged->events.size(), original.events.size() + 1);
    EXPECT_EQ(merged->phases.size(), 1u);
}

TEST(RecordingFolder, UntimedHistoryIsKeptAsASnapshotBesideTheTrace) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    const fs::path dir = freshDir("recording-folder-untimed");
    const fs::path hook = dir / kHookFolderName / "77";
    fs::create_directories(hook);
    fs::copy_file(
        test::fixtures() / "snapshots" / "no_time_us_deep_stacks__Maphsge4_select_n.pickle",
        hook / "history-0001.pickle");
    writeText(hook / "hook.json", R"({"format":"memscope-hook","version":1,"pid":77,
        "complete":true,"exit":"atexit","histories":[{"file":"history-0001.pickle"}],
        "phases":[{"kind":"step","step":0,"start_ns":1,"end_ns":2}]})");
    const RecordingFinish done = finishRecording(dir.string(), processRegistry());
    ASSERT_TRUE(done.errors.empty()) << done.errors.front();
    ASSERT_EQ(done.traces.size(), 1u);
    ASSERT_EQ(done.traces[0].kept.size(), 1u);
    EXPECT_TRUE(fs::exists(done.traces[0].kept[0]));
    EXPECT_TRUE(processRegistry().load(done.traces[0].kept[0]).ok());
    EXPECT_FALSE(fs::exists(hook));
}

TEST(RecordingMerge, CpuAllocationsBecomeHostEvents) {
    RecordingParts parts;
    parts.cpu = {{100, 0xa0, 4096}, {200, 0xb0, 512}, {300, 0xa0, -4096}};
    auto merged = mergeRecording(std::move(parts));
    ASSERT_TRUE(merged.ok());
    ASSERT_EQ(merged->events.size(), 3u);
    EXPECT_EQ(merged->events[2].kind, EventKind::FreeCompleted);
    EXPECT_EQ(merged->events[2].size, 4096u);
    EXPECT_EQ(merged->events[0].device, -1);
    auto tl = Timeline::build(*merged);
    ASSERT_TRUE(tl.ok());
    ASSERT_NE((*tl)->device(-1), nullptr);
    EXPECT_EQ((*tl)->device(-1)->peak.bytes, 4096 + 512);
}

// The CUPTI tracer's own takeover marker carries a count; the merge's
// carries its sentence. Both open as warnings that say what happened.
TEST(RecordingMerge, TakeoverMarkersOpenAsWarnings) {
    Trace t;
    Event m;
    m.kind = EventKind::Marker;
    t.events = {m, m};
    t.attributes = {{0, t.internString("cupti_taken_over"), t.internString("3")},
                    {1, t.internString("history_gap"), t.internString("entries were lost")}};
    auto opened = openTrace(std::move(t), "t");
    ASSERT_TRUE(opened.ok());
    ASSERT_EQ(opened->warnings.size(), 2u);
    EXPECT_NE(opened->warnings[0].message.find("3 CUDA allocation calls"), std::string::npos);
    EXPECT_EQ(opened->warnings[0].count, 3u);
    EXPECT_EQ(opened->warnings[1].message, "entries were lost");
}

// A dump cut short (the process killed while writing it) is left out with a
// warning; the phases still make a trace, and the hook folder stays for a look.
TEST(RecordingFolder, UnreadableDumpIsAWarningNotALostRecording) {
    const fs::path dir = freshDir("recording-folder-cut-dump");
    const fs::path hook = dir / kHookFolderName / "88";
    fs::create_directories(hook);
    writeText(hook / "history-0001.pickle", std::string("\x80\x04\x95", 3));
    writeText(hook / "hook.json", R"({"format":"memscope-hook","version":1,"pid":88,
        "complete":false,"exit":"running","histories":[{"file":"history-0001.pickle"}],
        "phases":[{"kind":"step","step":0,"start_ns":1,"end_ns":2}]})");
    const RecordingFinish done = finishRecording(dir.string(), processRegistry());
    ASSERT_TRUE(done.errors.empty()) << done.errors.front();
    ASSERT_EQ(done.traces.size(), 1u);
    EXPECT_TRUE(done.traces[0].parts_kept);
    EXPECT_TRUE(fs::exists(hook / "history-0001.pickle"));
    bool said = false;
    for (const LoadWarning& w : done.traces[0].warnings)
        said |= w.message.find("could not be read") != std::string::npos;
    EXPECT_TRUE(said);
    auto merged = importNativeTrace(done.traces[0].path);
    ASSERT_TRUE(merged.ok()) << merged.message();
    EXPECT_EQ(merged->phases.size(), 1u);
}

}  // namespace
}  // namespace memscope
