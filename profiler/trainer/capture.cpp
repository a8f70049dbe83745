#include "capture.h"

#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <atomic>
#include <optional>
#include <thread>

#include "reporting_threads.h"

namespace memscope::trainer {
namespace {

// --- c10's memory reports (CUDA runs) ---------------------------------------

// c10's allocators (CPU and CUDA caching) call reportMemoryUsage for every
// allocation (size > 0) and free (size < 0) while this is installed as the
// thread's PROFILER_STATE debug info (REFERENCES.md §5).
class MemoryHook final : public c10::MemoryReportingInfoBase {
public:
    MemoryHook(AllocationLedger& ledger, CaptureOptions options)
        : ledger_(ledger), options_(options) {}

    // The totals' types differ between LibTorch 1.x (int64_t) and 2.x
    // (size_t); exactly one of these overrides the base, whichever LibTorch
    // this is built against (hence no `override`).
    void reportMemoryUsage(void* ptr, int64_t size, int64_t /*total_allocated*/,
                           int64_t /*total_reserved*/, c10::Device device) {
        record(ptr, size, device);
    }
    void reportMemoryUsage(void* ptr, int64_t size, size_t /*total_allocated*/,
                           size_t /*total_reserved*/, c10::Device device) {
        record(ptr, size, device);
    }

    bool memoryProfilingEnabled() const override { return true; }

private:
    void record(void* ptr, int64_t size, const c10::Device& device) {
        if (size == 0 || ptr == nullptr) return;
        const auto address = reinterpret_cast<uint64_t>(ptr);
        const int16_t dev = deviceOf(device);
        if (size > 0)
            ledger_.onAllocNow(address, static_cast<uint64_t>(size), dev);
        else
            ledger_.onFreeNow(address, static_cast<uint64_t>(-size), dev);
    }

    int16_t deviceOf(const c10::Device& d) const {
        if (d.is_cpu()) return options_.host_is_device0 ? 0 : -1;
        return static_cast<int16_t>(d.has_index() ? d.index() : 0);
    }

    AllocationLedger& ledger_;
    CaptureOptions options_;
};

// --- the CPU allocator wrapper (CPU runs) -----------------------------------

// The capture the wrapper reports to. Deleters of tensors allocated while
// recording run for as long as those tensors live, on any thread: they read
// the target inside ReportingThreads' enter/leave, and the scope's end waits
// for reports that may have seen it before its ledger may go away.
struct WrapperTarget {
    AllocationLedger* ledger = nullptr;
    int16_t device = 0;
};
std::atomic<const WrapperTarget*> g_target{nullptr};
// The deleter of the wrapped allocator's DataPtrs (the same function for every
// allocation of c10's default CPU allocator), set by the first allocation.
std::atomic<c10::DeleterFnPtr> g_inner_deleter{nullptr};

// The ledger owner's own route to its ledger, one thread-local cache line:
// the training thread reports nearly every event, and between two reports
// the kernels it runs evict what the general path below reads (the shared
// target, the target's ledger and device, the thread's reporting flag, the
// ledger's check of the calling thread), a cache miss each. Set by the scope
// on the thread that made it, when that thread owns the ledger.
//
// The scope's end withdraws it like the target, from whichever thread: it
// clears `ledger`, and (after ReportingThreads' barrier) waits for `busy`,
// which only this thread sets, with plain stores.
struct OwnerRoute {
    std::atomic<AllocationLedger*> ledger{nullptr};
    std::atomic<int> busy{0};
    int16_t device = 0;
    bool fast_barrier = false;  // ReportingThreads' membarrier is in use
};
constinit thread_local OwnerRoute tl_route;

// Whether the owner's route took the report.
bool reportByRoute(void* ptr, uint64_t size, bool is_free) {
    OwnerRoute& route = tl_route;
    if (route.ledger.load(std::memory_order_relaxed) == nullptr) return false;
    route.busy.store(1, std::memory_order_relaxed);
    // The store above before the load below (ReportingThreads::enter's reasoning).
    if (route.fast_barrier)
        std::atomic_signal_fence(std::memory_order_seq_cst);
    else
        std::atomic_thread_fence(std::memory_order_seq_cst);
    AllocationLedger* ledger = route.ledger.load(std::memory_order_relaxed);
    if (ledger != nullptr) {
        const auto address = reinterpret_cast<uint64_t>(ptr);
        if (is_free)
            ledger->onFreeOwnedNow(address, size, route.device);
        else
            ledger->onAllocOwnedNow(address, size, route.device);
    }
    route.busy.store(0, std::memory_order_release);
    return ledger != nullptr;
}

void report(void* ptr, uint64_t size, bool is_free) {
    if (reportByRoute(ptr, size, is_free)) return;
    ReportGuard guard;
    if (const WrapperTarget* t = g_target.load(std::memory_order_acquire)) {
        const auto address = reinterpret_cast<uint64_t>(ptr);
        if (is_free)
            t->ledger->onFreeNow(address, size, t->device);
        else
            t->ledger->onAllocNow(address, size, t->device);
    }
}

// The free's size is not at hand here: the ledger takes it from the
// allocation it matches (size 0 = look it up).
void recordingDelete(void* ctx) {
    // c10 may hand a deleter a null context (an emptied DataPtr): nothing to record.
    if (ctx != nullptr) report(ctx, 0, true);
    g_inner_deleter.load(std::memory_order_acquire)(ctx);
}

class RecordingCpuAllocator final : public c10::Allocator {
public:
    explicit RecordingCpuAllocator(c10::Allocator* inner) : inner_(inner) {}
    c10::Allocator* inner() const { return inner_; }

