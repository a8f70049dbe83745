#pragma once
// The optional CUPTI callback subscriber (only one per process, so opt-in):
// host stacks at allocation calls, and the virtual-memory calls behind
// PyTorch's expandable segments, which have no activity record.

#include "memscope/base/result.h"
#include "options.h"

namespace memscope::cupti {

// Subscribes when the options ask for it; the error says why it could not
// (the tracer then records without stacks / virtual-memory calls).
Result<void> startApiCallbacks(const TracerOptions& options);

}  // namespace memscope::cupti
