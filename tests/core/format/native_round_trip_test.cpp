// The native format written and read back: every field, tiny chunks, named
// frees, the streaming writer's ids, large files decoded in parallel,
// progress and cancel, and the plugin found by probing.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "memscope/builtin_plugins.h"
#include "memscope/open/plugin_registry.h"
#include "native_test_util.h"

using namespace memscope;
using namespace memscope::native_test;

TEST(NativeFormat, FreesOfRecentAllocationsAreNamedNotDeltaCoded) {
    // The writer's side of flag 2. Two traces of the same allocations, about
    // 64 live at a time: in one each free takes one of the 4 newest (a
    // temporary), in the other the oldest, which no 16-allocation window
    // reaches. Both round-trip; the named frees make the first far smaller.
    const auto build = [](bool newest) {
        Trace t;
        std::mt19937_64 rng(7);
        std::vector<std::pair<uint64_t, uint64_t>> live;
        int64_t time = 0;
        uint64_t next = 0x7f0000000000ull;
        for (int i = 0; i < 60000; ++i) {
            if (live.size() < 64 || rng() % 2) {
                const uint64_t size = 512 * (1 + rng() % 4096);
                live.emplace_back(next, size);
                t.events.push_back(
                    makeEvent(time += 1000, EventKind::Alloc, next, size, Category::Temporary));
                next += size + 512 * (rng() % 64);
            } else {
                const size_t k = newest ? live.size() - 1 - rng() % 4 : 0;
                const auto [address, size] = live[k];
                live.erase(live.begin() + std::ptrdiff_t(k));
                for (EventKind kind : {EventKind::FreeRequested, EventKind::FreeCompleted})
                    t.events.push_back(
                        makeEvent(time += 1000, kind, address, size, Category::Temporary));
            }
        }
        return t;
    };
    TempDir dir;
    uintmax_t newest_bytes = 0, oldest_bytes = 0;
    for (const bool newest : {true, false}) {
        const Trace original = build(newest);
        const std::string path = dir.file(newest ? "newest" : "oldest");
        ASSERT_TRUE(writeNativeTrace(original, path));
        auto loaded = readNativeTrace(path);
        ASSERT_TRUE(loaded) << loaded.message();
        expectSameEvents(original.events, loaded->events, original.events.size());
        (newest ? newest_bytes : oldest_bytes) = fs::file_size(path);
    }
    EXPECT_LT(double(newest_bytes), 0.85 * double(oldest_bytes))
        << newest_bytes << " vs " << oldest_bytes;
}

TEST(NativeFormat, RoundTripsEveryField) {
    TempDir dir;
    const Trace original = sampleTrace();
    const std::string path = dir.file("t.memscope");
    ASSERT_TRUE(writeNativeTrace(original, path));
    NativeReadReport report;
    auto loaded = readNativeTrace(path, {}, &report);
    ASSERT_TRUE(loaded) << loaded.message();
    EXPECT_EQ(report.problem, "");
    EXPECT_EQ(report.bytes_lost, 0u);
    EXPECT_EQ(report.bytes_total, fs::file_size(path));
    EXPECT_GT(report.chunks_read, 5u);
    expectSameTrace(original, *loaded);
}

