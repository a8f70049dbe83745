// The native format's bytes as docs/FORMAT.md describes them: the reference
// checksum and varints, hand-written files and chunks (events in both codings,
// modules) decoded field by field, and values the document forbids.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "native_test_util.h"

using namespace memscope;
using namespace memscope::native_test;

TEST(NativeFormat, ReferenceChecksumAndVarintsMatchTheDocument) {
    EXPECT_EQ(referenceCrc32c("123456789", 9), 0xE3069283u);
    EXPECT_EQ(pv(0), (std::vector<uint8_t>{0x01}));
    EXPECT_EQ(pv(127), (std::vector<uint8_t>{0xff}));
    EXPECT_EQ(pv(300), (std::vector<uint8_t>{0xb2, 0x04}));
    EXPECT_EQ(pv(~0ull), (std::vector<uint8_t>{0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
}

TEST(NativeFormat, EveryChunkChecksumIsTheDocumentedCrcWhateverItsLength) {
    // The writer's and the reader's CRC are one function, so a round trip
    // cannot catch it wrong: the bitwise reference checks what it wrote.
    // Payloads of many lengths, most far longer than the 12 KiB the
    // interleaved CRC works in, each ending anywhere within its 8-byte words.
    Trace t;
    std::mt19937_64 rng(11);  // noise: payloads about as long as the events' bytes
    int64_t time = 0;
    for (uint64_t i = 0; i < 120000; ++i)
        t.events.push_back(makeEvent(time += int64_t(rng() % 1000000), EventKind::Alloc,
                                     0x7f0000000000ull + rng() % (1ull << 36), 1 + rng() % 100000,
                                     Category::Activation));
    TempDir dir;
    std::vector<size_t> lengths;
    for (uint32_t per_chunk : {1000u, 1777u, 9001u, 60013u}) {
        ASSERT_TRUE(writeNativeTrace(t, dir.file("c"), {.events_per_chunk = per_chunk}));
        const Bytes file = readFile(dir.file("c"));
        for (const ChunkInfo& c : chunksOf(file)) {
            const uint32_t stored = getLE32(file, c.offset + 8);
            uint32_t crc = referenceCrc32c(file.data() + c.offset, 16);
            crc = referenceCrc32c(file.data() + c.offset + 20, stored, crc);
            EXPECT_EQ(getLE32(file, c.offset + 16), crc) << "chunk at " << c.offset;
            lengths.push_back(stored);
        }
    }
    EXPECT_GT(*std::max_element(lengths.begin(), lengths.end()), 3u * 12288);
    std::set<size_t> tails;
    for (size_t n : lengths) tails.insert(n % 8);
    EXPECT_GE(tails.size(), 6u);
}

TEST(NativeFormat, HandWrittenFileDecodesAsDocumented) {
    // An events chunk written from docs/FORMAT.md alone: pins the encoding, so
    // that files written today still load after the encoder changes.
    const auto column = [](std::initializer_list<std::vector<uint8_t>> values) {
        const std::vector<uint8_t> bytes = cat(values);
        return cat({pv(bytes.size()), bytes});
    };
    const std::vector<uint8_t> payload = cat({
        pv(0),
        pv(4),
        pv(1000),  // first index, count, time unit
        pv(2),     // palette: alloc/activation/device 1, free_completed/activation/device 1
        {0, 4},
        pv(2),
        pv(0),
        {2, 4},
        pv(2),
        pv(0),
        column({pv(0), pv(0), pv(1), pv(0)}),            // tag
        column({pv(10), pv(4), pv(1), pv(0)}),           // time: +5, +2, -1, +0 units
        column({pv(32), pv(5), pv(32), pv(1), pv(1)}),   // address: +8*512, +1, +8*512, escape -1
        column({pv(9), pv(4002), pv(9), pv(3), pv(7)}),  // size: 2*512, 1000, 2*512, escape 7
        column({pv(0), pv(0), pv(0), pv(0)}),            // stack: none
        column({pv(0), pv(0), pv(0), pv(0)}),            // phase: none
    });
    Bytes file = fileHeader();
    appendChunk(file, 10, 4, payload);
    NativeReadReport report;
    auto t = readBytes(file, file.size(), &report);
    ASSERT_TRUE(t) << t.message();
    EXPECT_EQ(report.problem, "");
    ASSERT_EQ(t->events.size(), 4u);
    const Event want[] = {
        makeEvent(5000, EventKind::Alloc, 0x1000, 1024, Category::Activation).device(1),
        makeEvent(7000, EventKind::Alloc, 0x1001, 1000, Category::Activation).device(1),
        makeEvent(6000, EventKind::FreeCompleted, 0x1000, 1024, Category::Activation).device(1),
        makeEvent(6000, EventKind::Alloc, 0x1000, 7, Category::Activation).device(1),
    };
    expectSameEvents(std::vector<Event>(std::begin(want), std::end(want)), t->events, 4);
}

TEST(NativeFormat, HandWrittenRecentAllocsChunkDecodesAsDocumented) {
    // Flag 2 (1.4): a free names one of its device's latest allocations, and
    // takes its size as the previous size.
    const auto column = [](std::initializer_list<std::vector<uint8_t>> values) {
        const std::vector<uint8_t> bytes = cat(values);
        return cat({pv(bytes.size()), bytes});
    };
    const auto payload = [&](uint64_t second_free_code) {
        return cat({
            cat({pv(0), pv(6), pv(1)}),  // first index, count, time unit
            // palette: alloc, free_requested, free_completed; parameters on device 0
            cat({pv(3), {0, 0}, pv(0), pv(0), {1, 0}, pv(0), pv(0), {2, 0}, pv(0), pv(0)}),
            column({pv(0), pv(0), pv(0), pv(1), pv(1), pv(2)}),  // tag
            column({pv(2), pv(2), pv(2), pv(2), pv(2), pv(2)}),  // time: +1 each
            // address: +16*512, +32*512, +8*512, then the newest alloc (k 0),
            // the second newest (k 1 or as given), and a repeat of the free (delta 0)
            column({pv(16 << 3), pv(32 << 3), pv(8 << 3), pv(0 << 2 | 2), pv(second_free_code),
                    pv(0)}),
            // size: 2*512, 3*512, 1*512, then the named allocation's size, 100,
            // and the previous size
            column(
                {pv(2 << 2 | 1), pv(3 << 2 | 1), pv(1 << 2 | 1), pv(0), pv(100 << 2 | 2), pv(0)}),
            column({pv(0), pv(0), pv(0), pv(0), pv(0), pv(0)}),  // stack
            column({pv(0), pv(0), pv(0), pv(0), pv(0), pv(0)}),  // phase
        });
    };
    const uint64_t a = 16 * 512, b = a + 32 * 512, c = b + 8 * 512;
    Bytes file = fileHeader(1, 4);
    appendChunk(file, 10, 6, payload(1 << 2 | 2), /*flags=*/2);
    NativeReadReport report;
    auto t = readBytes(file, file.size(), &report);
    ASSERT_TRUE(t) << t.message();
    EXPECT_EQ(report.problem, "");
    const Event want[] = {
        makeEvent(1, EventKind::Alloc, a, 1024, Category::Parameter),
        makeEvent(2, EventKind::Alloc, b, 1536, Category::Parameter),
        makeEvent(3, EventKind::Alloc, c, 512, Category::Parameter),
        makeEvent(4, EventKind::FreeRequested, c, 512, Category::Parameter),
        makeEvent(5, EventKind::FreeRequested, b, 100, Category::Parameter),
        makeEvent(6, EventKind::FreeCompleted, b, 100, Category::Parameter),
    };
    ASSERT_EQ(t->events.size(), 6u);
    expectSameEvents(std::vector<Event>(std::begin(want), std::end(want)), t->events, 6);

    // Without the flag the same bytes are deltas: 2 is +1*512, no reference.
    Bytes plain = fileHeader(1, 4);
    appendChunk(plain, 10, 6, payload(1 << 2 | 2));
    auto deltas = readBytes(plain, plain.size(), &report);
    ASSERT_TRUE(deltas) << deltas.message();
    ASSERT_EQ(deltas->events.size(), 6u);
    EXPECT_NE(deltas->events[3].address, c);

    // A reference past the window, a reserved mode, or the flag on a table
    // chunk stop the read at that chunk.
    for (const uint64_t bad : {uint64_t{16} << 2 | 2, uint64_t{3}}) {
        Bytes broken = fileHeader(1, 4);
        appendChunk(broken, 10, 6, payload(bad), /*flags=*/2);
        auto r = readBytes(broken, broken.size(), &report);
        ASSERT_TRUE(r) << r.message();
        EXPECT_TRUE(r->events.empty());
        EXPECT_NE(report.problem.find("bad address code"), std::string::npos) << report.problem;
    }
    Bytes flagged = fileHeader(1, 4);
    appendChunk(flagged, 2, 1, cat({pv(1), {'x'}}), /*flags=*/2);
    auto r = readBytes(flagged, flagged.size(), &report);
    ASSERT_TRUE(r) << r.message();
    EXPECT_NE(report.problem.find("unknown chunk flags 2"), std::string::npos) << report.problem;
}

TEST(NativeFormat, ModuleChunksDecodeAsDocumentedAndBadOnesStopTheRead) {
    // Strings "", "h.0", "GPT"; modules: root (""), then "h.0" under it; two scopes.
    const auto strings = cat({pv(1), pv(3), {'h', '.', '0'}, pv(3), {'G', 'P', 'T'}});
    const auto modules = cat({pv(1), {1}, pv(0), pv(2), pv(0), pv(0), pv(1), pv(2), pv(0), pv(1)});
    const auto zz = [](int64_t v) { return pv(uint64_t(v << 1) ^ uint64_t(v >> 63)); };
    const auto scopes = cat({zz(100), zz(50), pv(2), {1}, zz(-60), zz(200), pv(1), {0}});
    Bytes file = fileHeader(1, 2);
    appendChunk(file, 2, 2, strings);
    appendChunk(file, 13, 2, modules);
    appendChunk(file, 14, 2, scopes);
    NativeReadReport report;
    auto t = readBytes(file, file.size(), &report);
    ASSERT_TRUE(t) << t.message();
    EXPECT_EQ(report.problem, "");
    EXPECT_EQ(t->modules.source, ModuleSource::Recorded);
    ASSERT_EQ(t->modules.modules.size(), 2u);
    EXPECT_EQ(t->modules.modules[1].depth, 1);
    EXPECT_EQ(modulePath(*t, ModuleId(2)), "h.0");
    EXPECT_EQ(modulePath(*t, ModuleId(1)), "GPT");
    ASSERT_EQ(t->modules.scopes.size(), 2u);
    EXPECT_EQ(t->modules.scopes[0].start, 100);
    EXPECT_EQ(t->modules.scopes[0].end, 150);
    EXPECT_EQ(t->modules.scopes[0].kind, ModuleScopeKind::Recompute);
    EXPECT_EQ(t->modules.scopes[1].start, 40);
    EXPECT_EQ(t->modules.scopes[1].end, 240);
    EXPECT_EQ(t->modules.scopes[1].module, ModuleId(1));

    // A scope naming a module not read, a parent not earlier, an unknown
    // kind, an unknown source: each stops the read at that chunk.
    const std::vector<std::pair<uint8_t, std::vector<uint8_t>>> bad = {
        {14, cat({zz(0), zz(1), pv(3), {0}})},
        {14, cat({zz(0), zz(1), pv(1), {7}})},
        {13, cat({pv(3), {1}, pv(0), pv(2), pv(0), pv(4)})},
        {13, cat({pv(3), {9}, pv(0), pv(2), pv(0), pv(0)})},
    };
    for (const auto& [type, payload] : bad) {
        Bytes f = file;
        appendChunk(f, type, 1, payload);
        NativeReadReport r;
        auto loaded = readBytes(f, f.size(), &r);
        ASSERT_TRUE(loaded) << loaded.message();
        EXPECT_NE(r.problem, "") << int(type);
        EXPECT_EQ(loaded->modules.scopes.size(), 2u);
        EXPECT_EQ(loaded->modules.modules.size(), 2u);
    }
}

TEST(NativeFormat, OpScopeChunksDecodeAsDocumentedAndBadOnesStopTheRead) {
    // Strings "", "aten::addmm", "aten::empty"; two op scopes, the second
    // nested, its depth past the bound (clamped, not refused).
    const auto strings = cat({pv(1),
                              pv(11),
                              {'a', 't', 'e', 'n', ':', ':', 'a', 'd', 'd', 'm', 'm'},
                              pv(11),
                              {'a', 't', 'e', 'n', ':', ':', 'e', 'm', 'p', 't', 'y'}});
    const auto zz = [](int64_t v) { return pv(uint64_t(v << 1) ^ uint64_t(v >> 63)); };
    const auto ops = cat({{1}, zz(100), zz(50), pv(1), pv(0), zz(10), zz(5), pv(2), pv(5000)});
    Bytes file = fileHeader(1, 6);
    appendChunk(file, 2, 2, strings);
    appendChunk(file, 17, 2, ops);
    NativeReadReport report;
    auto t = readBytes(file, file.size(), &report);
    ASSERT_TRUE(t) << t.message();
    EXPECT_EQ(report.problem, "");
    EXPECT_EQ(t->ops.source, OpSource::Recorded);
    ASSERT_EQ(t->ops.scopes.size(), 2u);
    EXPECT_EQ(t->ops.scopes[0].start, 100);
    EXPECT_EQ(t->ops.scopes[0].end, 150);
    EXPECT_EQ(t->strings.get(t->ops.scopes[0].name), "aten::addmm");
    EXPECT_EQ(t->ops.scopes[0].depth, 0);
    EXPECT_EQ(t->ops.scopes[1].start, 110);
    EXPECT_EQ(t->ops.scopes[1].end, 115);
    EXPECT_EQ(t->strings.get(t->ops.scopes[1].name), "aten::empty");
    EXPECT_EQ(t->ops.scopes[1].depth, kMaxOpDepth);

    // An unknown string, an inferred or unknown source, a count past the
    // payload, a scope cut short: each stops the read at that chunk.
    const std::vector<std::pair<uint32_t, std::vector<uint8_t>>> bad = {
        {1, cat({{1}, zz(0), zz(1), pv(3), pv(0)})},
        {1, cat({{2}, zz(0), zz(1), pv(1), pv(0)})},
        {1, cat({{0}, zz(0), zz(1), pv(1), pv(0)})},
        {1000000, cat({{1}, zz(0), zz(1), pv(1), pv(0)})},
        {2, cat({{1}, zz(0), zz(1), pv(1), pv(0), zz(0)})},
        {1, {}},
    };
    for (const auto& [count, payload] : bad) {
        Bytes f = file;
        appendChunk(f, 17, count, payload);
        NativeReadReport r;
        auto loaded = readBytes(f, f.size(), &r);
        ASSERT_TRUE(loaded) << loaded.message();
        EXPECT_NE(r.problem, "") << count;
        EXPECT_EQ(loaded->ops.scopes.size(), 2u);
    }
}

TEST(NativeFormat, DevicesBelowTheHostStopTheRead) {
    TempDir dir;
    auto w = NativeTraceWriter::create(dir.file("d"), {});
    ASSERT_TRUE(w);
    (*w)->append(makeEvent(1, EventKind::Alloc, 0x10, 8, Category::Unknown).device(-5));
    ASSERT_TRUE((*w)->close());
    NativeReadReport report;
    auto t = readNativeTrace(dir.file("d"), {}, &report);
    ASSERT_TRUE(t) << t.message();  // the metadata chunk before it is good
    EXPECT_TRUE(t->events.empty());
    EXPECT_NE(report.problem.find("device out of range"), std::string::npos) << report.problem;
}

// A chunk long enough that most events are read in unchecked blocks: an
// error in the middle of a block (not in the checked tail) must stop the read
// with its own message, and a clean chunk decodes to the documented events.
TEST(NativeFormat, ErrorsInsideALongChunkStopTheRead) {
    constexpr size_t kEvents = 2000, kBad = 1001;  // kBad: a free, deep inside a block
    enum Fault { kNone, kReservedMode, kPastWindow, kSizeMode, kSizeEscape, kStack, kPhase, kTag };
    const auto payload = [&](Fault fault) {
        std::vector<uint8_t> tag, time, address, size, stack, phase;
        const auto put = [](std::vector<uint8_t>& col, uint64_t v) {
            const std::vector<uint8_t> b = pv(v);
            col.insert(col.end(), b.begin(), b.end());
        };
        for (size_t i = 0; i < kEvents; ++i) {
            const bool alloc = i % 2 == 0;
            const bool bad = i == kBad;
            put(tag, bad && fault == kTag ? 7 : alloc ? 0 : 1);
            put(time, 2);  // +1
            if (alloc)
                put(address, uint64_t{2} << 2);  // +1 * 512 (zigzag 2), mode 0
            else if (bad && fault == kReservedMode)
                put(address, 3);
            else if (bad && fault == kPastWindow)
                put(address, uint64_t{16} << 2 | 2);
            else
                put(address, 0 << 2 | 2);  // the newest alloc
            if (bad && fault == kSizeMode) {
                put(size, 4);  // mode 0 with a payload
            } else if (bad && fault == kSizeEscape) {
                put(size, 7);  // escape mode, but not the escape code
                put(size, 99);
            } else {
                put(size, alloc ? uint64_t{(i % 7) + 1} << 2 | 1 : 0);
            }
            put(stack, bad && fault == kStack ? 5 : 0);
            put(phase, bad && fault == kPhase ? 2 : 0);
        }
        const auto column = [](const std::vector<uint8_t>& bytes) {
            return cat({pv(bytes.size()), bytes});
        };
        return cat({cat({pv(0), pv(kEvents), pv(1)}),
                    cat({pv(2), {0, 0}, pv(0), pv(0), {1, 0}, pv(0), pv(0)}), column(tag),
                    column(time), column(address), column(size), column(stack), column(phase)});
    };
    NativeReadReport report;
    {
        Bytes file = fileHeader(1, 4);
        appendChunk(file, 10, kEvents, payload(kNone), /*flags=*/2);
        auto t = readBytes(file, file.size(), &report);
        ASSERT_TRUE(t) << t.message();
        EXPECT_EQ(report.problem, "");
        ASSERT_EQ(t->events.size(), kEvents);
        for (size_t i = 0; i < kEvents; ++i) {
            const Event& e = t->events[i];
            const uint64_t address = 512 * (i / 2 + 1), size = 512 * ((i - i % 2) % 7 + 1);
            ASSERT_EQ(e.time, int64_t(i + 1)) << i;
            ASSERT_EQ(e.address, address) << i;  // a free names its alloc
            ASSERT_EQ(e.size, size) << i;
            ASSERT_EQ(e.kind, i % 2 ? EventKind::FreeRequested : EventKind::Alloc) << i;
        }
    }
    const std::pair<Fault, const char*> faults[] = {
        {kReservedMode, "bad address code"},
        {kPastWindow, "bad address code"},
        {kSizeMode, "bad size code"},
        {kSizeEscape, "bad size code"},
        {kStack, "unknown stack"},
        {kPhase, "unknown phase"},
        {kTag, "palette index out of range"},
    };
    for (const auto& [fault, message] : faults) {
        Bytes file = fileHeader(1, 4);
        appendChunk(file, 10, kEvents, payload(fault), /*flags=*/2);
        auto t = readBytes(file, file.size(), &report);
        ASSERT_TRUE(t) << t.message();
        EXPECT_TRUE(t->events.empty()) << message;
        EXPECT_NE(report.problem.find(message), std::string::npos) << report.problem;
    }
}
