#pragma once
// Activation checkpointing for LibTorch, which has no torch.utils.checkpoint: a
// custom autograd Function that runs a region without saving its intermediates,
// keeps only the region's inputs (and a copy of the dropout generator), and in
// backward re-runs the region with autograd on and differentiates it.

#include <functional>
#include <string>
#include <vector>

#include "run_context.h"
#include "torch_api.h"

namespace memscope::trainer {

// A region: inputs[0] is the activation entering it, the rest its parameters
// (passed as inputs so their gradients flow through the Function).
using RegionFn =
    std::function<at::Tensor(const std::vector<at::Tensor>& inputs, at::Generator& dropout)>;

struct CheckpointLabel {
    std::string name;  // e.g. "block 3", "attention 3"
    int block = -1;
    bool block_phase = false;  // open a Block phase around the backward (whole-block policy)
};

at::Tensor checkpoint(RegionFn fn, const std::vector<at::Tensor>& inputs, at::Generator& dropout,
                      RunContext& ctx, CheckpointLabel label);

}  // namespace memscope::trainer
