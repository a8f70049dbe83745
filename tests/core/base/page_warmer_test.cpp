// PageWarmer: the pages of a range become resident without any byte of it
// changing, even while another thread writes there; small ranges are left
// alone; unfilled() names exactly the reserved room.
#include "memscope/base/page_warmer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace memscope {
namespace {

#ifdef __linux__
// Resident pages of [p, p + bytes), whole pages only.
size_t residentPages(const void* p, size_t bytes) {
    const auto page = uintptr_t(sysconf(_SC_PAGESIZE));
    const uintptr_t first = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
    const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(page - 1);
    if (end <= first) return 0;
    std::vector<unsigned char> in((end - first) / page);
    if (mincore(reinterpret_cast<void*>(first), end - first, in.data()) != 0) return SIZE_MAX;
    size_t n = 0;
    for (unsigned char c : in) n += c & 1;
    return n;
}

// A private anonymous mapping: fresh pages, none resident until touched.
struct Fresh {
    explicit Fresh(size_t n) : bytes(n) {
        void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        data = p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
    }
    ~Fresh() {
        if (data) munmap(data, bytes);
    }
    std::byte* data;
    size_t bytes;
};

bool kernelPopulates() {
    Fresh f(size_t(1) << 16);
    return f.data && madvise(f.data, f.bytes, 23 /* MADV_POPULATE_WRITE */) == 0;
}

TEST(PageWarmer, WarmsEveryPageOfALargeRange) {
    if (!kernelPopulates()) GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE (Linux < 5.14)";
    const size_t bytes = size_t(48) << 20;
    Fresh f(bytes);
    ASSERT_NE(f.data, nullptr);
    const size_t pages = bytes / size_t(sysconf(_SC_PAGESIZE));
    ASSERT_EQ(residentPages(f.data, bytes), 0u);
    PageWarmer w;
    w.warm({std::span<const std::byte>(f.data, bytes)});
    w.wait();
    EXPECT_EQ(residentPages(f.data, bytes), pages);
    // Populated pages read as zeros, as fresh memory does.
    for (size_t i = 0; i < bytes; i += 4093) ASSERT_EQ(f.data[i], std::byte{0}) << i;
}

TEST(PageWarmer, LeavesSmallRangesToTheWriter) {
    const size_t bytes = PageWarmer::kMinBytes / 2;
    Fresh f(bytes);
    ASSERT_NE(f.data, nullptr);
    PageWarmer w;
    w.warm({std::span<const std::byte>(f.data, bytes)});
    w.wait();
    EXPECT_EQ(residentPages(f.data, bytes), 0u);
}
#endif

// The writer appends into the room the warmer works on: every value it
// wrote is still there afterwards, whichever of the two reached a page first.
TEST(PageWarmer, NeverChangesWhatAWriterWritesMeanwhile) {
    constexpr size_t kCount = size_t(6) << 20;  // 48 MB of uint64_t
    std::vector<uint64_t> v;
    v.reserve(kCount);
    v.push_back(0x5eed);
    PageWarmer w;
    w.warm({PageWarmer::unfilled(v, kCount)});
    for (size_t i = 1; i < kCount; ++i) v.push_back(i * 0x9E3779B97F4A7C15ull);
    w.stop();
    ASSERT_EQ(v[0], 0x5eedu);
    for (size_t i = 1; i < kCount; ++i) ASSERT_EQ(v[i], i * 0x9E3779B97F4A7C15ull) << i;
}

// Pages already written and then warmed keep their bytes: the warmer maps
// pages, it never writes to them.
TEST(PageWarmer, KeepsTheBytesOfPagesAlreadyWritten) {
    constexpr size_t kCount = size_t(4) << 20;  // 32 MB
    std::vector<uint64_t> v(kCount);
    for (size_t i = 0; i < kCount; ++i) v[i] = ~i;
    PageWarmer w;
    w.warm({std::as_bytes(std::span(v))});
    w.wait();
    for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(v[i], ~i) << i;
}

TEST(PageWarmer, UnfilledIsTheRoomBetweenSizeAndTheLimit) {
    std::vector<uint32_t> v;
    v.reserve(100);
    v.resize(10);
    const std::span<const std::byte> room = PageWarmer::unfilled(v, 50);
    EXPECT_EQ(room.data(), reinterpret_cast<const std::byte*>(v.data() + 10));
    EXPECT_EQ(room.size(), 40 * sizeof(uint32_t));
    EXPECT_EQ(PageWarmer::unfilled(v, 1000).size(), 90 * sizeof(uint32_t));  // capped at capacity
    EXPECT_TRUE(PageWarmer::unfilled(v, 5).empty());
    // Stopping a warmer that never started, twice, is fine.
    PageWarmer idle;
    idle.stop();
    idle.stop();
}

}  // namespace
}  // namespace memscope
