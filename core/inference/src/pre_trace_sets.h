#pragma once
// Blocks alive from before the trace (history switched on after warm-up:
// parameters, the optimizer's state, gradients kept by zero_grad), without
// frames or an allocation in the trace, told apart by the training's
// structure: the gradients' sizes and the optimizer's class.

#include <vector>

#include "memscope/model/trace.h"

namespace memscope::detail {

class TrainingActivity;

// Rewrites the entries of `blocks` (one per allocator_state block, as
// inferBlockCategories gave them) that are frameless and AliveThroughout:
// each gradient the trace shows (born in backward, or freed by zero_grad)
// stands for a parameter of its size, and the frameless blocks of a size come
// in sets of 1, 2 or 3 per gradient (parameter, momentum, Adam's two
// moments), the multiplicity most bytes agree on; without gradients, sets of
// parameter, gradient and the optimizer's tensors where its class is named.
// What fits no set stays unknown; a trace with neither gradients nor the
// optimizer's recorded ranges keeps them (parameters: weights of inference).
// `trace.inferred_categories` must be filled.
void splitPreTraceSets(const Trace& trace, TrainingActivity& activity,
                       std::vector<InferredCategory>& blocks);

}  // namespace memscope::detail
