// Regression tests for issue 14: each hostile case ends with an error or with
// figures plus a warning, never a crash, a hang or a silent change.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "hostile_corpus.h"
#include "memscope/analysis/peak_explainer.h"
#include "memscope/analysis/summary.h"
#include "memscope/base/file_io.h"
#include "memscope/base/text_escape.h"
#include "memscope/format/native_format.h"
#include "memscope/inference/frames.h"
#include "memscope/plugins/kineto.h"
#include "memscope/plugins/memory_timeline.h"
#include "memscope/plugins/pytorch_snapshot.h"
#include "memscope/report/report_json.h"
#include "memscope/report/summary_report.h"
#include "memscope/timeline/timeline.h"
#include "memscope_test/wall_guard.h"

namespace fs = std::filesystem;
using namespace memscope;
using namespace memscope::hostile;

namespace {

struct Loaded {
    Result<Trace> trace = makeError("not loaded");
    std::vector<LoadWarning> warnings;
};

std::span<const std::byte> bytesOf(const std::string& s) {
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

Loaded snapshot(const std::string& bytes) {
    Loaded l;
    TaskContext ctx;
    ctx.warnings = &l.warnings;
    l.trace = pytorch_snapshot::importBytes(bytesOf(bytes), ctx, "t");
    return l;
}

Loaded kinetoText(const std::string& text) {
    Loaded l;
    TaskContext ctx;
    ctx.warnings = &l.warnings;
    l.trace = kineto::importBytes(bytesOf(text), ctx, "t");
    return l;
}

std::string tempDir() {
    const fs::path p = fs::temp_directory_path() / ("memscope-hostile-" + std::to_string(getpid()));
    fs::create_directories(p);
    return p.string();
}

}  // namespace

TEST(HostilePickle, MemoGapsAreRefused) {
    auto l = snapshot(pickleMemoGaps(200));
    ASSERT_FALSE(l.trace.ok());
    EXPECT_NE(l.trace.message().find("memo index"), std::string::npos) << l.trace.message();
}

TEST(HostilePickle, PoppedContainersAreFreed) {
    // 200,000 EMPTY_LIST + POP: with the containers kept, the live-container
    // limit (or memory) would be hit; freed, the file loads.
    auto l = snapshot(pickleEmptyListPop(5'000'000));
    ASSERT_TRUE(l.trace.ok()) << l.trace.message();
}

TEST(HostilePickle, SharedLongStringsAreInternedOnce) {
    const auto start = std::chrono::steady_clock::now();
    auto l = snapshot(pickleFramesSharingStrings(2000, 1 << 20));
    ASSERT_TRUE(l.trace.ok()) << l.trace.message();
    EXPECT_EQ(l.trace->frames().size(), 2000u);  // distinct lines
    EXPECT_LT(l.trace->strings.size(), 10u);     // two long strings, stored once
    EXPECT_LT(std::chrono::steady_clock::now() - start,
              memscope::test::wallGuard(std::chrono::seconds(20)));
}

// The frames' names are megabytes shared through the memo: cheap to load, but
// a label per site at the peak copied them all (24 GB and 55 s for the 20 MB
// corpus file). Shown text is cut; the trace keeps the full strings.
TEST(HostilePickle, SiteLabelsOfHugeFrameNamesAreCut) {
    auto l = snapshot(pickleFramesSharingStrings(2000, 1 << 20));
    ASSERT_TRUE(l.trace.ok()) << l.trace.message();
    const Trace& t = *l.trace;
    ASSERT_GT(t.frames().size(), 0u);
    EXPECT_GT(
        t.string(t.frame(FrameId(1)).function).size() + t.string(t.frame(FrameId(1)).file).size(),
        size_t(1) << 20);
    EXPECT_LT(frameText(t, FrameId(1)).size(), 600u);
    auto tl = Timeline::build(t);
    ASSERT_TRUE(tl.ok());
    size_t sites = 0;
    for (const DeviceTimeline& d : (*tl)->devices())
        for (const SiteAtPeak& site : sitesAtPeak(t, d, 5000)) {
            ++sites;
            EXPECT_LT(site.label.size(), 600u);
        }
    EXPECT_GT(sites, 0u);
}

TEST(HostilePickle, RenderedAttributesAreCutAndWarned) {
    auto l = snapshot(pickleSharedBigString(50, 1 << 20, false));
    ASSERT_TRUE(l.trace.ok()) << l.trace.message();
    size_t biggest = 0;
    for (const auto& a : l.trace->attributes)
        biggest = std::max(biggest, l.trace->string(a.value).size());
    EXPECT_LE(biggest, 4096u + 64);
    ASSERT_FALSE(l.warnings.empty());
    EXPECT_EQ(l.warnings[0].count, 50u);
}

TEST(HostilePickle, UserMetadataStringIsInternedOnce) {
    auto l = snapshot(pickleSharedBigString(50, 1 << 20, true));
    ASSERT_TRUE(l.trace.ok()) << l.trace.message();
    EXPECT_EQ(l.trace->attributes.size(), 50u);
    EXPECT_LT(l.trace->strings.size(), 10u);
}

TEST(HostilePickle, ManyTopLevelKeysAreLinear) {
    const auto start = std::chrono::steady_clock::now();
    auto l = snapshot(pickleManyKeys(100000));
    ASSERT_TRUE(l.trace.ok()) << l.trace.message();
    EXPECT_GE(l.trace->metadata.properties.size(), 100000u);
    EXPECT_LT(std::chrono::steady_clock::now() - start,
              memscope::test::wallGuard(std::chrono::seconds(10)));
}

TEST(HostileSnapshot, FloatTimeIsUsed) {
    auto l = snapshot(pickleEntries(6, EntryOddity::TimeFloat));
    ASSERT_TRUE(l.trace.ok()) << l.trace.message();
    EXPECT_EQ(l.trace->metadata.time_base, TimeBase::Nanoseconds);
    // A double holds µs since the epoch to about 0.25 µs.
    EXPECT_NEAR(double(l.trace->events[0].time), 1.7000000000000005e18, 1000.0);
    EXPECT_TRUE(l.warnings.empty());
}

TEST(HostileSnapshot, NanOrMissingTimeKeepsTheClockAndWarns) {
    for (EntryOddity o : {EntryOddity::TimeNaN, EntryOddity::TimeMissing}) {
        auto l = snapshot(pickleEntries(6, o));
        ASSERT_TRUE(l.trace.ok()) << l.trace.message();
        EXPECT_EQ(l.trace->metadata.time_base, TimeBase::Nanoseconds);
        ASSERT_EQ(l.trace->events.size(), 6u);
        EXPECT_EQ(l.trace->events[1].time, 1'700'000'000'000'010'000);
        ASSERT_EQ(l.warnings.size(), 1u);
        EXPECT_EQ(l.warnings[0].count, 1u);
        EXPECT_NE(l.warnings[0].message.find("entry 0"), std::string::npos)
            << l.warnings[0].message;
    }
}

TEST(HostileSnapshot, FloatAddressAndHugeSizeAreDroppedWithAWarning) {
    for (EntryOddity o : {EntryOddity::AddrFloat, EntryOddity::SizeHuge}) {
        auto l = snapshot(pickleEntries(6, o));
        ASSERT_TRUE(l.trace.ok()) << l.trace.message();
        EXPECT_EQ(l.trace->events.size(), 5u);
        ASSERT_EQ(l.warnings.size(), 1u);
        EXPECT_EQ(l.warnings[0].count, 1u);
        EXPECT_NE(l.warnings[0].message.find("first: entry 0"), std::string::npos);
    }
}

TEST(HostileSnapshot, DuplicateKeysLastWins) {
    auto l = snapshot(pickleDuplicateKeys());
    ASSERT_TRUE(l.trace.ok()) << l.trace.message();
    ASSERT_EQ(l.trace->events.size(), 2u);
    EXPECT_EQ(l.trace->events[0].size, 2u << 20);
}

TEST(HostileSnapshot, EntrySharedByTwoDevicesIsInBoth) {
    auto l = snapshot(pickleSharedEntry());
    ASSERT_TRUE(l.trace.ok()) << l.trace.message();
    ASSERT_EQ(l.trace->events.size(), 2u);
    EXPECT_EQ(l.trace->devices(), (std::vector<int16_t>{0, 1}));
}

TEST(HostileSnapshot, HugeSegmentAndBlockSizesAreDroppedWithWarnings) {
    auto l = snapshot(pickleHugeSegments());
    ASSERT_TRUE(l.trace.ok()) << l.trace.message();
    ASSERT_TRUE(l.trace->allocator_state.has_value());
    const AllocatorState& s = *l.trace->allocator_state;
    ASSERT_EQ(s.segments.size(), 1u);
    EXPECT_EQ(s.segments[0].total_size, 2u << 20);
    EXPECT_EQ(s.segments[0].block_count, 1u);
    ASSERT_EQ(s.blocks.size(), 1u);
    EXPECT_EQ(s.blocks[0].size, 1u << 20);
    for (const Block& b : s.blocks) EXPECT_LT(b.size, 1ull << 63);
    ASSERT_EQ(l.warnings.size(), 2u);
    for (const LoadWarning& w : l.warnings) {
        EXPECT_EQ(w.kind, WarningKind::SkippedRecords);
        EXPECT_EQ(w.count, 1u);
    }
    EXPECT_NE(l.warnings[0].message.find("first: segment 1"), std::string::npos)
        << l.warnings[0].message;
    EXPECT_NE(l.warnings[1].message.find("first: segment 0, block 1"), std::string::npos)
        << l.warnings[1].message;
}

TEST(HostileSnapshot, CancelDuringTheFinishingStageStopsIt) {
    const std::string bytes = pickleEntries(50000, EntryOddity::None);
    {
        auto l = snapshot(bytes);  // not cancelled: it loads
        ASSERT_TRUE(l.trace.ok()) << l.trace.message();
        EXPECT_EQ(l.trace->events.size(), 50000u);
    }
    // Cancelled once the whole pickle was read: only the finishing stage sees it.
    std::atomic<bool> cancel{false};
    bool parsed = false;
    TaskContext ctx;
    ctx.cancel = &cancel;
    ctx.progress = [&](uint64_t done, uint64_t total) {
        if (done == total) {
            parsed = true;
            cancel = true;
        }
    };
    auto r = pytorch_snapshot::importBytes(bytesOf(bytes), ctx, "t");
    EXPECT_TRUE(parsed);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.message(), "cancelled");
}