    c10::DataPtr allocate(size_t n) const override {
        c10::DataPtr p = inner_->allocate(n);
        // Only a DataPtr whose context is its data (c10's default CPU
        // allocator) can have its deleter swapped without a context of our
        // own; anything else passes through unrecorded, alloc and free alike.
        if (n == 0 || p.get() == nullptr || p.get_context() != p.get()) return p;
        c10::DeleterFnPtr deleter = p.get_deleter();
        c10::DeleterFnPtr known = g_inner_deleter.load(std::memory_order_acquire);
        // Set once; a compare-exchange on every allocation would be a locked
        // instruction on the hot path.
        if (known == nullptr && !g_inner_deleter.compare_exchange_strong(known, deleter))
            known = g_inner_deleter.load(std::memory_order_acquire);
        if (known == nullptr) known = deleter;
        if (deleter != known || !p.compare_exchange_deleter(deleter, &recordingDelete)) return p;
        report(p.get(), n, false);
        return p;
    }
    // raw_allocate / raw_deallocate pair through the same deleter.
    c10::DeleterFnPtr raw_deleter() const override {
        return inner_->raw_deleter() ? &recordingDelete : nullptr;
    }

private:
    c10::Allocator* inner_;
};

}  // namespace

struct CaptureScope::Impl {
    std::shared_ptr<MemoryHook> hook;
    std::optional<c10::DebugInfoGuard> guard;
    WrapperTarget target;
    c10::Allocator* replaced = nullptr;  // the allocator the wrapper stands in for
    OwnerRoute* route = nullptr;         // the making thread's, when it owns the ledger

    Impl(AllocationLedger& ledger, CaptureOptions options) {
        if (options.cpu_only && installWrapper(ledger, options)) return;
        hook = std::make_shared<MemoryHook>(ledger, options);
        guard.emplace(c10::DebugInfoKind::PROFILER_STATE, hook);
    }

    bool installWrapper(AllocationLedger& ledger, CaptureOptions options) {
        target = WrapperTarget{&ledger, static_cast<int16_t>(options.host_is_device0 ? 0 : -1)};
        ReportingThreads::enableFastBarrier();
        const WrapperTarget* none = nullptr;
        if (!g_target.compare_exchange_strong(none, &target)) return false;  // one at a time
        c10::Allocator* current = c10::GetAllocator(c10::DeviceType::CPU);
        // One wrapper for the process, around the allocator found first:
        // DataPtrs made by it may outlive any scope.
        static RecordingCpuAllocator wrapper(current);
        if (current != &wrapper && current != wrapper.inner()) {
            g_target.store(nullptr);  // someone else replaced the CPU allocator
            return false;
        }
        c10::SetAllocator(c10::DeviceType::CPU, &wrapper);
        if (c10::GetAllocator(c10::DeviceType::CPU) != &wrapper) {  // a higher priority holds it
            g_target.store(nullptr);
            return false;
        }
        replaced = wrapper.inner();
        if (ledger.ownedByCallingThread()) {
            route = &tl_route;
            route->device = target.device;
            route->fast_barrier = ReportingThreads::fastBarrier();
            route->ledger.store(&ledger, std::memory_order_release);
        }
        return true;
    }

    ~Impl() {
        if (!replaced) return;  // the hook's guard restores the debug info itself
        c10::SetAllocator(c10::DeviceType::CPU, replaced);
        if (route) route->ledger.store(nullptr, std::memory_order_relaxed);
        g_target.store(nullptr);  // later reports see neither...
        // ...and reports that saw them have finished with the ledger. (The
        // thread that made the scope must outlive it: its route lives in
        // that thread's storage.)
        ReportingThreads::waitForReporters();
        if (route)
            while (route->busy.load(std::memory_order_acquire) != 0) std::this_thread::yield();
    }
};

CaptureScope::CaptureScope(AllocationLedger& ledger, CaptureOptions options)
    : impl_(std::make_unique<Impl>(ledger, options)) {}

CaptureScope::~CaptureScope() = default;

bool CaptureScope::wrapsCpuAllocator() const {
    return impl_->replaced != nullptr;
}

}  // namespace memscope::trainer