// A digest's section (memscope/model/digest.h) comes back field by field,
// its optional values absent and present, and its inferred categories open
// as inferred again.
TEST(NativeFormat, RoundTripsADigestSection) {
    TempDir dir;
    Trace original = sampleTrace(40);
    // A digest's events are the allocations alive at its peak, on its device
    // at its time, and together they are the peak (digestContradiction).
    for (Event& e : original.events) {
        e.kind = EventKind::Alloc;
        e.device = 3;
        e.time = 123'456;
        e.size = 7'000'000'000 / original.events.size();
    }
    original.events[0].size += 7'000'000'000 % original.events.size();
    DigestSection& d = original.digest.emplace();
    d.source = "/runs/rank3.memscope";
    d.device = 3;
    d.start = -5;
    d.end = 1'000'000'000'000;
    d.peak_bytes = 7'000'000'000;
    d.peak_time = 123'456;
    d.peak_phase = TrainingPhase::Backward;
    d.peak_step = 41;
    d.peak_reserved_bytes = 8'000'000'000ull;
    d.peaks_by_phase[size_t(index(TrainingPhase::Forward))] = 6'000'000'000;
    d.peaks_by_phase[size_t(index(TrainingPhase::Backward))] = 7'000'000'000;
    d.steps = 5000;
    d.step_starts = {-1, 0, 100, 250};
    d.envelope.assign(2048, 0);
    d.envelope[7] = 7'000'000'000;
    for (uint64_t e = 0; e < original.events.size(); ++e)
        if (original.events[e].category == Category::Unknown) {
            d.inferred.push_back({e, Category::Activation, CategoryRule::AliveThroughout});
            break;
        }
    ASSERT_FALSE(d.inferred.empty());
    d.allocations = 12;
    d.summed_allocations = 3;
    ASSERT_TRUE(writeNativeTrace(original, dir.file("d.memscope")));
    auto loaded = readNativeTrace(dir.file("d.memscope"));
    ASSERT_TRUE(loaded) << loaded.message();
    expectSameTrace(original, *loaded);

    Trace& t = *loaded;
    applyDigestInferences(t);
    const uint64_t e = d.inferred[0].event;
    EXPECT_EQ(t.categoryOf(e), Category::Activation);
    EXPECT_TRUE(t.categoryInferred(e));

    // A digest of a newer version opens as a digest of that version, with
    // none of its fields read (their layout is a later memscope's); reading
    // its figures is refused then (rankDigestOf).
    Trace newer = original;
    newer.digest->version = kDigestVersion + 1;
    ASSERT_TRUE(writeNativeTrace(newer, dir.file("newer.memscope")));
    NativeReadReport report;
    auto read = readNativeTrace(dir.file("newer.memscope"), {}, &report);
    ASSERT_TRUE(read) << read.message();
    EXPECT_EQ(report.problem, "");
    ASSERT_TRUE(read->digest.has_value());
    EXPECT_EQ(read->digest->version, kDigestVersion + 1);
    EXPECT_EQ(read->digest->peak_bytes, 0);
    EXPECT_TRUE(read->digest->inferred.empty());

    // A rule a later memscope appended keeps its category, as weak evidence.
    Trace later = original;
    later.digest->inferred[0].rule = CategoryRule(kCategoryRuleCount + 3);
    ASSERT_TRUE(writeNativeTrace(later, dir.file("later.memscope")));
    auto with_later = readNativeTrace(dir.file("later.memscope"));
    ASSERT_TRUE(with_later) << with_later.message();
    ASSERT_EQ(with_later->digest->inferred.size(), 1u);
    EXPECT_EQ(with_later->digest->inferred[0].category, Category::Activation);
    EXPECT_EQ(with_later->digest->inferred[0].rule, CategoryRule::Weak);
}

TEST(NativeFormat, RoundTripsWithTinyChunksAndEmptyTrace) {
    TempDir dir;
    const Trace original = sampleTrace(1000);
    NativeWriterOptions options;
    options.events_per_chunk = 7;
    ASSERT_TRUE(writeNativeTrace(original, dir.file("a"), options));
    auto loaded = readNativeTrace(dir.file("a"));
    ASSERT_TRUE(loaded) << loaded.message();
    expectSameTrace(original, *loaded);

    Trace empty;
    ASSERT_TRUE(writeNativeTrace(empty, dir.file("b")));
    auto loaded_empty = readNativeTrace(dir.file("b"));
    ASSERT_TRUE(loaded_empty) << loaded_empty.message();
    expectSameTrace(empty, *loaded_empty);
}

