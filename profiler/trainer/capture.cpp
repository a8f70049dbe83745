#include "capture.h"

#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>

namespace memscope::trainer {
namespace {

// c10's allocators (CPU and CUDA caching) call reportMemoryUsage for every
// allocation (size > 0) and free (size < 0) while this is installed as the
// thread's PROFILER_STATE debug info (REFERENCES.md §5).
class MemoryHook final : public c10::MemoryReportingInfoBase {
public:
    MemoryHook(AllocationLedger& ledger, const EpochClock& clock, CaptureOptions options)
        : ledger_(ledger), clock_(clock), options_(options) {}

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
        const int64_t t = clock_.now();
        const auto address = reinterpret_cast<uint64_t>(ptr);
        const int16_t dev = deviceOf(device);
        if (size > 0)
            ledger_.onAlloc(address, static_cast<uint64_t>(size), dev, t);
        else
            ledger_.onFree(address, static_cast<uint64_t>(-size), dev, t);
    }

    int16_t deviceOf(const c10::Device& d) const {
        if (d.is_cpu()) return options_.host_is_device0 ? 0 : -1;
        return static_cast<int16_t>(d.has_index() ? d.index() : 0);
    }

    AllocationLedger& ledger_;
    const EpochClock& clock_;
    CaptureOptions options_;
};

}  // namespace

struct CaptureScope::Impl {
    Impl(AllocationLedger& ledger, const EpochClock& clock, CaptureOptions options)
        : hook(std::make_shared<MemoryHook>(ledger, clock, options)),
          guard(c10::DebugInfoKind::PROFILER_STATE, hook) {}
    std::shared_ptr<MemoryHook> hook;
    c10::DebugInfoGuard guard;
};

CaptureScope::CaptureScope(AllocationLedger& ledger, const EpochClock& clock,
                           CaptureOptions options)
    : impl_(std::make_unique<Impl>(ledger, clock, options)) {}

CaptureScope::~CaptureScope() = default;

}  // namespace memscope::trainer
