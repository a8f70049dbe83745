#pragma once
// Installs the trainer's memory hook: while a CaptureScope lives, every tensor
// allocation and free on this thread (and on the autograd threads that inherit
// its thread-local state) reaches the ledger. Torch-free interface.

#include <memory>

#include "clock.h"
#include "ledger.h"

namespace memscope::trainer {

struct CaptureOptions {
    // On a CPU run, host memory is "device 0" so the timeline shows one device;
    // on a CUDA run, host memory is -1 and each GPU its ordinal.
    bool host_is_device0 = true;
};

class CaptureScope {
public:
    CaptureScope(AllocationLedger& ledger, const EpochClock& clock, CaptureOptions options);
    ~CaptureScope();
    CaptureScope(const CaptureScope&) = delete;
    CaptureScope& operator=(const CaptureScope&) = delete;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace memscope::trainer
