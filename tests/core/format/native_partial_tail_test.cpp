// NativeReadOptions::tolerate_partial_tail, what following a file being
// written uses: a last chunk cut short is waited for (bytes_pending), not
// reported as damage; a damaged chunk still is; normal reads are unchanged.
#include <gtest/gtest.h>

#include "native_test_util.h"

using namespace memscope;
using namespace memscope::native_test;

namespace {

Result<Trace> readTolerant(const Bytes& b, size_t n, NativeReadReport* report) {
    return readNativeTrace(std::span<const std::byte>(b.data(), n), {}, report,
                           {.tolerate_partial_tail = true});
}

}  // namespace

TEST(NativePartialTail, EveryPrefixStopsQuietlyAtTheCutChunk) {
    TempDir dir;
    const Trace original = sampleTrace(120);
    ASSERT_TRUE(writeNativeTrace(original, dir.file("p"), {.events_per_chunk = 16}));
    const Bytes file = readFile(dir.file("p"));
    const std::vector<ChunkInfo> chunks = chunksOf(file);
    ASSERT_GT(chunks.size(), 10u);
    for (size_t n = 16; n <= file.size(); ++n) {
        SCOPED_TRACE("prefix of " + std::to_string(n) + " bytes");
        NativeReadReport report;
        auto t = readTolerant(file, n, &report);
        ASSERT_TRUE(t) << t.message();
        size_t whole = 0, events = 0, good_end = 16;
        for (const ChunkInfo& c : chunks) {
            if (c.end > n) break;
            ++whole;
            good_end = c.end;
            if (c.type == 10) events += c.count;
        }
        EXPECT_EQ(report.chunks_read, whole);
        EXPECT_EQ(report.problem, "");
        EXPECT_EQ(report.bytes_lost, 0u);
        EXPECT_EQ(report.bytes_pending, n - good_end);
        ASSERT_EQ(t->events.size(), events);
        expectSameEvents(original.events, t->events, events);
        // The same prefix read normally still reports the cut as damage.
        NativeReadReport strict;
        ASSERT_TRUE(readBytes(file, n, &strict));
        EXPECT_EQ(strict.bytes_pending, 0u);
        EXPECT_EQ(strict.bytes_lost, n - good_end);
        EXPECT_EQ(strict.problem.empty(), n == good_end);
        if (HasFailure()) return;
    }
}

TEST(NativePartialTail, DamageBeforeTheEndIsStillReported) {
    TempDir dir;
    const Trace original = sampleTrace(120);
    ASSERT_TRUE(writeNativeTrace(original, dir.file("d"), {.events_per_chunk = 16}));
    Bytes file = readFile(dir.file("d"));
    const std::vector<ChunkInfo> chunks = chunksOf(file);
    ASSERT_GT(chunks.size(), 4u);
    // A byte of a middle chunk's payload flipped: its checksum fails.
    const ChunkInfo& bad = chunks[chunks.size() / 2];
    file[bad.end - 1] ^= std::byte(0x5a);
    NativeReadReport report;
    auto t = readTolerant(file, file.size(), &report);
    ASSERT_TRUE(t) << t.message();
    EXPECT_NE(report.problem, "");
    EXPECT_EQ(report.bytes_pending, 0u);
    EXPECT_EQ(report.bytes_lost, file.size() - bad.offset);
}

TEST(NativePartialTail, ImportWarnsOnlyWithoutTheOption) {
    TempDir dir;
    const Trace original = sampleTrace(120);
    ASSERT_TRUE(writeNativeTrace(original, dir.file("full"), {.events_per_chunk = 16}));
    const Bytes file = readFile(dir.file("full"));
    const std::vector<ChunkInfo> chunks = chunksOf(file);
    ASSERT_GT(chunks.size(), 4u);
    const size_t cut = chunks[3].offset + 5;  // in the middle of the fourth chunk's header
    writeFile(dir.file("cut"), Bytes(file.begin(), file.begin() + ptrdiff_t(cut)));

    std::vector<LoadWarning> warnings;
    TaskContext ctx;
    ctx.warnings = &warnings;
    NativeReadReport report;
    auto tolerant =
        importNativeTrace(dir.file("cut"), ctx, {.tolerate_partial_tail = true}, &report);
    ASSERT_TRUE(tolerant) << tolerant.message();
    EXPECT_TRUE(warnings.empty());
    EXPECT_EQ(report.chunks_read, 3u);
    EXPECT_EQ(report.bytes_pending, 5u);

    auto strict = importNativeTrace(dir.file("cut"), ctx);
    ASSERT_TRUE(strict) << strict.message();
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_EQ(warnings[0].kind, WarningKind::DamagedTail);

    // Only the header written: an empty trace to wait on, not an error.
    writeFile(dir.file("head"), Bytes(file.begin(), file.begin() + 16));
    EXPECT_TRUE(importNativeTrace(dir.file("head"), {}, {.tolerate_partial_tail = true}));
}