TEST(NativeFormat, StreamingWriterIdsAreTheReadersIds) {
    TempDir dir;
    TraceMetadata meta;
    meta.name = "stream";
    meta.time_base = TimeBase::EventIndex;
    auto created = NativeTraceWriter::create(dir.file("s"), meta, {.events_per_chunk = 5});
    ASSERT_TRUE(created) << created.message();
    NativeTraceWriter& w = **created;

    EXPECT_EQ(w.internString(""), StringId(0));
    const StringId fn = w.internString("matmul");
    const StringId file = w.internString("model.py");
    EXPECT_EQ(w.internString("matmul"), fn);
    const FrameId f1 = w.internFrame({fn, file, 3});
    const FrameId f2 = w.internFrame({file, fn, 4});
    EXPECT_EQ(f1, FrameId(1));
    EXPECT_EQ(w.internFrame({fn, file, 3}), f1);
    const std::vector<FrameId> st{f2, f1};
    const StackId stack = w.internStack(st);
    EXPECT_EQ(w.internStack({}), StackId(0));
    EXPECT_EQ(w.internStack(st), stack);
    const uint32_t stream = w.internStream(99);
    EXPECT_EQ(w.internStream(0), 0u);
    Phase p;
    p.name = w.internString("step 1");
    p.start = 10;
    p.end = 10;
    const PhaseId phase = w.addPhase(p);
    EXPECT_EQ(phase, PhaseId(1));
    w.setProperty("policy", "full");
    w.setProperty("policy", "selective");  // last value wins
    for (int i = 0; i < 23; ++i) {
        const uint64_t index =
            w.append(makeEvent(i, EventKind::Alloc, 4096 * i, 512, Category::Activation)
                         .stack(stack)
                         .phase(phase)
                         .stream(stream));
        EXPECT_EQ(index, uint64_t(i));
        if (i == 11) {
            ASSERT_TRUE(w.flush());
        }
    }
    w.endPhase(phase, 22);
    w.addAttribute(20, w.internString("k"), w.internString("v"));
    w.addAttribute(3, w.internString("k"), w.internString("earlier"));
    w.addAttribute(1000, w.internString("k"), w.internString("no such event"));  // dropped
    AllocatorState first;
    first.segments.push_back(Segment{});
    w.setAllocatorState(first);
    w.setAllocatorState(AllocatorState{});  // the last one wins
    EXPECT_EQ(w.eventCount(), 23u);
    ASSERT_TRUE(w.close());
    ASSERT_TRUE(w.close());  // idempotent

    auto t = readNativeTrace(dir.file("s"));
    ASSERT_TRUE(t) << t.message();
    EXPECT_EQ(t->metadata.name, "stream");
    EXPECT_EQ(t->metadata.time_base, TimeBase::EventIndex);
    ASSERT_NE(t->metadata.property("policy"), nullptr);
    EXPECT_EQ(*t->metadata.property("policy"), "selective");
    EXPECT_EQ(t->string(fn), "matmul");
    EXPECT_EQ(t->frame(f2).function, file);
    ASSERT_EQ(t->stack(stack).size(), 2u);
    EXPECT_EQ(t->stack(stack)[0], f2);
    EXPECT_EQ(t->streams[stream], 99u);
    ASSERT_NE(t->phase(phase), nullptr);
    EXPECT_EQ(t->phase(phase)->end, 22);
    ASSERT_EQ(t->events.size(), 23u);
    EXPECT_EQ(t->events[22].address, 4096u * 22);
    EXPECT_EQ(t->events[22].stack, stack);
    ASSERT_EQ(t->attributes.size(), 2u);
    EXPECT_EQ(t->attributes[0].event, 3u);  // sorted by event
    EXPECT_EQ(t->string(t->attributes[1].value), "v");
    ASSERT_TRUE(t->allocator_state.has_value());
    EXPECT_TRUE(t->allocator_state->segments.empty());
}

TEST(NativeFormat, WriterStoresUnknownIdsAsNone) {
    TempDir dir;
    auto w = NativeTraceWriter::create(dir.file("u"), {});
    ASSERT_TRUE(w);
    (*w)->append(makeEvent(1, static_cast<EventKind>(200), 1, 1, static_cast<Category>(99))
                     .stack(StackId(77))
                     .phase(PhaseId(9))
                     .stream(5));
    ASSERT_TRUE((*w)->close());
    auto t = readNativeTrace(dir.file("u"));
    ASSERT_TRUE(t) << t.message();
    ASSERT_EQ(t->events.size(), 1u);
    EXPECT_EQ(t->events[0].stack, StackId());
    EXPECT_EQ(t->events[0].phase, PhaseId());
    EXPECT_EQ(t->events[0].stream, 0u);
    EXPECT_EQ(t->events[0].kind, EventKind::Marker);
    EXPECT_EQ(t->events[0].category, Category::Unknown);
}

