#pragma once
// Activation checkpointing for LibTorch, which has no torch.utils.checkpoint: a
// custom autograd Function that runs a region without saving its intermediates,
// keeps only the region's inputs (and a copy of the dropout generator), and in
// backward re-runs the region with autograd on and differentiates it.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "run_context.h"
#include "torch_api.h"

namespace memscope::trainer {

// The op-level save list of a checkpointed region (policy save:OPS, PyTorch's
// selective activation checkpointing): while the region runs in forward, the
// ops of the kinds in `kinds` store their outputs here; when backward re-runs
// the region, those ops take their stored output instead of computing it
// (savedLinear, keptOp). Entries are consumed in order and released as the
// recomputation takes them.
struct OpCache {
    struct Entry;
    uint32_t kinds = 0;  // SaveOp bits
    bool replaying = false;
    size_t next = 0;
    std::vector<std::shared_ptr<Entry>> entries;
};

// A region: inputs[0] is the activation entering it, the rest its parameters
// (passed as inputs so their gradients flow through the Function). `cache`
// is null unless the policy keeps ops.
using RegionFn = std::function<at::Tensor(const std::vector<at::Tensor>& inputs,
                                          at::Generator& dropout, OpCache* cache)>;

struct CheckpointLabel {
    std::string name;  // e.g. "block 3", "attention 3"
    int block = -1;
    bool block_phase = false;  // open a Block phase around the backward (whole-block policy)
};

// `save_ops`: SaveOp bits kept by the region (0: recompute everything).
at::Tensor checkpoint(RegionFn fn, const std::vector<at::Tensor>& inputs, at::Generator& dropout,
                      RunContext& ctx, CheckpointLabel label, uint32_t save_ops = 0);

// at::linear(a, w, b) for a 3-D contiguous `a` (the model's only case), an op
// of kind kSaveMatmul: with a cache keeping matmuls, forward stores the
// output and the recomputation returns it, with a backward computing what
// LibTorch's addmm derivative computes from the recomputed `a`.
at::Tensor savedLinear(const at::Tensor& a, const at::Tensor& w, const at::Tensor& b,
                       OpCache* cache);

// An op of kind `kind` with one tensor input that a keeping cache never
// recomputes: forward runs it with autograd on (so it keeps what its own
// backward needs) and stores it with the dropout generator's state after it;
// the recomputation returns the stored output, restores the generator, and
// backward differentiates the stored graph.
using UnaryOp = std::function<at::Tensor(const at::Tensor& input, at::Generator& dropout)>;
at::Tensor keptOp(const UnaryOp& op, const at::Tensor& input, at::Generator& dropout,
                  OpCache* cache, uint32_t kind);

}  // namespace memscope::trainer
