// Bad input to the native reader: every prefix, random byte flips, bad
// headers, hostile declared lengths, random and mutated payloads with valid
// checksums. Each loads what precedes the damage or fails with a message.
#include <gtest/gtest.h>

#include <random>

#include "native_test_util.h"

using namespace memscope;
using namespace memscope::native_test;

TEST(NativeFormat, EveryPrefixLoadsOrFailsCleanly) {
    TempDir dir;
    const Trace original = sampleTrace(120);
    ASSERT_TRUE(writeNativeTrace(original, dir.file("p"), {.events_per_chunk = 16}));
    const Bytes file = readFile(dir.file("p"));
    const std::vector<ChunkInfo> chunks = chunksOf(file);
    ASSERT_GT(chunks.size(), 10u);

    for (size_t n = 0; n <= file.size(); ++n) {
        SCOPED_TRACE("prefix of " + std::to_string(n) + " bytes");
        NativeReadReport report;
        auto t = readBytes(file, n, &report);
        if (n < 16) {
            ASSERT_FALSE(t);
            EXPECT_FALSE(t.message().empty());
            continue;
        }
        ASSERT_TRUE(t) << t.message();
        // The chunks that end within the prefix are exactly the ones kept.
        size_t whole = 0, events = 0, good_end = 16;
        for (const ChunkInfo& c : chunks) {
            if (c.end > n) break;
            ++whole;
            good_end = c.end;
            if (c.type == 10) events += c.count;
        }
        EXPECT_EQ(report.chunks_read, whole);
        EXPECT_EQ(report.bytes_lost, n - good_end);
        EXPECT_EQ(report.problem.empty(), n == good_end);
        ASSERT_EQ(t->events.size(), events);
        expectSameEvents(original.events, t->events, events);
        if (n == file.size()) expectSameTrace(original, *t);
        if (HasFailure()) return;
    }
}

TEST(NativeFormat, RandomByteFlipsLoadOrFailCleanly) {
    TempDir dir;
    const Trace original = sampleTrace(200);
    ASSERT_TRUE(writeNativeTrace(original, dir.file("f"), {.events_per_chunk = 32}));
    const Bytes file = readFile(dir.file("f"));
    std::mt19937 rng(1234);
    for (int iteration = 0; iteration < 3000; ++iteration) {
        Bytes damaged = file;
        const int flips = 1 + int(rng() % 3);
        size_t first = damaged.size();
        for (int k = 0; k < flips; ++k) {
            const size_t at = rng() % damaged.size();
            first = std::min(first, at);
            damaged[at] ^= std::byte(1 + rng() % 255);
        }
        NativeReadReport report;
        auto t = readBytes(damaged, damaged.size(), &report);
        if (first < 16) continue;  // a damaged header may fail; it must just not crash
        ASSERT_TRUE(t) << t.message();
        EXPECT_FALSE(report.problem.empty());
        EXPECT_GT(report.bytes_lost, 0u);
        ASSERT_LE(t->events.size(), original.events.size());
        expectSameEvents(original.events, t->events, t->events.size());
        if (HasFailure()) return;
    }
}

TEST(NativeFormat, BadHeadersAreErrors) {
    Bytes garbage{std::byte('P'), std::byte('K'), std::byte(3), std::byte(4)};
    auto a = readBytes(garbage, garbage.size(), nullptr);
    ASSERT_FALSE(a);
    EXPECT_NE(a.message().find("magic"), std::string::npos) << a.message();

    Bytes v2 = fileHeader(2, 0);
    auto b = readBytes(v2, v2.size(), nullptr);
    ASSERT_FALSE(b);
    EXPECT_NE(b.message().find("version 2.0"), std::string::npos) << b.message();

    Bytes damaged = fileHeader();
    damaged[9] = std::byte(1);
    auto c = readBytes(damaged, damaged.size(), nullptr);
    ASSERT_FALSE(c);
    EXPECT_NE(c.message().find("damaged"), std::string::npos) << c.message();

    Bytes newer_minor = fileHeader(1, 9);
    appendChunk(newer_minor, 200, 1, {1, 2, 3});  // a chunk type from the future: skipped
    NativeReadReport report;
    auto d = readBytes(newer_minor, newer_minor.size(), &report);
    ASSERT_TRUE(d) << d.message();
    EXPECT_EQ(report.chunks_read, 1u);
    EXPECT_EQ(report.problem, "");

    TempDir dir;
    auto missing = readNativeTrace(dir.file("nope"));
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.message().find("nope"), std::string::npos);
    writeFile(dir.file("empty"), {});
    EXPECT_FALSE(readNativeTrace(dir.file("empty")));
}

