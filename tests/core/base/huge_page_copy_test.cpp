// InputFile::copyInHugePages and ReadAhead over an InputFile: whole 2 MiB
// pages of the file replaced by copies in anonymous memory, the bytes the
// same before, during and after (a reader on another thread included), the
// copies given back when the reader drops them, and nothing changed where a
// copy cannot be made (a range not of whole 2 MiB pages, a file cut short).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <span>
#include <string>
#include <thread>

#include "../scratch_dir_test.h"
#include "memscope/base/file_io.h"
#include "memscope/base/read_ahead.h"
#include "memscope/base/transparent_huge_pages.h"

namespace memscope {
namespace {

constexpr size_t kHuge = InputFile::kHugePage;
constexpr size_t kMiB = size_t(1) << 20;

class HugePageCopyTest : public testutil::ScratchDirTest {
protected:
    void SetUp() override {
        ScratchDirTest::SetUp();
        const TransparentHugePages thp = transparentHugePages();
        if (thp != TransparentHugePages::Always && thp != TransparentHugePages::Madvise)
            GTEST_SKIP() << "transparent huge pages are off on this machine: nothing is copied";
    }
};

std::string patterned(size_t n) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; ++i) s[i] = char((i * 131 + (i >> 12)) >> 3);
    return s;
}

bool same(std::span<const std::byte> bytes, const std::string& content) {
    return bytes.size() == content.size() &&
           std::memcmp(bytes.data(), content.data(), content.size()) == 0;
}

// Anonymous kB of this process's mappings inside [p, p + n), from
// /proc/self/smaps; -1 where it cannot be read.
long anonymousKb(const void* p, size_t n) {
    std::ifstream smaps("/proc/self/smaps");
    if (!smaps) return -1;
    const auto lo = reinterpret_cast<uintptr_t>(p), hi = lo + n;
    long kb = 0;
    bool inside = false;
    for (std::string line; std::getline(smaps, line);) {
        unsigned long a = 0, b = 0;
        if (std::sscanf(line.c_str(), "%lx-%lx ", &a, &b) == 2 && line.find(':') > line.find(' ')) {
            inside = a < hi && b > lo;
            continue;
        }
        long value = 0;
        if (inside && std::sscanf(line.c_str(), "Anonymous: %ld kB", &value) == 1) kb += value;
    }
    return kb;
}

TEST_F(HugePageCopyTest, CopiesKeepTheBytesAndDropsGiveThemBack) {
    const std::string content = patterned(5 * kHuge + 12345);
    auto f = InputFile::open(write("in.bin", content));
    ASSERT_TRUE(f.ok()) << f.message();
    InputFile& file = **f;
    const auto bytes = file.bytes();
    ASSERT_EQ(reinterpret_cast<uintptr_t>(bytes.data()) % kHuge, 0u)
        << "a file of whole 2 MiB pages is mapped at a 2 MiB boundary";
    ASSERT_TRUE(file.copyInHugePages(0, 2 * kHuge));
    ASSERT_TRUE(file.copyInHugePages(2 * kHuge, 2 * kHuge));
    EXPECT_TRUE(same(bytes, content));
    const long copied = anonymousKb(bytes.data(), bytes.size());
    if (copied < 0) GTEST_SKIP() << "/proc/self/smaps unreadable";
    EXPECT_EQ(copied, long(4 * kHuge / 1024)) << "the copies are anonymous memory";

    // Dropping mid-page gives back the whole pages below it only.
    file.dropBefore(kHuge + kHuge / 2);
    EXPECT_EQ(anonymousKb(bytes.data(), bytes.size()), long(3 * kHuge / 1024));
    EXPECT_TRUE(same(bytes, content)) << "a dropped copy reads the file again";
    file.dropBefore(3 * kHuge);
    EXPECT_EQ(anonymousKb(bytes.data(), bytes.size()), long(kHuge / 1024));
    file.dropBefore(bytes.size());
    EXPECT_EQ(anonymousKb(bytes.data(), bytes.size()), 0);
    EXPECT_TRUE(same(bytes, content));
    EXPECT_FALSE(file.shrank());
    // Below what was dropped nothing is copied.
    EXPECT_FALSE(file.copyInHugePages(0, kHuge));
}

// Drops below the copies, then into their first page, then past them: the
// pages below are forgotten as before, a copied page only once the reader
// is past all of it, and the bytes stay the file's throughout.
TEST_F(HugePageCopyTest, DropsBelowInsideAndPastTheCopies) {
    const std::string content = patterned(6 * kHuge);
    auto f = InputFile::open(write("in.bin", content));
    ASSERT_TRUE(f.ok()) << f.message();
    InputFile& file = **f;
    const auto bytes = file.bytes();
    ASSERT_TRUE(file.copyInHugePages(2 * kHuge, 2 * kHuge));
    const long whole = anonymousKb(bytes.data(), bytes.size());
    if (whole < 0) GTEST_SKIP() << "/proc/self/smaps unreadable";
    ASSERT_EQ(whole, long(2 * kHuge / 1024));
    file.dropBefore(kHuge);
    EXPECT_EQ(anonymousKb(bytes.data(), bytes.size()), whole);
    file.dropBefore(2 * kHuge + 100000);
    file.dropBefore(2 * kHuge + 200000);
    EXPECT_EQ(anonymousKb(bytes.data(), bytes.size()), whole);
    EXPECT_TRUE(same(bytes, content));
    file.dropBefore(5 * kHuge);
    EXPECT_EQ(anonymousKb(bytes.data(), bytes.size()), 0);
    EXPECT_TRUE(same(bytes, content));
    EXPECT_FALSE(file.copyInHugePages(4 * kHuge, kHuge));  // behind the reader
    EXPECT_TRUE(file.copyInHugePages(5 * kHuge, kHuge));
    EXPECT_TRUE(same(bytes, content));
}