TEST(NativeFormat, LargeFilesDecodeInParallelAndStillStopAtABadChunk) {
    // Enough events for the parallel path (docs/FORMAT.md, "Reading").
    Trace big;
    const StackId stack = big.internStack(std::vector<FrameId>{
        big.internFrame({big.internString("f"), big.internString("x.py"), 1})});
    for (uint64_t i = 0; i < 300000; ++i)
        big.events.push_back(
            makeEvent(int64_t(i) * 1000, i % 3 ? EventKind::Alloc : EventKind::FreeCompleted,
                      0x7f0000000000ull + (i % 977) * 512, 512 * (1 + i % 5), Category::Activation)
                .stack(i % 2 ? stack : StackId())
                .device(int16_t(i % 2)));
    big.attributes.push_back({299999, big.internString("k"), big.internString("v")});
    TempDir dir;
    ASSERT_TRUE(writeNativeTrace(big, dir.file("big"), {.events_per_chunk = 4096}));
    Bytes file = readFile(dir.file("big"));
    NativeReadReport report;
    auto whole = readBytes(file, file.size(), &report);
    ASSERT_TRUE(whole) << whole.message();
    EXPECT_EQ(report.problem, "");
    expectSameTrace(big, *whole);

    // Chunk 7 of the events damaged (its checksum no longer matches): the
    // workers check events checksums, and the read still stops exactly there.
    {
        Bytes damaged = file;
        size_t nth = 0;
        for (const ChunkInfo& c : chunksOf(damaged)) {
            if (c.type != 10 || ++nth != 7) continue;
            damaged[c.offset + 20 + 5] ^= std::byte(0x5a);
            auto cut = readBytes(damaged, damaged.size(), &report);
            ASSERT_TRUE(cut) << cut.message();
            EXPECT_EQ(cut->events.size(), 6u * 4096);
            EXPECT_NE(report.problem.find("checksum mismatch"), std::string::npos)
                << report.problem;
            EXPECT_EQ(report.bytes_lost, damaged.size() - c.offset);
            EXPECT_TRUE(cut->attributes.empty());
            expectSameEvents(big.events, cut->events, cut->events.size());
            break;
        }
        EXPECT_EQ(nth, 7u);
    }

    // Chunk 10 of the events: valid checksum, undecodable payload.
    size_t seen = 0;
    for (const ChunkInfo& c : chunksOf(file)) {
        if (c.type != 10 || ++seen != 10) continue;
        const uint32_t stored = getLE32(file, c.offset + 8);
        for (size_t k = 0; k < stored; ++k) file[c.offset + 20 + k] = std::byte(0xee);
        file[c.offset + 1] = std::byte(0);     // not compressed
        putLE32(file, c.offset + 12, stored);  // raw size = stored size
        uint32_t crc = referenceCrc32c(file.data() + c.offset, 16);
        crc = referenceCrc32c(file.data() + c.offset + 20, stored, crc);
        putLE32(file, c.offset + 16, crc);
        auto cut = readBytes(file, file.size(), &report);
        ASSERT_TRUE(cut) << cut.message();
        EXPECT_EQ(cut->events.size(), 9u * 4096);
        EXPECT_NE(report.problem.find("events"), std::string::npos) << report.problem;
        EXPECT_EQ(report.bytes_lost, file.size() - c.offset);
        EXPECT_TRUE(cut->attributes.empty());
        expectSameEvents(big.events, cut->events, cut->events.size());
        break;
    }
    EXPECT_EQ(seen, 10u);
}

