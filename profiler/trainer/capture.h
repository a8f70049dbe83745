#pragma once
// Installs the trainer's memory capture: while a CaptureScope lives, every
// tensor allocation and free reaches the ledger. Torch-free interface.
//
// Two mechanisms, chosen per run:
//  - CPU runs wrap c10's CPU allocator (c10::SetAllocator): the wrapper
//    records the allocation and swaps its own deleter into the DataPtr, which
//    records the free and calls the original deleter. Nothing is allocated
//    and no lock is taken. c10's own memory reports (below) cost about as much
//    again as the whole recording: with reporting on, c10 keeps every CPU
//    pointer's size in a mutex-guarded hash map.
//  - CUDA runs (and a second capture while one is active) use c10's memory
//    reports: c10::MemoryReportingInfoBase as the thread's PROFILER_STATE
//    debug info, which the CPU and CUDA caching allocators call for every
//    allocation and free on this thread and the autograd threads that inherit
//    its thread-local state.

#include <memory>

#include "ledger.h"

namespace memscope::trainer {

struct CaptureOptions {
    // On a CPU run, host memory is "device 0" so the timeline shows one device;
    // on a CUDA run, host memory is -1 and each GPU its ordinal.
    bool host_is_device0 = true;
    // Only CPU memory matters (a CPU run): the allocator wrapper suffices.
    bool cpu_only = true;
};

class CaptureScope {
public:
    CaptureScope(AllocationLedger& ledger, CaptureOptions options);
    ~CaptureScope();
    CaptureScope(const CaptureScope&) = delete;
    CaptureScope& operator=(const CaptureScope&) = delete;

    // Which mechanism this scope uses (the benchmark prints it).
    bool wrapsCpuAllocator() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace memscope::trainer
