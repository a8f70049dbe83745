#include "checkpoint.h"

#include <mutex>

namespace memscope::trainer {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// What backward needs besides the saved inputs; carried in the autograd
// context as a capsule (the context only stores IValues).
struct Region : torch::CustomClassHolder {
    RegionFn fn;
    at::Generator rng;  // the dropout generator as it was when the region ran
    RunContext* ctx = nullptr;
    CheckpointLabel label;
};

struct CheckpointFunction : torch::autograd::Function<CheckpointFunction> {
    static at::Tensor forward(AutogradContext* actx, c10::intrusive_ptr<Region> region,
                              at::TensorList inputs, at::Generator* dropout) {
        // Apply() runs this with grad mode off: nothing inside is saved.
        std::vector<at::Tensor> in(inputs.begin(), inputs.end());
        at::Tensor out = region->fn(in, *dropout);
        actx->save_for_backward(variable_list(inputs.begin(), inputs.end()));
        actx->saved_data["region"] =
            c10::IValue::make_capsule(c10::intrusive_ptr<torch::CustomClassHolder>(region));
        return out;
    }

    static variable_list backward(AutogradContext* actx, variable_list grad_outputs) {
        auto region =
            c10::static_intrusive_pointer_cast<Region>(actx->saved_data["region"].toCapsule());
        const variable_list saved = actx->get_saved_variables();
        RunContext& ctx = *region->ctx;

        std::vector<at::Tensor> inputs;
        variable_list differentiable;
        std::vector<size_t> where;
        for (size_t i = 0; i < saved.size(); ++i) {
            // Fresh leaves sharing the saved storage: the recomputed graph ends
            // at them, and their gradients are handed back to the outer graph.
            at::Tensor leaf = saved[i].detach();
            if (saved[i].requires_grad()) {
                leaf.requires_grad_(true);
                differentiable.push_back(leaf);
                where.push_back(i);
            }
            inputs.push_back(std::move(leaf));
        }

        std::optional<PhaseScope> block;
        if (region->label.block_phase)
            block.emplace(ctx, PhaseKind::Block, region->label.name, -1, region->label.block);
        at::Tensor out;
        {
            PhaseScope recompute(ctx, PhaseKind::Recompute, "recompute " + region->label.name, -1,
                                 region->label.block);
            const uint64_t mark = ctx.mark();
            at::AutoGradMode grad_on(true);
            out = region->fn(inputs, region->rng);
            // What the recomputation keeps for the backward below is this
            // region's activations, re-materialized.
            ctx.classifyLiveSince(mark, Category::Activation);
        }
        variable_list grads = torch::autograd::grad({out}, differentiable, {grad_outputs[0]},
                                                    /*retain_graph=*/false,
                                                    /*create_graph=*/false,
                                                    /*allow_unused=*/true);
        out.reset();
        // One slot per forward argument: the region (not a tensor), the
        // inputs, the generator (not a tensor).
        variable_list result(saved.size() + 2);
        for (size_t j = 0; j < where.size(); ++j) result[where[j] + 1] = grads[j];
        return result;
    }
};

}  // namespace

at::Tensor checkpoint(RegionFn fn, const std::vector<at::Tensor>& inputs, at::Generator& dropout,
                      RunContext& ctx, CheckpointLabel label) {
    auto region = c10::make_intrusive<Region>();
    region->fn = std::move(fn);
    region->ctx = &ctx;
    region->label = std::move(label);
    {
        // A copy of the generator's state, not a tensor: nothing the memory
        // hook sees, and replaying it gives the same dropout masks.
        std::lock_guard<std::mutex> lock(dropout.mutex());
        region->rng = dropout.clone();
    }
    return CheckpointFunction::apply(region, at::TensorList(inputs), &dropout);
}

}  // namespace memscope::trainer