// The parallel read decodes events chunks while the scan still applies the
// table chunks after them: every events chunk must be decoded against the
// tables before it (stacks and phases added mid-file), and a damaged table
// chunk must still end the read exactly there, whatever the decoders had
// already done with the events chunks beyond it.
TEST(NativeFormat, LargeFilesWithTablesBetweenEventsChunksReadAsWritten) {
    TempDir dir;
    const std::string path = dir.file("streamed");
    Trace expected;
    {
        auto writer = NativeTraceWriter::create(path, {}, {.events_per_chunk = 4096});
        ASSERT_TRUE(writer) << writer.message();
        NativeTraceWriter& w = **writer;
        StackId stack;
        PhaseId phase;
        for (uint64_t i = 0; i < 400000; ++i) {
            if (i % 40000 == 0) {
                // New stacks and a phase, then events that use them at once.
                const std::string n = std::to_string(i);
                const FrameId frame =
                    w.internFrame({w.internString("f" + n), w.internString("x.py"), 1});
                stack = w.internStack(std::vector<FrameId>{frame});
                expected.internStack(std::vector<FrameId>{expected.internFrame(
                    {expected.internString("f" + n), expected.internString("x.py"), 1})});
                Phase p;
                p.name = w.internString("step " + n);
                p.start = int64_t(i) * 1000;
                p.end = p.start + 1;
                phase = w.addPhase(p);
                ASSERT_TRUE(w.flush());
            }
            const Event e =
                makeEvent(int64_t(i) * 1000, i % 2 ? EventKind::FreeCompleted : EventKind::Alloc,
                          0x7f0000000000ull + (i / 2 % 977) * 512, 512, Category::Activation)
                    .stack(stack)
                    .phase(phase);
            w.append(e);
            expected.events.push_back(e);
        }
        ASSERT_TRUE(w.close());
    }
    Bytes file = readFile(path);
    NativeReadReport report;
    auto whole = readBytes(file, file.size(), &report);
    ASSERT_TRUE(whole) << whole.message();
    EXPECT_EQ(report.problem, "");
    ASSERT_EQ(whole->events.size(), expected.events.size());
    expectSameEvents(expected.events, whole->events, expected.events.size());
    EXPECT_EQ(whole->phases.size(), 10u);
    EXPECT_EQ(whole->stackCount(), expected.stackCount());

    // The fifth stacks chunk damaged: the read keeps the events of the
    // chunks before it (about four rounds of 40 000) and nothing after.
    size_t nth = 0;
    uint64_t events_before = 0;
    for (const ChunkInfo& c : chunksOf(file)) {
        if (c.type == 10) events_before += c.count;
        if (c.type != 4 || ++nth != 5) continue;
        file[c.offset + 20] ^= std::byte(0x33);
        auto cut = readBytes(file, file.size(), &report);
        ASSERT_TRUE(cut) << cut.message();
        EXPECT_NE(report.problem.find("checksum mismatch"), std::string::npos) << report.problem;
        EXPECT_EQ(report.bytes_lost, file.size() - c.offset);
        EXPECT_GT(events_before, 150000u);
        ASSERT_EQ(cut->events.size(), events_before);
        expectSameEvents(expected.events, cut->events, cut->events.size());
        EXPECT_EQ(cut->phases.size(), 4u);
        break;
    }
    EXPECT_EQ(nth, 5u);
}

TEST(NativeFormat, ProgressAndCancel) {
    TempDir dir;
    ASSERT_TRUE(writeNativeTrace(sampleTrace(), dir.file("c")));
    std::atomic<bool> cancel{true};
    TaskContext ctx;
    ctx.cancel = &cancel;
    auto t = readNativeTrace(dir.file("c"), ctx);
    ASSERT_FALSE(t);
    EXPECT_NE(t.message().find("cancelled"), std::string::npos);

    uint64_t last_done = 0, last_total = 0;
    TaskContext progress;
    progress.progress = [&](uint64_t done, uint64_t total) {
        EXPECT_GE(done, last_done);
        last_done = done;
        last_total = total;
    };
    ASSERT_TRUE(readNativeTrace(dir.file("c"), progress));
    EXPECT_EQ(last_total, fs::file_size(dir.file("c")));
    EXPECT_EQ(last_done, last_total);
}

