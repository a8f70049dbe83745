#include "checkpoint.h"

#include <mutex>
#include <optional>
#include <stdexcept>

#include "config.h"

namespace memscope::trainer {

// What a kept op leaves for the recomputation: its output and, for keptOp,
// the graph its output was computed in (from `leaf`) and the dropout
// generator's state after it.
struct OpCache::Entry {
    at::Tensor output;
    at::Tensor leaf;
    std::optional<at::Generator> rng_after;
};

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
    std::unique_ptr<OpCache> cache;  // null unless the policy keeps ops
};

struct CheckpointFunction : torch::autograd::Function<CheckpointFunction> {
    static at::Tensor forward(AutogradContext* actx, c10::intrusive_ptr<Region> region,
                              at::TensorList inputs, at::Generator* dropout) {
        // Apply() runs this with grad mode off: nothing inside is saved.
        std::vector<at::Tensor> in(inputs.begin(), inputs.end());
        at::Tensor out = region->fn(in, *dropout, region->cache.get());
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
            if (region->cache) {
                region->cache->replaying = true;
                region->cache->next = 0;
            }
            out = region->fn(inputs, region->rng, region->cache.get());
            // What the ops kept now belongs to the recomputed graph.
            if (region->cache) region->cache->entries.clear();
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

// The recomputation's stand-in for a stored linear output: forward returns the
// output, backward computes the three gradients as LibTorch's derivative of
// linear's 3-D path (addmm on the input viewed as 2-D, bias broadcast) does,
// kernel for kernel, so that the run stays bit-identical to `full`:
// grad_a = g·W, grad_W = gᵀ·a, grad_b = g summed over rows.
struct LinearReplay : torch::autograd::Function<LinearReplay> {
    static at::Tensor forward(AutogradContext* actx, const at::Tensor& a, const at::Tensor& w,
                              const at::Tensor& b, const at::Tensor& stored) {
        actx->save_for_backward({a, w});
        actx->saved_data["bias"] = b.defined();
        return stored.detach();
    }

    static variable_list backward(AutogradContext* actx, variable_list grad_outputs) {
        const variable_list saved = actx->get_saved_variables();
        const at::Tensor& a = saved[0];
        const at::Tensor& w = saved[1];
        const int64_t out_features = w.size(0);
        const int64_t in_features = a.size(-1);
        const int64_t rows = a.numel() / in_features;
        const at::Tensor g = grad_outputs[0].reshape({rows, out_features});
        at::Tensor grad_a, grad_w, grad_b;
        if (actx->needs_input_grad(0)) grad_a = g.mm(w).reshape(a.sizes());
        if (actx->needs_input_grad(1)) grad_w = g.t().mm(a.view({rows, in_features}));
        if (actx->saved_data["bias"].toBool() && actx->needs_input_grad(2))
            grad_b = g.sum({0}, /*keepdim=*/true).view({out_features});
        return {grad_a, grad_w, grad_b, at::Tensor()};
    }
};

struct EntryHolder : torch::CustomClassHolder {
    std::shared_ptr<OpCache::Entry> entry;
};

// The recomputation's stand-in for a kept op: forward returns the stored
// output, backward differentiates the graph stored with it.
struct KeptReplay : torch::autograd::Function<KeptReplay> {
    static at::Tensor forward(AutogradContext* actx, const at::Tensor& /*input*/,
                              c10::intrusive_ptr<EntryHolder> holder) {
        at::Tensor out = holder->entry->output.detach();
        actx->saved_data["entry"] =
            c10::IValue::make_capsule(c10::intrusive_ptr<torch::CustomClassHolder>(holder));
        return out;
    }

    static variable_list backward(AutogradContext* actx, variable_list grad_outputs) {
        auto holder =
            c10::static_intrusive_pointer_cast<EntryHolder>(actx->saved_data["entry"].toCapsule());
        std::shared_ptr<OpCache::Entry> entry = std::move(holder->entry);
        variable_list grads = torch::autograd::grad({entry->output}, {entry->leaf},
                                                    {grad_outputs[0]}, /*retain_graph=*/false,
                                                    /*create_graph=*/false,
                                                    /*allow_unused=*/true);
        entry.reset();
        return {grads[0], at::Tensor()};
    }
};

std::shared_ptr<OpCache::Entry> takeEntry(OpCache& cache) {
    if (cache.next >= cache.entries.size())
        throw std::logic_error("checkpoint: the recomputation kept more ops than the forward");
    return std::move(cache.entries[cache.next++]);
}

}  // namespace

at::Tensor savedLinear(const at::Tensor& a, const at::Tensor& w, const at::Tensor& b,
                       OpCache* cache) {
    if (!cache || !(cache->kinds & kSaveMatmul)) return at::linear(a, w, b);
    if (!cache->replaying) {
        auto entry = std::make_shared<OpCache::Entry>();
        entry->output = at::linear(a, w, b);
        cache->entries.push_back(entry);
        return entry->output;
    }
    const std::shared_ptr<OpCache::Entry> entry = takeEntry(*cache);
    at::Tensor stored = std::move(entry->output);
    return LinearReplay::apply(a, w, b, stored);
}

at::Tensor keptOp(const UnaryOp& op, const at::Tensor& input, at::Generator& dropout,
                  OpCache* cache, uint32_t kind) {
    if (!cache || !(cache->kinds & kind)) return op(input, dropout);
    if (!cache->replaying) {
        auto entry = std::make_shared<OpCache::Entry>();
        {
            at::AutoGradMode grad_on(true);
            entry->leaf = input.detach().requires_grad_(true);
            entry->output = op(entry->leaf, dropout);
        }
        {
            std::lock_guard<std::mutex> lock(dropout.mutex());
            entry->rng_after = dropout.clone();
        }
        cache->entries.push_back(entry);
        return entry->output.detach();
    }
    auto holder = c10::make_intrusive<EntryHolder>();
    holder->entry = takeEntry(*cache);
    // The dropout draws the op made in forward are skipped, not replayed.
    dropout = *holder->entry->rng_after;
    holder->entry->rng_after.reset();
    return KeptReplay::apply(input, holder);
}

at::Tensor checkpoint(RegionFn fn, const std::vector<at::Tensor>& inputs, at::Generator& dropout,
                      RunContext& ctx, CheckpointLabel label, uint32_t save_ops) {
    auto region = c10::make_intrusive<Region>();
    region->fn = std::move(fn);
    region->ctx = &ctx;
    region->label = std::move(label);
    if (save_ops != 0) {
        region->cache = std::make_unique<OpCache>();
        region->cache->kinds = save_ops;
    }
    {
        // A copy of the generator's state, not a tensor: nothing the memory
        // hook sees, and replaying it gives the same dropout masks.
        std::lock_guard<std::mutex> lock(dropout.mutex());
        region->rng = dropout.clone();
    }
    return CheckpointFunction::apply(region, at::TensorList(inputs), &dropout);
}

}  // namespace memscope::trainer