TEST_F(HugePageCopyTest, RefusesWhatIsNotWholePagesOfTheFile) {
    const std::string content = patterned(3 * kHuge + 100);
    auto f = InputFile::open(write("in.bin", content));
    ASSERT_TRUE(f.ok()) << f.message();
    InputFile& file = **f;
    EXPECT_FALSE(file.copyInHugePages(0, 0));
    EXPECT_FALSE(file.copyInHugePages(4096, kHuge));           // not at a 2 MiB offset
    EXPECT_FALSE(file.copyInHugePages(0, kHuge + 4096));       // not whole pages
    EXPECT_FALSE(file.copyInHugePages(2 * kHuge, 2 * kHuge));  // past the end
    EXPECT_FALSE(file.copyInHugePages(SIZE_MAX - kHuge + 1, kHuge));
    EXPECT_EQ(anonymousKb(file.bytes().data(), file.bytes().size()), 0);
    EXPECT_TRUE(same(file.bytes(), content));

    auto small = InputFile::open(write("small.bin", patterned(100000)));
    ASSERT_TRUE(small.ok()) << small.message();
    EXPECT_FALSE((*small)->copyInHugePages(0, kHuge));
    auto empty = InputFile::open(write("empty.bin", ""));
    ASSERT_TRUE(empty.ok()) << empty.message();
    EXPECT_FALSE((*empty)->copyInHugePages(0, kHuge));
}

TEST_F(HugePageCopyTest, AFileCutShortIsNotCopiedAndIsReported) {
    const std::string path = write("cut.bin", patterned(4 * kHuge));
    auto f = InputFile::open(path);
    ASSERT_TRUE(f.ok()) << f.message();
    ASSERT_EQ(::truncate(path.c_str(), off_t(kHuge + 10)), 0);
    EXPECT_FALSE((*f)->copyInHugePages(0, 2 * kHuge));
    EXPECT_TRUE((*f)->copyInHugePages(0, kHuge));  // what is still there
    EXPECT_TRUE((*f)->shrank());
}

// A reader walking the mapping on another thread while pages are copied
// over it and dropped behind it sees the file's bytes every time.
TEST_F(HugePageCopyTest, AReaderOnAnotherThreadSeesTheSameBytesThroughout) {
    const std::string content = patterned(32 * kHuge);
    auto f = InputFile::open(write("in.bin", content));
    ASSERT_TRUE(f.ok()) << f.message();
    InputFile& file = **f;
    const auto bytes = file.bytes();
    uint64_t expected = 0;
    for (size_t i = 0; i < content.size(); i += 64) expected += uint8_t(content[i]);
    std::atomic<bool> done{false};
    std::atomic<int> wrong{0}, passes{0};
    std::thread reader([&] {
        while (!done.load()) {
            uint64_t sum = 0;
            for (size_t i = 0; i < bytes.size(); i += 64) sum += uint8_t(bytes[i]);
            if (sum != expected) ++wrong;
            ++passes;
        }
    });
    int copied = 0;
    for (size_t k = 0; k * kHuge < bytes.size(); ++k) {
        copied += file.copyInHugePages(k * kHuge, kHuge);
        if (k >= 2) file.dropBefore((k - 1) * kHuge);  // two pages behind
        const int seen = passes.load();
        while (passes.load() == seen) std::this_thread::yield();  // a pass between steps
    }
    file.dropBefore(bytes.size());
    const int seen = passes.load();
    while (passes.load() < seen + 2) std::this_thread::yield();
    done = true;
    reader.join();
    EXPECT_EQ(copied, 32);
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_TRUE(same(bytes, content));
}

TEST_F(HugePageCopyTest, ReadAheadCopiesAheadOfTheReaderAndStops) {
    const std::string content = patterned(40 * kMiB + 777);
    auto f = InputFile::open(write("in.bin", content));
    ASSERT_TRUE(f.ok()) << f.message();
    InputFile& file = **f;
    const auto bytes = file.bytes();
    uint64_t sum = 0, expected = 0;
    {
        ReadAhead ahead(file, 8 * kMiB);
        for (size_t i = 0; i < bytes.size(); ++i) {
            if (i % kMiB == 0) {
                ahead.reached(i);
                if (i > 16 * kMiB) file.dropBefore(i - 16 * kMiB);
            }
            sum += uint8_t(bytes[i]);
        }
    }
    for (char c : content) expected += uint8_t(c);
    EXPECT_EQ(sum, expected);
    EXPECT_TRUE(same(bytes, content));
    // The copies behind the reader went back; what is left is at most the
    // lead and the 16 MiB the reader kept.
    const long left = anonymousKb(bytes.data(), bytes.size());
    if (left >= 0) {
        EXPECT_LE(left, long((8 + 16 + 4) * kMiB / 1024));
    }
    {
        ReadAhead stopped_early(file, 4 * kMiB);  // destroyed while waiting
    }
    EXPECT_TRUE(same(bytes, content));
}

}  // namespace
}  // namespace memscope
