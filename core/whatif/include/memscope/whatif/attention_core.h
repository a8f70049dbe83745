#pragma once
// A layer's attention core, the part Megatron's selective recomputation
// (--recompute-granularity selective) recomputes: the scores matmul, scale,
// mask, softmax, dropout and the weighted-sum matmul. Found from the ops
// that ran in the layer's forward, not from what its modules are called.

#include <cstdint>
#include <optional>
#include <string>

#include "memscope/whatif/op_index.h"

namespace memscope {

struct AttentionCore {
    int64_t start = 0, end = 0;  // [start, end) within the layer's forward
    std::string ops;             // how it was found: "aten::bmm … aten::_softmax … aten::bmm"
};

// The first attention core in [start, end):
//  - the trainer's "attention" op phase;
//  - else a scaled-dot-product-attention op (flash, efficient, math), the
//    outermost call;
//  - else the span from the last matmul-kind op (bmm, matmul, mm, baddbmm)
//    that began before the first softmax (the one whose output feeds it)
//    through the first matmul-kind op after the softmax, each taken as its
//    outermost matmul-kind call.
// nullopt when the window has no softmax and no attention op.
std::optional<AttentionCore> attentionCoreIn(const OpIndex& ops, int64_t start, int64_t end);

}  // namespace memscope
