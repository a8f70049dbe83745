#pragma once
// Guesses a phase's kind (and training step) from its NVTX range name, so that
// `range_push("step 3")`, "forward", "backward" and "optimizer" ranges show as
// training phases rather than anonymous ranges.

#include <cstdint>
#include <string_view>

#include "memscope/model/trace.h"

namespace memscope::cupti {

struct PhaseGuess {
    PhaseKind kind = PhaseKind::Range;
    int32_t step = -1;
};

PhaseGuess classifyPhaseName(std::string_view name);

}  // namespace memscope::cupti
