#pragma once
// The two reference models, written with raw tensors rather than torch::nn so
// that exactly the tensors the activation formulas count are the ones autograd
// saves (REFERENCES.md §4). Every random draw takes an explicit generator, so
// parameters, data and dropout masks are identical under every policy.

#include <memory>
#include <string>
#include <vector>

#include "checkpoint.h"
#include "config.h"
#include "run_context.h"
#include "torch_api.h"

namespace memscope::trainer {

struct NamedParameter {
    std::string name;
    at::Tensor tensor;
};

struct Batch {
    at::Tensor input;
    at::Tensor target;
};

class Model {
public:
    virtual ~Model() = default;
    const std::vector<NamedParameter>& parameters() const { return params_; }
    // Model constants that are not trained (gpt's causal mask).
    const std::vector<at::Tensor>& buffers() const { return buffers_; }
    // The batch of step `step`: a pure function of (seed, step).
    virtual Batch makeBatch(int step) const = 0;
    // Forward pass to the scalar loss. `dropout` is advanced exactly as under
    // every other policy; checkpointed regions replay it in backward.
    virtual at::Tensor loss(const Batch& batch, const Policy& policy, at::Generator& dropout,
                            RunContext& ctx) const = 0;

protected:
    // The blocks under `policy`, cut into segments by segmentPlan: plain
    // blocks, one checkpointed region per block (block, save:OPS), or
    // checkpointed runs of blocks (sqrt, segments:K). Each block runs inside a
    // Block phase.
    at::Tensor runBlocks(at::Tensor x, const Policy& policy, at::Generator& dropout,
                         RunContext& ctx) const;
    virtual int64_t layers() const = 0;
    // Block i's inputs: its activation, then its parameters.
    virtual std::vector<at::Tensor> blockInputs(int64_t i, const at::Tensor& x) const = 0;
    // Block i on `in` (blockInputs' layout); `selective` for the policy of that
    // name; `cache` for save:OPS (null otherwise).
    virtual at::Tensor block(int64_t i, const std::vector<at::Tensor>& in, at::Generator& dropout,
                             RunContext& ctx, bool selective, OpCache* cache) const = 0;

    std::vector<NamedParameter> params_;
    std::vector<at::Tensor> buffers_;
};

std::unique_ptr<Model> makeModel(const ModelConfig& config, uint64_t seed,
                                 const at::Device& device);

// Dropout with a 1-byte (bool) mask drawn from `gen`: autograd saves only the
// mask, as the activation formulas assume.
at::Tensor dropout(const at::Tensor& x, double p, at::Generator& gen);

}  // namespace memscope::trainer
