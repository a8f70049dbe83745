#pragma once
// Each allocation's category from its frames and its lifetime relative to the
// trace's steps and phases (the rules are CategoryRule's).

#include <cstdint>
#include <vector>

#include "memscope/model/trace.h"

namespace memscope::detail {

class TrainingActivity;

// One per event of the trace: for each Alloc (and each FreeCompleted that
// frees memory allocated before the trace began), the inferred category;
// `free_of[i]` is the free ending alloc i or kNoEvent; `ghost_free[i]` marks
// the frees of such earlier allocations. Events with a recorded category get
// rule Recorded.
std::vector<InferredCategory> inferCategories(const Trace& trace,
                                              const std::vector<uint64_t>& free_of,
                                              const std::vector<uint8_t>& ghost_free,
                                              TrainingActivity& activity);

}  // namespace memscope::detail