TEST(HostileTimeline, DistinctSizesFreedOldestFirstAreFast) {
    constexpr int kAllocations = 300000;
    const std::string text = timelineFreedOldestFirst(kAllocations);
    const auto start = std::chrono::steady_clock::now();
    auto r = memory_timeline::importBytes(bytesOf(text), {}, "t");
    const auto ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("memory timeline, %d distinct sizes freed oldest first: %.1f ms\n", kAllocations,
                ms);
    ASSERT_TRUE(r.ok()) << r.message();
    ASSERT_EQ(r->events.size(), size_t(2 * kAllocations));
    // Each free pairs with its own allocation (same size, same address).
    for (size_t i = 0; i < size_t(kAllocations); ++i) {
        const Event& a = r->events[i];
        const Event& f = r->events[size_t(kAllocations) + i];
        ASSERT_EQ(a.kind, EventKind::Alloc);
        ASSERT_EQ(f.kind, EventKind::FreeCompleted);
        ASSERT_EQ(f.address, a.address) << i;
        ASSERT_EQ(f.size, a.size) << i;
        ASSERT_EQ(a.size, 4096u + i);
    }
}

TEST(HostileKineto, InvalidTimeOrBytesAreDroppedWithAWarning) {
    for (auto [ts, bytes] :
         {std::pair{"", "1024"}, std::pair{"\"x\"", "1024"}, std::pair{"1700000000000000", "NaN"},
          std::pair{"1700000000000000", "Infinity"},
          std::pair{"1700000000000000", "99999999999999999999999"}}) {
        auto l = kinetoText(kinetoJson(ts, bytes));
        ASSERT_TRUE(l.trace.ok()) << l.trace.message();
        EXPECT_EQ(l.trace->events.size(), 3u) << ts << " " << bytes;
        ASSERT_EQ(l.warnings.size(), 1u) << ts << " " << bytes;
        EXPECT_EQ(l.warnings[0].count, 1u);
        for (const Event& e : l.trace->events) EXPECT_GT(e.time, 0);
    }
}

