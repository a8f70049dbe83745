// An events chunk's payload is one zstd frame per column, and a column whose
// bytes entropy coding barely shrinks keeps its literals plain (no Huffman
// table), which decodes several times faster. Read through zstd's frame
// format (RFC 8878) so that the test sees what the file holds.
#include <gtest/gtest.h>
#include <zstd.h>

#include <random>

#include "native_test_util.h"

using namespace memscope;
using namespace memscope::native_test;

namespace {

// How a frame's first block stores its literals, by RFC 8878.
enum class Literals { Raw, Rle, Huffman, NoCompressedBlock };

Literals firstBlockLiterals(const unsigned char* frame, size_t size) {
    EXPECT_GE(size, 6u);
    const unsigned char descriptor = frame[4];
    const unsigned fcs_flag = descriptor >> 6;
    const bool single_segment = descriptor & 0x20;
    const unsigned dict_flag = descriptor & 3;
    size_t at = 5 + (single_segment ? 0 : 1);
    at += dict_flag == 0 ? 0 : dict_flag == 1 ? 1 : dict_flag == 2 ? 2 : 4;
    at += fcs_flag == 0 ? (single_segment ? 1 : 0) : fcs_flag == 1 ? 2 : fcs_flag == 2 ? 4 : 8;
    EXPECT_LT(at + 3, size);
    const uint32_t block = frame[at] | frame[at + 1] << 8 | frame[at + 2] << 16;
    if ((block >> 1 & 3) != 2) return Literals::NoCompressedBlock;
    switch (frame[at + 3] & 3) {
        case 0:
            return Literals::Raw;
        case 1:
            return Literals::Rle;
        default:
            return Literals::Huffman;  // compressed, or treeless (a previous block's table)
    }
}

struct ZstdFrame {
    std::vector<unsigned char> content;
    Literals literals;
};

// The zstd frames of a compressed events chunk's payload, each decompressed.
std::vector<ZstdFrame> framesOf(const Bytes& file, const ChunkInfo& chunk) {
    const auto* p = reinterpret_cast<const unsigned char*>(file.data()) + chunk.offset + 20;
    size_t left = getLE32(file, chunk.offset + 8);
    std::vector<ZstdFrame> frames;
    while (left > 0) {
        const size_t n = ZSTD_findFrameCompressedSize(p, left);
        if (ZSTD_isError(n)) {
            ADD_FAILURE() << ZSTD_getErrorName(n);
            return frames;
        }
        ZstdFrame f;
        f.content.resize(ZSTD_getFrameContentSize(p, n));
        EXPECT_EQ(ZSTD_decompress(f.content.data(), f.content.size(), p, n), f.content.size());
        f.literals = firstBlockLiterals(p, n);
        frames.push_back(std::move(f));
        p += n;
        left -= n;
    }
    return frames;
}

// The length of the prefix varint at the start of `bytes`, and its value.
std::pair<size_t, uint64_t> prefixVarint(const std::vector<unsigned char>& bytes) {
    const size_t n = bytes[0] == 0 ? 9 : size_t(__builtin_ctz(bytes[0])) + 1;
    uint64_t v = 0;
    if (n == 9) {
        for (size_t i = 8; i >= 1; --i) v = v << 8 | bytes[i];
        return {9, v};
    }
    for (size_t i = n; i-- > 0;) v = v << 8 | bytes[i];
    return {n, v >> n};
}

}  // namespace

TEST(NativeEventFrames, EachColumnIsAFrameAndNoisyColumnsKeepPlainLiterals) {
    // Times and addresses jump at random (their bytes are nearly uniform);
    // sizes and stacks take a few values in random order (skewed bytes, no
    // long repeats for a match finder to use).
    Trace t;
    std::vector<StackId> stacks;
    for (int s = 0; s < 6; ++s)
        stacks.push_back(t.internStack(std::vector<FrameId>{t.internFrame(
            {t.internString("f" + std::to_string(s)), t.internString("x.py"), uint32_t(s + 1)})}));
    std::mt19937_64 rng(3);
    int64_t time = 0;
    for (int i = 0; i < 20000; ++i) {
        time += int64_t(rng() % (1u << 22));
        const uint64_t address = 0x7f0000000000ull + (rng() % (1u << 30)) * 512;
        const uint64_t size = 512u << (rng() % 3);
        t.events.push_back(makeEvent(time, EventKind::Alloc, address, size, Category::Activation)
                               .stack(stacks[rng() % 6]));
    }
    TempDir dir;
    ASSERT_TRUE(writeNativeTrace(t, dir.file("t"), {.events_per_chunk = 8192}));
    const Bytes file = readFile(dir.file("t"));
    auto back = readBytes(file, file.size(), nullptr);
    ASSERT_TRUE(back) << back.message();
    expectSameTrace(t, *back);

    size_t chunks = 0;
    for (const ChunkInfo& c : chunksOf(file)) {
        if (c.type != 10) continue;
        ++chunks;
        ASSERT_TRUE(uint8_t(file[c.offset + 1]) & 1) << "events chunk not compressed";
        const std::vector<ZstdFrame> frames = framesOf(file, c);
        ASSERT_EQ(frames.size(), 6u);
        // Frames 1 to 5 hold exactly one column each: its length, then its bytes.
        for (size_t k = 1; k < frames.size(); ++k) {
            const auto [prefix, length] = prefixVarint(frames[k].content);
            EXPECT_EQ(prefix + length, frames[k].content.size()) << "frame " << k;
        }
        // Together they are the raw payload.
        size_t raw = 0;
        for (const ZstdFrame& f : frames) raw += f.content.size();
        EXPECT_EQ(raw, getLE32(file, c.offset + 12));
        // Time (1) and address (2) are noise: plain. Size (3) and stack (4) are skewed: entropy
        // coded.
        for (size_t k : {1, 2}) EXPECT_NE(frames[k].literals, Literals::Huffman) << "column " << k;
        for (size_t k : {3, 4}) EXPECT_EQ(frames[k].literals, Literals::Huffman) << "column " << k;
    }
    EXPECT_EQ(chunks, 3u);
}
