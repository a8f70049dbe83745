#pragma once
// Adam, written with the foreach kernels so that the ordinary step has the
// memory profile of PyTorch's default (foreach) Adam: its scratch tensors for
// all parameters exist at once. The in-backward variant runs the very same
// kernels on one parameter at a time from a post hook on the parameter's
// gradient accumulator, then frees the gradient (REFERENCES.md §4).

#include <memory>
#include <vector>

#include "model.h"
#include "run_context.h"
#include "torch_api.h"

namespace memscope::trainer {

struct AdamOptions {
    double lr = 1e-3;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
};

class Adam {
public:
    Adam(const std::vector<NamedParameter>& params, AdamOptions options, RunContext& ctx);
    ~Adam();

    // Step on every parameter that has a gradient, then free the gradients.
    void step();
    // Tags every gradient's storage; call when backward has accumulated them.
    void tagGradients();
    // From now on each parameter is updated, and its gradient freed, as soon as
    // backward has accumulated it.
    void runInBackward();

    // Called by the hook.
    void onGradientReady(size_t index);

private:
    void ensureState(size_t index);
    void update(const std::vector<size_t>& indexes);

    std::vector<NamedParameter> params_;
    AdamOptions options_;
    RunContext& ctx_;
    std::vector<at::Tensor> exp_avg_, exp_avg_sq_;
    std::vector<int64_t> steps_;
    // The parameter holds its accumulator only weakly: without these strong
    // references the node, and the hook with it, would silently disappear.
    std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
};

}  // namespace memscope::trainer
