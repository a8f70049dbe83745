// ReadAhead: a file mapping's pages are mapped in ahead of the reader, no
// further than the lead past the position the reader gave; the bytes read
// are the file's; it stops whether or not it has finished.
#include "memscope/base/read_ahead.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "../scratch_dir_test.h"
#include "memscope/base/file_io.h"

#ifdef __linux__
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace memscope {
namespace {

class ReadAheadTest : public testutil::ScratchDirTest {};

constexpr size_t kMiB = size_t(1) << 20;

std::string patterned(size_t n) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; ++i) s[i] = char((i * 131) >> 7);
    return s;
}

#ifdef __linux__
// Pages of [p, p + bytes) mapped into this process (present in its page
// table), from /proc/self/pagemap; SIZE_MAX when that cannot be read.
size_t mappedPages(const void* p, size_t bytes) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return SIZE_MAX;
    size_t n = 0;
    const uintptr_t first = reinterpret_cast<uintptr_t>(p) / page;
    for (uintptr_t v = first; v < first + bytes / page; ++v) {
        uint64_t entry = 0;
        if (::pread(fd, &entry, sizeof entry, off_t(v * sizeof entry)) != sizeof entry) {
            ::close(fd);
            return SIZE_MAX;
        }
        n += (entry >> 63) & 1;
    }
    ::close(fd);
    return n;
}

// Whether this kernel maps file pages in on MADV_POPULATE_READ (Linux 5.14).
bool kernelPopulatesReading(const std::span<const std::byte> bytes) {
    return madvise(const_cast<std::byte*>(bytes.data()), 4096, 22 /* MADV_POPULATE_READ */) == 0;
}

// Polls until `pages` pages of the range are mapped, for up to 5 s.
bool waitMapped(const void* p, size_t bytes, size_t pages) {
    for (int i = 0; i < 500; ++i) {
        if (mappedPages(p, bytes) == pages) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

TEST_F(ReadAheadTest, MapsPagesInNoFurtherThanTheLeadPastTheReader) {
    auto probe = InputFile::open(write("probe.bin", patterned(kMiB)));
    ASSERT_TRUE(probe.ok()) << probe.message();
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    if (mappedPages((*probe)->bytes().data(), page) == SIZE_MAX)
        GTEST_SKIP() << "/proc/self/pagemap unreadable";
    if (!kernelPopulatesReading((*probe)->bytes()))
        GTEST_SKIP() << "this kernel has no MADV_POPULATE_READ (Linux < 5.14)";
    const std::string content = patterned(24 * kMiB);
    auto file = InputFile::open(write("input.bin", content));
    ASSERT_TRUE(file.ok()) << file.message();
    const std::span<const std::byte> bytes = (*file)->bytes();
    ASSERT_EQ(mappedPages(bytes.data(), bytes.size()), 0u);
    {
        ReadAhead ahead(bytes, 8 * kMiB);
        // Position 0: the first 8 MiB. Past them the kernel may map the rest
        // of a large page-cache folio (2 MiB), nothing further.
        EXPECT_TRUE(waitMapped(bytes.data(), 8 * kMiB, 8 * kMiB / page));
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        EXPECT_EQ(mappedPages(bytes.data() + 10 * kMiB, 14 * kMiB), 0u);
        ahead.reached(16 * kMiB);  // now all of it
        EXPECT_TRUE(waitMapped(bytes.data() + 8 * kMiB, 16 * kMiB, 16 * kMiB / page));
    }
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()), content);
}
#endif

TEST_F(ReadAheadTest, StopsWhileWaitingForTheReaderAndReadsStayTheFiles) {
    const std::string content = patterned(20 * kMiB + 123);
    auto file = InputFile::open(write("input.bin", content));
    ASSERT_TRUE(file.ok()) << file.message();
    const std::span<const std::byte> bytes = (*file)->bytes();
    uint64_t sum = 0, expected = 0;
    {
        ReadAhead ahead(bytes, 4 * kMiB);
        for (size_t i = 0; i < bytes.size() / 2; ++i) {
            if (i % kMiB == 0) ahead.reached(i);
            sum += uint8_t(bytes[i]);
        }
        // Destroyed half way, with the thread waiting for the reader.
    }
    for (size_t i = 0; i < content.size() / 2; ++i) expected += uint8_t(content[i]);
    EXPECT_EQ(sum, expected);
    ReadAhead never_told(bytes, 1);  // destroyed at once
    ReadAhead empty(std::span<const std::byte>{}, 4 * kMiB);
}

}  // namespace
}  // namespace memscope
