#include "memscope/base/page_warmer.h"

#include <algorithm>
#include <cstdint>
#include <system_error>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace memscope {
namespace {

#if defined(__linux__) && !defined(MADV_POPULATE_WRITE)
constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14; older headers lack it
#endif

constexpr size_t kPage = 4096;
// Small enough that stop() returns quickly, large enough that the system
// calls cost nothing beside the faults.
constexpr size_t kSlice = size_t(4) << 20;

// Whole pages inside the range: the pages at its edges may hold another
// object's bytes, which that object's writer faults in itself.
uintptr_t firstPage(const std::byte* p) {
    return (reinterpret_cast<uintptr_t>(p) + kPage - 1) & ~uintptr_t(kPage - 1);
}
uintptr_t endPage(const std::byte* p) {
    return reinterpret_cast<uintptr_t>(p) & ~uintptr_t(kPage - 1);
}

// False when the kernel cannot populate (then nothing more is tried).
bool populate(uintptr_t first, uintptr_t end) {
#ifdef __linux__
    return madvise(reinterpret_cast<void*>(first), end - first, MADV_POPULATE_WRITE) == 0;
#else
    (void)first;
    (void)end;
    return false;
#endif
}

}  // namespace

void PageWarmer::warm(std::vector<std::span<const std::byte>> ranges) {
    stop();
    size_t total = 0;
    for (const auto& r : ranges) total += r.size();
    if (total < kMinBytes) return;
    stop_ = false;
    try {
        thread_ = std::thread([this, ranges = std::move(ranges)] {
            for (const auto& r : ranges) {
                const uintptr_t end = endPage(r.data() + r.size());
                for (uintptr_t at = firstPage(r.data()); at < end; at += kSlice) {
                    if (stop_.load(std::memory_order_relaxed)) return;
                    if (!populate(at, std::min<uintptr_t>(end, at + kSlice))) return;
                }
            }
        });
    } catch (const std::system_error&) {
        // No thread: the writer faults its pages in itself.
    }
}

void PageWarmer::stop() {
    stop_ = true;
    wait();
}

void PageWarmer::wait() {
    if (thread_.joinable()) thread_.join();
}

}  // namespace memscope
