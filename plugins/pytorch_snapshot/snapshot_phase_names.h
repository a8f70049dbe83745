#pragma once
// What a phase's name says of it, as the snapshot importer reads the names of
// its external_annotations ranges.

#include <cstdint>
#include <string_view>

#include "memscope/model/trace.h"

namespace memscope::pytorch_snapshot {

// What a phase's name says of it: "step 3" / "ProfilerStep#3" (Step, step 3),
// "forward", "backward", "optimizer..." (and memscope-train's "adam <param>"),
// "recompute ...", "block 3" (Block, block 3); anything else is a Range. Only
// the last " / " component of the name counts.
struct PhaseGuess {
    PhaseKind kind = PhaseKind::Range;
    int32_t step = -1;
    int32_t block = -1;
};
PhaseGuess classifyPhase(std::string_view name);

}  // namespace memscope::pytorch_snapshot