TEST(HostileKineto, DuplicatesResolveAsPython) {
    auto dup = kinetoText(kinetoDuplicateTraceEvents());
    ASSERT_TRUE(dup.trace.ok()) << dup.trace.message();
    EXPECT_EQ(dup.trace->events.size(), 4u);
    auto args = kinetoText(kinetoDuplicateArgs());
    ASSERT_TRUE(args.trace.ok()) << args.trace.message();
    ASSERT_EQ(args.trace->events.size(), 1u);
    EXPECT_EQ(args.trace->events[0].size, 2048u);
    EXPECT_EQ(args.trace->events[0].device, 1);
}

TEST(HostileJson, ManyKeysAreLinearAndCapped) {
    const auto start = std::chrono::steady_clock::now();
    auto l = kinetoText(jsonManyKeys(30000));
    ASSERT_TRUE(l.trace.ok()) << l.trace.message();
    EXPECT_LE(l.trace->metadata.properties.size(), 10001u);
    ASSERT_FALSE(l.warnings.empty());
    EXPECT_LT(std::chrono::steady_clock::now() - start,
              memscope::test::wallGuard(std::chrono::seconds(10)));
}

TEST(HostileJson, GiantStringIsRefusedNotMaterialized) {
    const std::string dir = tempDir();
    const std::string p = dir + "/big.json.gz";
    ASSERT_TRUE(writeGzipFill(p, "{\"traceEvents\": [], \"note\": \"", 'a', 96ull << 20, "\"}"));
    auto r = kineto::importFile(p);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.message().find("MiB"), std::string::npos) << r.message();
}

