#pragma once
// Which threads are inside a report, without an atomic read-modify-write on
// the reporting side.
//
// Why: a locked instruction waits for every store before it to reach the
// cache. The report's last stores (the log record) usually miss, because the
// ledger's thread read that memory last, so a shared in-flight counter
// decremented after them stalled the training thread for most of the hook's
// cost (perf: two thirds of the report's samples, right after the `lock sub`).
//
// How: each reporting thread owns a flag of its own and sets it with plain
// stores. The side that must wait (the end of a capture, once) pays instead:
// after it withdraws the target, a process-wide barrier (membarrier(2),
// private expedited) orders every running thread's earlier stores, and then
// it waits for every flag to clear. This is the asymmetric Dekker pattern of
// folly's hazard pointers and RCU. Where membarrier is unavailable (old
// kernels, seccomp), both sides fall back to a full fence.
//
// Threads beyond the fixed number of flags share one atomic counter (the
// previous mechanism): correct, only slower.

#include <atomic>
#include <cstddef>

namespace memscope::trainer {

class ReportingThreads {
public:
    // Registers the process for the fast barrier; idempotent. False when the
    // fallback (full fences) is in use.
    static bool enableFastBarrier();
    // Whether it is in use (reporters of their own then need only a
    // compiler fence between their flag's store and their loads).
    static bool fastBarrier() { return fast_.load(std::memory_order_relaxed); }

    // The reporting side, around any use of what the waiting side withdraws.
    // Reentrant on a thread. No read-modify-write on a thread with a flag.
    static void enter() {
        Flag* f = tl_flag_;
        if (f == nullptr && (tl_shared_ || (f = claimFlag()) == nullptr)) {
            shared_busy_.fetch_add(1);  // seq_cst: ordered before the caller's loads
            return;
        }
        // Only this thread writes its flag: a plain increment.
        f->busy.store(f->busy.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        // The store above before the caller's loads: free of cost when the
        // waiting side's membarrier does the ordering.
        if (fast_.load(std::memory_order_relaxed))
            std::atomic_signal_fence(std::memory_order_seq_cst);
        else
            std::atomic_thread_fence(std::memory_order_seq_cst);
    }
    static void leave() {
        Flag* f = tl_flag_;
        if (f == nullptr) {
            shared_busy_.fetch_sub(1, std::memory_order_release);
            return;
        }
        // Release: the report's work is done before the waiting side sees 0.
        f->busy.store(f->busy.load(std::memory_order_relaxed) - 1, std::memory_order_release);
    }

    // The waiting side: call after withdrawing what reporters load (so that
    // new reports see it gone); returns when no report that could have seen
    // it is still running.
    static void waitForReporters();

private:
    struct alignas(64) Flag {
        std::atomic<int> busy{0};
    };
    static constexpr size_t kFlags = 512;
    static Flag flags_[kFlags];
    static std::atomic<size_t> flags_used_;
    static std::atomic<int> shared_busy_;  // threads without a flag of their own
    static std::atomic<bool> fast_;
    // constinit: other files then read them straight from the thread's
    // storage, without a check for an initialization function first.
    static constinit thread_local Flag* tl_flag_;
    static constinit thread_local bool tl_shared_;  // this thread found no free flag
    static Flag* claimFlag();
};

// RAII form of enter/leave.
class ReportGuard {
public:
    ReportGuard() { ReportingThreads::enter(); }
    ~ReportGuard() { ReportingThreads::leave(); }
    ReportGuard(const ReportGuard&) = delete;
    ReportGuard& operator=(const ReportGuard&) = delete;
};

}  // namespace memscope::trainer