// The parallel path constructs the events array on a second thread while it
// scans, then decodes on both: a cancel at any moment (during the scan, while
// the array is built, while chunks decode) ends the read as cancelled or lets
// it finish whole, never half, and never leaves a thread waiting.
TEST(NativeFormat, LargeFilesCancelAtAnyMoment) {
    Trace big;
    for (uint64_t i = 0; i < 600000; ++i)
        big.events.push_back(
            makeEvent(int64_t(i) * 1000, i % 2 ? EventKind::FreeCompleted : EventKind::Alloc,
                      0x7f0000000000ull + (i / 2 % 977) * 512, 512, Category::Activation));
    TempDir dir;
    ASSERT_TRUE(writeNativeTrace(big, dir.file("big"), {.events_per_chunk = 4096}));
    // From another thread, at moments spread over a read (about 15 ms here).
    int cancelled = 0, whole = 0;
    for (int delay_us = 0; delay_us < 40000; delay_us += 2000) {
        std::atomic<bool> cancel{false};
        TaskContext ctx;
        ctx.cancel = &cancel;
        std::thread canceller([&] {
            std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
            cancel = true;
        });
        auto t = readNativeTrace(dir.file("big"), ctx);
        canceller.join();
        if (t) {
            ++whole;
            ASSERT_EQ(t->events.size(), big.events.size()) << "after " << delay_us << " us";
            expectSameEvents(big.events, t->events, big.events.size());
        } else {
            ++cancelled;
            EXPECT_NE(t.message().find("cancelled"), std::string::npos) << t.message();
        }
    }
    EXPECT_GT(cancelled, 0);
}

TEST(NativePlugin, FoundByProbingAndReportsLoss) {
    TempDir dir;
    PluginRegistry registry;
    registerBuiltinPlugins(registry);
    ASSERT_NE(registry.importer("native"), nullptr);
    ASSERT_NE(registry.exporter("native"), nullptr);

    const Trace original = sampleTrace(100);
    auto exporter = registry.exporterForPath(dir.file("out.memscope"));
    ASSERT_TRUE(exporter) << exporter.message();
    EXPECT_EQ((*exporter)->id(), "native");
    // Any name: the magic decides.
    const std::string path = dir.file("no_extension.bin");
    ASSERT_TRUE((*exporter)->exportTrace(original, path, {}));

    auto importer = registry.importerFor(path);
    ASSERT_TRUE(importer) << importer.message();
    EXPECT_EQ((*importer)->id(), "native");
    std::vector<LoadWarning> warnings;
    TaskContext ctx;
    ctx.warnings = &warnings;
    auto loaded = registry.load(path, ctx);
    ASSERT_TRUE(loaded) << loaded.message();
    expectSameTrace(original, *loaded);
    EXPECT_TRUE(warnings.empty());

    // A damaged tail loads, and says so as a typed warning beside the trace,
    // never as text inside it (a converter would write that out).
    Bytes cut = readFile(path);
    cut.resize(cut.size() - 3);
    writeFile(dir.file("cut.memscope"), cut);
    auto partial = registry.load(dir.file("cut.memscope"), ctx);
    ASSERT_TRUE(partial) << partial.message();
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_EQ(warnings[0].kind, WarningKind::DamagedTail);
    EXPECT_NE(warnings[0].message.find("truncated"), std::string::npos) << warnings[0].message;
    EXPECT_GT(warnings[0].count, 0u);
    EXPECT_EQ(partial->metadata.properties, original.metadata.properties);

    Bytes bad = fileHeader(7, 0);
    writeFile(dir.file("v7.memscope"), bad);
    auto refused = registry.load(dir.file("v7.memscope"));
    ASSERT_FALSE(refused);
    // Named once, by the registry.
    const std::string name = dir.file("v7.memscope");
    EXPECT_EQ(refused.message().find(name), 0u) << refused.message();
    EXPECT_EQ(refused.message().find(name, 1), std::string::npos) << refused.message();
}