TEST(HostileJson, CancelStopsAWhitespaceRunQuickly) {
    const std::string dir = tempDir();
    const std::string p = dir + "/blank.json.gz";
    ASSERT_TRUE(writeGzipFill(p, "{\"traceEvents\": [", ' ', 48ull << 20, "]}"));
    std::atomic<bool> cancel{true};
    TaskContext ctx;
    ctx.cancel = &cancel;
    const auto start = std::chrono::steady_clock::now();
    auto r = kineto::importFile(p, ctx);
    const auto ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.message(), "cancelled");
    EXPECT_LT(ms, 100.0);
    std::printf("cancel latency, 48 MiB of blanks: %.2f ms\n", ms);
}

TEST(HostileNative, ExpansionIsBoundedByTheFileSize) {
    const std::string dir = tempDir();
    const std::string p = dir + "/bomb.memscope";
    ASSERT_TRUE(writeNativeRepeatedEvents(p, 1u << 20, 8));
    std::vector<LoadWarning> warnings;
    TaskContext ctx;
    ctx.warnings = &warnings;
    auto r = importNativeTrace(p, ctx);
    if (r.ok()) {
        EXPECT_LE(r->events.size(), std::max<uint64_t>(4u << 20, 16 * fs::file_size(p)));
        ASSERT_FALSE(warnings.empty());
    }
    for (uint8_t type : {uint8_t(1), uint8_t(8), uint8_t(9)}) {
        const std::string q = dir + "/table" + std::to_string(type) + ".memscope";
        ASSERT_TRUE(writeNativeTableBomb(q, type, 24u << 20, 2));
        warnings.clear();
        auto t = importNativeTrace(q, ctx);
        ASSERT_TRUE(t.ok()) << t.message();
        EXPECT_LE(t->annotations.size() + t->attributes.size() + t->metadata.properties.size(),
                  4u << 20);
        ASSERT_FALSE(warnings.empty()) << int(type);
    }
}

// Issue 64, class 4: a digest's device is checked before it is narrowed to
// an int16, not clamped or wrapped into another device (70000 was 4464).
TEST(HostileNative, DigestDeviceOutOfRangeIsRefusedNotNarrowed) {
    const std::string dir = tempDir();
    for (int64_t device : {int64_t(70000), int64_t(-70000), int64_t(INT64_MIN)}) {
        const std::string p = dir + "/device" + std::to_string(device) + ".memscope";
        ASSERT_TRUE(writeNativeDigestOfDevice(p, device));
        auto r = importNativeTrace(p);
        ASSERT_FALSE(r.ok()) << device;
        EXPECT_NE(r.message().find("damaged digest"), std::string::npos) << r.message();
        EXPECT_NE(r.message().find("device " + std::to_string(device)), std::string::npos)
            << r.message();
    }
    // The same file with a device in range reads to the digest's other
    // check: its zero peak is not what its two events hold.
    const std::string q = dir + "/device0.memscope";
    ASSERT_TRUE(writeNativeDigestOfDevice(q, 0));
    auto r = importNativeTrace(q);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.message().find("damaged digest"), std::string::npos) << r.message();
    EXPECT_EQ(r.message().find("device 0 is out of range"), std::string::npos) << r.message();
}

TEST(HostileFiles, FifoIsRefusedWithoutBlocking) {
    const std::string dir = tempDir();
    const std::string p = dir + "/pipe";
    ::unlink(p.c_str());
    ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
    auto r = requireRegularFile(p);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.message().find("pipe"), std::string::npos);
    auto opened = InputFile::open(p);  // O_NONBLOCK: returns at once
    ASSERT_FALSE(opened.ok());
    EXPECT_FALSE(kineto::importFile(p).ok());
    EXPECT_FALSE(pytorch_snapshot::importFile(p).ok());
}

