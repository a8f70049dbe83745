#pragma once
// What the Python hook knew the tensors it saw to be: parameters and buffers,
// gradients, optimizer state and inputs, by storage address (log.jsonl's
// "tensor_roles" records; schema: docs/HOOK_FORMAT.md). The merge labels the
// allocation holding each address with the role, as a recorded category
// (Event::category): inference then leaves it alone, and the reports say
// "recorded" for it.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "memscope/model/trace.h"
#include "memscope/recording/hook_sidecar.h"

namespace memscope {

// A label made just before its allocation's event (the CUDA allocator's
// history runs on an approximate clock that may lag the hook's) still
// finds the allocation born this soon after it.
inline constexpr int64_t kTensorRoleSlackNs = 1'000'000;

struct TensorRoleStats {
    size_t labels = 0;       // labels given
    size_t allocations = 0;  // allocations (or frees of ones from before the trace) labelled
    size_t unplaced = 0;     // labels whose address no allocation held then: dropped
    size_t conflicting = 0;  // labels of an allocation already labelled otherwise: the first kept
};

// For each label, the allocation on its device alive at its time, or born at
// most kTensorRoleSlackNs later, whose [address, address + size) holds
// [label address, + bytes) gets the role as its category, on its alloc event
// and its free events. An allocation from before the trace (a free without
// alloc) is labelled on its free. Events whose category was already recorded
// keep it; the first label of an allocation wins. `trace.events` in merged
// (time) order.
TensorRoleStats labelTensorRoles(Trace& trace, std::vector<HookTensorRole> labels);

}  // namespace memscope