TEST(NativeFormat, HostileDeclaredLengthsAreBounded) {
    // A huge stored size: more than the file holds.
    Bytes a = fileHeader();
    appendChunk(a, 2, 1, cat({pv(1), pv(1), {'x'}}));  // strings: id 1 = "x"
    const size_t good = a.size();
    appendChunk(a, 10, 0xffffffffu, {0, 0});
    putLE32(a, good + 8, 0xfffffff0u);
    NativeReadReport report;
    auto t = readBytes(a, a.size(), &report);
    ASSERT_TRUE(t) << t.message();
    EXPECT_EQ(report.chunks_read, 1u);
    EXPECT_EQ(report.bytes_lost, a.size() - good);
    EXPECT_NE(report.problem.find("declares"), std::string::npos) << report.problem;

    // A huge raw size behind a valid checksum: refused before any allocation.
    Bytes b = fileHeader();
    appendChunk(b, 10, 0xffffffffu, {0x28, 0xb5, 0x2f, 0xfd}, /*flags=*/1, 0xfffffff0u);
    auto u = readBytes(b, b.size(), &report);
    ASSERT_TRUE(u);
    EXPECT_NE(report.problem.find("too large"), std::string::npos) << report.problem;

    // Counts and lengths inside valid chunks that lie.
    const std::vector<std::vector<uint8_t>> lies = {
        cat({pv(1), pv(0xffffffffu)}),          // strings: one of 4 GiB
        cat({pv(1), {0x80, 0xff}}),             // a varint longer than the payload
        cat({pv(0), pv(65535), pv(1), pv(1)}),  // events: 65535 from a few bytes
    };
    for (uint8_t type : {2, 3, 4, 5, 6, 7, 8, 9, 1, 10, 11}) {
        for (const auto& payload : lies) {
            for (uint32_t count : {1u, 65535u, 0xffffffffu}) {
                Bytes c = fileHeader();
                appendChunk(c, type, count, payload);
                auto r = readBytes(c, c.size(), &report);
                ASSERT_TRUE(r);
                // The one true statement here: stream 1 is 0xffffffff.
                if (type == 5 && count == 1 && payload == lies[0]) continue;
                EXPECT_FALSE(report.problem.empty()) << int(type);
                EXPECT_EQ(report.chunks_read, 0u);
            }
        }
    }
}

TEST(NativeFormat, RandomPayloadsWithValidChecksumsFailCleanly) {
    // Corruption the checksum cannot see (a buggy or hostile writer): every
    // decoder must reject it without reading out of bounds.
    TempDir dir;
    ASSERT_TRUE(writeNativeTrace(sampleTrace(50), dir.file("base")));
    const Bytes base = readFile(dir.file("base"));
    std::mt19937 rng(99);
    for (int iteration = 0; iteration < 4000; ++iteration) {
        Bytes file = base;
        std::vector<uint8_t> payload(rng() % 64);
        for (auto& byte : payload) byte = uint8_t(rng() % 4 == 0 ? rng() % 3 : rng());
        const auto type = uint8_t(1 + rng() % 11);
        // Events chunks in both codings.
        const uint8_t flags = type == 10 && rng() % 2 ? 2 : 0;
        appendChunk(file, type, rng() % 4 == 0 ? uint32_t(rng()) : uint32_t(rng() % 8), payload,
                    flags);
        NativeReadReport report;
        auto t = readBytes(file, file.size(), &report);
        ASSERT_TRUE(t) << t.message();
        EXPECT_GE(t->events.size(), 52u);
    }
}

TEST(NativeFormat, MutatedPayloadsWithValidChecksumsLoadOrStopCleanly) {
    // Real chunks, mutated behind a recomputed checksum: this reaches deep into
    // every decoder. Tiny chunks stay uncompressed (under 128 bytes), so the
    // mutations hit the encodings themselves.
    TempDir dir;
    ASSERT_TRUE(writeNativeTrace(sampleTrace(60), dir.file("m"), {.events_per_chunk = 3}));
    const Bytes base = readFile(dir.file("m"));
    std::vector<ChunkInfo> plain;
    for (const ChunkInfo& c : chunksOf(base))
        if ((std::to_integer<uint8_t>(base[c.offset + 1]) & 1) == 0 && c.end > c.offset + 20)
            plain.push_back(c);
    ASSERT_GT(plain.size(), 20u);
    std::mt19937 rng(5);
    for (int iteration = 0; iteration < 6000; ++iteration) {
        Bytes file = base;
        const ChunkInfo& c = plain[rng() % plain.size()];
        const size_t stored = c.end - c.offset - 20;
        for (int k = 0, flips = 1 + int(rng() % 3); k < flips; ++k)
            file[c.offset + 20 + rng() % stored] ^= std::byte(1 << (rng() % 8));
        uint32_t crc = referenceCrc32c(file.data() + c.offset, 16);
        crc = referenceCrc32c(file.data() + c.offset + 20, stored, crc);
        putLE32(file, c.offset + 16, crc);
        NativeReadReport report;
        auto t = readBytes(file, file.size(), &report);
        ASSERT_TRUE(t) << t.message();
        // Whatever loaded is consistent: every id an event holds exists.
        for (const Event& e : t->events) {
            ASSERT_LT(e.stack.value, t->stackCount());
            ASSERT_LE(e.phase.value, t->phases.size());
            ASSERT_LT(e.stream, t->streams.size());
        }
        for (const EventAttribute& a : t->attributes) ASSERT_LT(a.event, t->events.size());
    }
}
