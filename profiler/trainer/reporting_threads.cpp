#include "reporting_threads.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace memscope::trainer {

ReportingThreads::Flag ReportingThreads::flags_[kFlags];
std::atomic<size_t> ReportingThreads::flags_used_{0};
std::atomic<int> ReportingThreads::shared_busy_{0};
std::atomic<bool> ReportingThreads::fast_{false};
constinit thread_local ReportingThreads::Flag* ReportingThreads::tl_flag_ = nullptr;
constinit thread_local bool ReportingThreads::tl_shared_ = false;

namespace {

long membarrier(int cmd) {
    return syscall(__NR_membarrier, cmd, 0U, 0);
}

}  // namespace

bool ReportingThreads::enableFastBarrier() {
    if (fast_.load()) return true;
    // Registration is per process and idempotent; it fails on kernels before
    // 4.14 and where a seccomp filter forbids the call.
    const long supported = membarrier(MEMBARRIER_CMD_QUERY);
    if (supported < 0 || !(supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return false;
    if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0) return false;
    fast_.store(true);
    return true;
}

ReportingThreads::Flag* ReportingThreads::claimFlag() {
    // Flags are never given back: a thread that ends leaves its flag at 0,
    // which the waiting side passes over.
    const size_t i = flags_used_.fetch_add(1);
    if (i >= kFlags) {
        tl_shared_ = true;
        return nullptr;
    }
    tl_flag_ = &flags_[i];
    return tl_flag_;
}

void ReportingThreads::waitForReporters() {
    // Every thread's flag store before its load of what was withdrawn, or
    // that load after the withdrawal (see the header).
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (fast_.load() && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) {
        // Cannot happen once registered; should it, reporters get full fences
        // from now on, and a store a reporter made before its compiler-only
        // fence leaves its store buffer well within a millisecond.
        fast_.store(false);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const size_t used = std::min(flags_used_.load(), kFlags);
    for (size_t i = 0; i < used; ++i)
        while (flags_[i].busy.load(std::memory_order_acquire) != 0) std::this_thread::yield();
    while (shared_busy_.load() != 0) std::this_thread::yield();
}

}  // namespace memscope::trainer
