#pragma once
// Faults in fresh pages on a thread of its own, ahead of the thread that
// will fill them. A large load writes a gigabyte of fresh memory (the
// events, the unpickler's memo, the timeline's intervals and series), and
// on a virtual machine each first touch of a page costs microseconds: a
// third of a 1 GB snapshot's import and timeline build went to the kernel,
// on one core while the other waited. The pages are populated with
// madvise(MADV_POPULATE_WRITE), which maps them writable without writing
// to them, so the warmer never races with the writer over their contents:
// a page the writer reached first is skipped for free.
//
// Where the kernel lacks MADV_POPULATE_WRITE (before Linux 5.14) or the
// thread cannot start, warm() does nothing and the writer faults its pages
// itself, as before.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <span>
#include <thread>
#include <vector>

namespace memscope {

class PageWarmer {
public:
    // Ranges smaller than this are left to the writer: a thread costs more.
    static constexpr size_t kMinBytes = size_t(8) << 20;

    PageWarmer() = default;
    PageWarmer(const PageWarmer&) = delete;
    PageWarmer& operator=(const PageWarmer&) = delete;
    ~PageWarmer() { stop(); }

    // Stops any warming in progress, then populates these ranges in order,
    // a few MiB at a time, until done or stopped.
    void warm(std::vector<std::span<const std::byte>> ranges);
    // Returns once the thread has stopped (within one slice of work).
    void stop();
    // Returns once every page is warm (or the kernel declined).
    void wait();

    // The bytes of `v`'s capacity from its end up to element `upto`: what a
    // reserve() made room for that the writer has not reached yet.
    template <class Vector>
    static std::span<const std::byte> unfilled(const Vector& v, size_t upto) {
        const size_t end = std::min(upto, v.capacity());
        if (end <= v.size()) return {};
        const auto* begin = reinterpret_cast<const std::byte*>(v.data() + v.size());
        return {begin, (end - v.size()) * sizeof(*v.data())};
    }

private:
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

}  // namespace memscope