TEST(HostileFiles, ShrinkingFileIsAnErrorNotSigbus) {
    const std::string dir = tempDir();
    const std::string p = dir + "/shrink.memscope";
    ASSERT_TRUE(writeNativeEvents(p, 200'000, 65536));
    auto f = InputFile::open(p);
    ASSERT_TRUE(f.ok());
    const auto bytes = (*f)->bytes();
    ASSERT_EQ(::truncate(p.c_str(), 100), 0);
    volatile unsigned sum = 0;
    for (size_t i = 0; i < bytes.size(); i += 4096) sum = sum + unsigned(bytes[i]);  // would SIGBUS
    EXPECT_TRUE((*f)->shrank());
    EXPECT_NE((*f)->shrankMessage().find("shrank"), std::string::npos);
    EXPECT_EQ((*f)->shrankMessage().find(p), std::string::npos);  // callers name the path
    // Cut once the reader is done: the error names the path exactly once.
    for (bool via_import : {false, true}) {
        ASSERT_TRUE(writeNativeEvents(p, 20'000, 4096));
        TaskContext cut_at_end;
        bool cut = false;
        cut_at_end.progress = [&](uint64_t done, uint64_t total) {
            if (done == total && !cut) cut = ::truncate(p.c_str(), 100) == 0;
        };
        auto r = via_import ? importNativeTrace(p, cut_at_end) : readNativeTrace(p, cut_at_end);
        ASSERT_TRUE(cut);
        ASSERT_FALSE(r.ok());
        const std::string& m = r.message();
        EXPECT_NE(m.find("shrank from"), std::string::npos) << m;
        const size_t first = m.find(p);
        if (via_import)
            EXPECT_EQ(first, std::string::npos) << m;  // the registry adds "PATH: "
        else
            EXPECT_TRUE(first == 0 && m.find(p, 1) == std::string::npos) << m;
    }
    // And while a load runs, at several delays: never a crash.
    for (int delay_us : {0, 500, 2000, 8000}) {
        ASSERT_TRUE(writeNativeEvents(p, 400'000, 65536));
        std::thread cut([&] {
            std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
            (void)::truncate(p.c_str(), 4096);
        });
        auto r = importNativeTrace(p);
        cut.join();
        if (!r.ok()) {
            EXPECT_FALSE(r.message().empty());
        }
    }
}

TEST(HostileFiles, FailedWriteKeepsTheOldFileAndLeavesNoPartial) {
    const std::string dir = tempDir() + "/replace";
    fs::create_directories(dir);
    const std::string out = dir + "/out.memscope";
    writeFile(out, "old");
    auto r = writeFileReplacing(out, [](const std::string& temp) -> Result<void> {
        writeFile(temp, "partial");
        return makeError("cannot write " + temp + ": No space left on device");
    });
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.message(), "cannot write " + out + ": No space left on device");
    std::ifstream in(out);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(text, "old");
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
    // A good write replaces it and keeps its permissions.
    ::chmod(out.c_str(), 0640);
    ASSERT_TRUE(writeNativeEvents(out, 10, 1024));
    struct stat st {};
    ::stat(out.c_str(), &st);
    EXPECT_EQ(st.st_mode & 0777, 0640u);
    EXPECT_TRUE(importNativeTrace(out).ok());
}

namespace {

// A file as summary reads it: imported, its timeline built, summarized.
struct Summarized {
    Result<Trace> trace = makeError("not loaded");
    std::vector<LoadWarning> warnings;
    std::shared_ptr<const Timeline> timeline;
    FileReport report;
};

std::unique_ptr<Summarized> summarizedFile(const std::string& path) {
    auto s = std::make_unique<Summarized>();
    TaskContext ctx;
    ctx.warnings = &s->warnings;
    s->trace = importNativeTrace(path, ctx);
    if (!s->trace) return s;
    auto tl = Timeline::build(*s->trace);
    if (!tl) return s;
    s->timeline = std::move(*tl);
    s->report = FileReport{path,
                           "native",
                           &*s->trace,
                           s->timeline.get(),
                           summarize(*s->trace, *s->timeline),
                           s->warnings,
                           s->trace->metadata.name};
    return s;
}

}  // namespace

// Issue 64, class 3: 300 modules naming one long path string. The modules
// chunk took the string as it was, and each view expanded it per module
// (4 GB for a 16 MiB path); it is now cut once, with a warning.
TEST(HostileStrings, ModulePathSharedByManyModulesIsCutOnce) {
    const std::string p = tempDir() + "/shared_module_path.memscope";
    ASSERT_TRUE(writeNativeSharedModulePath(p, 300, 4u << 20));
    EXPECT_LT(fs::file_size(p), 64u << 10);
    const auto start = std::chrono::steady_clock::now();
    auto s = summarizedFile(p);
    ASSERT_TRUE(s->trace.ok()) << s->trace.message();
    const Trace& t = *s->trace;
    ASSERT_EQ(t.modules.modules.size(), 300u);
    for (const Module& m : t.modules.modules)
        ASSERT_LE(t.string(m.path).size(), kMaxModulePathBytes);
    // The cut path is one interned string, not one per module.
    EXPECT_EQ(t.modules.modules.front().path, t.modules.modules.back().path);
    ASSERT_EQ(s->warnings.size(), 1u);
    EXPECT_NE(s->warnings[0].message.find("300 module names longer than 4096 bytes cut"),
              std::string::npos)
        << s->warnings[0].message;
    ASSERT_TRUE(s->timeline);
    const std::string text = summaryText(s->report);
    EXPECT_LT(text.size(), 64u << 10);
    const std::string json = summaryToJson(std::span<const FileReport>(&s->report, 1));
    EXPECT_LT(json.size(), 4u << 20);  // a cut path per row: 1.2 GB uncut
    EXPECT_LT(std::chrono::steady_clock::now() - start,
              memscope::test::wallGuard(std::chrono::seconds(10)));
}

TEST(HostileStrings, OneLongModulePathAndRootAreCut) {
    const std::string p = tempDir() + "/long_module_path.memscope";
    ASSERT_TRUE(writeNativeSharedModulePath(p, 1, 2u << 20));
    auto s = summarizedFile(p);
    ASSERT_TRUE(s->trace.ok()) << s->trace.message();
    const Trace& t = *s->trace;
    ASSERT_EQ(t.modules.modules.size(), 1u);
    const std::string_view path = t.string(t.modules.modules[0].path);
    EXPECT_LE(path.size(), kMaxModulePathBytes);
    EXPECT_EQ(path.substr(path.size() - 3), "\xE2\x80\xA6");  // …
    EXPECT_LE(modulePath(t, ModuleId(1)).size(), kMaxModulePathBytes);
    ASSERT_EQ(s->warnings.size(), 1u);
}

// Issue 64, class 7: a run name, module paths, a recorded range and a
// property carrying ESC]0;...BEL, ESC[2J, a newline, a C1 CSI and bytes that
// are not UTF-8: the text shows them escaped, one line each, and the JSON is
// valid UTF-8 with the controls escaped.
TEST(HostileStrings, ControlSequencesAndInvalidUtf8NeverReachTextOrJsonRaw) {
    const std::string p = tempDir() + "/hostile_strings.memscope";
    ASSERT_TRUE(writeNativeHostileStrings(p));
    auto s = summarizedFile(p);
    ASSERT_TRUE(s->trace.ok()) << s->trace.message();
    const std::string text = summaryText(s->report);
    EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
    EXPECT_EQ(text.find('\x07'), std::string::npos) << text;
    EXPECT_EQ(text.find("\xc2\x9b"), std::string::npos) << text;
    EXPECT_EQ(text.find("\nrank 9"), std::string::npos) << text;
    EXPECT_EQ(text.find("\n::error"), std::string::npos) << text;
    EXPECT_EQ(text.find("\nforged line"), std::string::npos) << text;
    EXPECT_TRUE(isValidUtf8(text)) << text;
    EXPECT_NE(text.find("run\\x1b]0;pwned\\x07\\x1b[2J\\x0arank 9"), std::string::npos) << text;
    EXPECT_NE(text.find("layer\\x1b[2J.0\\x0aforged line"), std::string::npos) << text;
    EXPECT_NE(text.find("steps 3-4\\x1b[2J\\x0a::error::forged"), std::string::npos) << text;
    const std::string json = summaryToJson(std::span<const FileReport>(&s->report, 1));
    EXPECT_TRUE(isValidUtf8(json));
    EXPECT_EQ(json.find('\x1b'), std::string::npos);
    EXPECT_NE(json.find("run\\u001B]0;pwned\\u0007\\u001B[2J\\nrank 9 peaks at 0 B\xEF\xBF\xBD"),
              std::string::npos)
        << json;
}
