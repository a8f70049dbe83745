#include "model.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "checkpoint.h"
#include "memscope/whatif/op_labels.h"

namespace memscope::trainer {

at::Tensor dropout(const at::Tensor& x, double p, at::Generator& gen) {
    if (p <= 0.0) return x;
    at::Tensor keep = at::empty_like(x, x.options().dtype(at::kBool));
    keep.bernoulli_(1.0 - p, gen);
    // x * keep saves only `keep` (x's gradient is grad * keep); the scale is
    // applied in place to the product, which nothing saves.
    return x.mul(keep).mul_(1.0 / (1.0 - p));
}

namespace {

// savedLinear inside a phase naming its op kind, so that a trace says which
// op made each allocation (memscope/whatif/op_labels.h): what the what-if
// simulator needs to predict save lists from a full-save run.
at::Tensor labelledLinear(RunContext& ctx, const at::Tensor& a, const at::Tensor& w,
                          const at::Tensor& b, OpCache* cache) {
    PhaseScope op(ctx, PhaseKind::Range, opLabel(kSaveMatmul));
    return savedLinear(a, w, b, cache);
}

}  // namespace

at::Tensor Model::runBlocks(at::Tensor x, const Policy& policy, at::Generator& gen,
                            RunContext& ctx) const {
    auto plan = segmentPlan(policy, layers());
    if (!plan) throw std::invalid_argument(plan.message());
    const bool selective = policy.recompute == Recompute::Selective;
    const bool per_block =
        policy.recompute == Recompute::Block || policy.recompute == Recompute::Save;
    const uint32_t save_ops = policy.recompute == Recompute::Save ? policy.save_ops : 0;
    int segment = 0;
    for (const CheckpointSegment& seg : *plan) {
        if (!seg.checkpointed) {
            for (int64_t i = seg.begin; i < seg.end; ++i) {
                const int b = static_cast<int>(i);
                PhaseScope scope(ctx, PhaseKind::Block, "block " + std::to_string(i), -1, b);
                x = block(i, blockInputs(i, x), gen, ctx, selective, nullptr);
            }
        } else if (per_block) {
            const int64_t i = seg.begin;
            const int b = static_cast<int>(i);
            PhaseScope scope(ctx, PhaseKind::Block, "block " + std::to_string(i), -1, b);
            x = checkpoint(
                [this, &ctx, i](const std::vector<at::Tensor>& v, at::Generator& g,
                                OpCache* cache) { return block(i, v, g, ctx, false, cache); },
                blockInputs(i, x), gen, ctx, {"block " + std::to_string(i), b, true}, save_ops);
        } else {
            // One region over blocks [begin, end): its inputs are the
            // segment's input and every parameter of its blocks.
            std::vector<at::Tensor> in{x};
            size_t per = 0;
            for (int64_t i = seg.begin; i < seg.end; ++i) {
                std::vector<at::Tensor> v = blockInputs(i, x);
                per = v.size() - 1;
                in.insert(in.end(), v.begin() + 1, v.end());
            }
            const CheckpointSegment range = seg;
            x = checkpoint(
                [this, &ctx, range, per](const std::vector<at::Tensor>& v, at::Generator& g,
                                         OpCache*) {
                    at::Tensor h = v[0];
                    for (int64_t i = range.begin; i < range.end; ++i) {
                        PhaseScope scope(ctx, PhaseKind::Block, "block " + std::to_string(i), -1,
                                         static_cast<int>(i));
                        std::vector<at::Tensor> bin{h};
                        const auto first =
                            v.begin() + 1 + static_cast<long>((i - range.begin) * per);
                        bin.insert(bin.end(), first, first + static_cast<long>(per));
                        h = block(i, bin, g, ctx, false, nullptr);
                    }
                    return h;
                },
                in, gen, ctx,
                {"segment " + std::to_string(segment) + " (blocks " + std::to_string(seg.begin) +
                     "-" + std::to_string(seg.end - 1) + ")",
                 static_cast<int>(seg.begin), false});
        }
        ++segment;
    }
    return x;
}

namespace {

at::ScalarType scalarType(DType d) {
    return d == DType::Float32 ? at::kFloat : at::kBFloat16;
}

// Parameters are drawn in fp32 from one generator (so bf16 and fp32 runs
// start from the same values, rounded) and then converted.
class ParameterFactory {
public:
    ParameterFactory(uint64_t seed, const at::Device& device, at::ScalarType dtype)
        : gen_(at::make_generator<at::CPUGeneratorImpl>(seed)), device_(device), dtype_(dtype) {}

    at::Tensor normal(at::IntArrayRef shape, double stddev) {
        at::Tensor t = at::empty(shape, at::TensorOptions().dtype(at::kFloat));
        t.normal_(0.0, stddev, gen_);
        return finish(t);
    }
    at::Tensor constant(at::IntArrayRef shape, double value) {
        return finish(at::full(shape, value, at::TensorOptions().dtype(at::kFloat)));
    }

private:
    at::Tensor finish(const at::Tensor& t) {
        return t.to(device_, dtype_).contiguous().requires_grad_(true);
    }
    at::Generator gen_;
    at::Device device_;
    at::ScalarType dtype_;
};

// ---------------------------------------------------------------- mlp
// Block: x + Linear(4d->d)(GELU(Linear(d->4d)(LayerNorm(x)))).
enum MlpParam { kLnW = 1, kLnB, kW1, kB1, kW2, kB2, kMlpParams };

class Mlp final : public Model {
public:
    Mlp(const ModelConfig& c, uint64_t seed, const at::Device& device)
        : c_(c), seed_(seed), device_(device), dtype_(scalarType(c.dtype)) {
        ParameterFactory f(seed, device, dtype_);
        const int64_t d = c.hidden;
        for (int64_t i = 0; i < c.layers; ++i) {
            const std::string p = "block" + std::to_string(i) + ".";
            params_.push_back({p + "ln.weight", f.constant({d}, 1.0)});
            params_.push_back({p + "ln.bias", f.constant({d}, 0.0)});
            params_.push_back({p + "fc1.weight", f.normal({4 * d, d}, 0.02)});
            params_.push_back({p + "fc1.bias", f.constant({4 * d}, 0.0)});
            params_.push_back({p + "fc2.weight", f.normal({d, 4 * d}, 0.02)});
            params_.push_back({p + "fc2.bias", f.constant({d}, 0.0)});
        }
    }

    Batch makeBatch(int step) const override {
        at::Generator g = at::make_generator<at::CPUGeneratorImpl>(seed_ * 7919 + 17 + step);
        auto opts = at::TensorOptions().dtype(at::kFloat);
        at::Tensor x = at::empty({c_.batch, c_.seq, c_.hidden}, opts).normal_(0, 1, g);
        at::Tensor y = at::empty({c_.batch, c_.seq, c_.hidden}, opts).normal_(0, 1, g);
        return {x.to(device_, dtype_), y.to(device_, dtype_)};
    }

    at::Tensor loss(const Batch& batch, const Policy& policy, at::Generator& gen,
                    RunContext& ctx) const override {
        return at::mse_loss(runBlocks(batch.input, policy, gen, ctx), batch.target);
    }

protected:
    int64_t layers() const override { return c_.layers; }
    std::vector<at::Tensor> blockInputs(int64_t i, const at::Tensor& x) const override {
        std::vector<at::Tensor> in{x};
        for (int k = 1; k < kMlpParams; ++k)
            in.push_back(params_[static_cast<size_t>(i * (kMlpParams - 1) + k - 1)].tensor);
        return in;
    }
    at::Tensor block(int64_t i, const std::vector<at::Tensor>& in, at::Generator& gen,
                     RunContext& ctx, bool selective, OpCache* cache) const override {
        if (selective) return selectiveBlock(in, gen, ctx, static_cast<int>(i));
        return fullBlock(in, ctx, cache);
    }

private:
    at::Tensor normIn(const std::vector<at::Tensor>& v, const at::Tensor& x) const {
        return at::layer_norm(x, {c_.hidden}, v[kLnW], v[kLnB], 1e-5);
    }
    at::Tensor fullBlock(const std::vector<at::Tensor>& v, RunContext& ctx, OpCache* cache) const {
        at::Tensor h1 = labelledLinear(ctx, normIn(v, v[0]), v[kW1], v[kB1], cache);
        return v[0] + labelledLinear(ctx, at::gelu(h1), v[kW2], v[kB2], cache);
    }
    // Saves the matmul outputs and recomputes the norm and the GELU (the common
    // selective-checkpointing policy): two regions, LN->fc1 and GELU->fc2, whose
    // saved inputs are the block input and fc1's output.
    at::Tensor selectiveBlock(const std::vector<at::Tensor>& v, at::Generator& gen, RunContext& ctx,
                              int block) const {
        const std::string b = std::to_string(block);
        at::Tensor h1 = checkpoint(
            [this](const std::vector<at::Tensor>& in, at::Generator&, OpCache*) {
                return at::linear(normIn(in, in[0]), in[kW1], in[kB1]);
            },
            {v[0], v[kLnW], v[kLnB], v[kW1], v[kB1]}, gen, ctx, {"norm " + b, block, false});
        // Re-index for the second region: {h1, w2, b2}.
        at::Tensor h2 =
            checkpoint([](const std::vector<at::Tensor>& in, at::Generator&,
                          OpCache*) { return at::linear(at::gelu(in[0]), in[1], in[2]); },
                       {h1, v[kW2], v[kB2]}, gen, ctx, {"gelu " + b, block, false});
        return v[0] + h2;
    }
    ModelConfig c_;
    uint64_t seed_;
    at::Device device_;
    at::ScalarType dtype_;
};

// ---------------------------------------------------------------- gpt
// Decoder layer: LN -> QKV -> attention (materialized softmax, causal mask,
// dropout on the probabilities) -> output projection -> dropout -> residual;
// LN -> 4h MLP with GELU -> dropout -> residual.
enum GptParam {
    kLn1W = 1,
    kLn1B,
    kWqkv,
    kBqkv,
    kWo,
    kBo,
    kLn2W,
    kLn2B,
    kFc1W,
    kFc1B,
    kFc2W,
    kFc2B,
    kGptParams
};

class Gpt final : public Model {
public:
    Gpt(const ModelConfig& c, uint64_t seed, const at::Device& device)
        : c_(c), seed_(seed), device_(device), dtype_(scalarType(c.dtype)) {
        ParameterFactory f(seed, device, dtype_);
        const int64_t h = c.hidden;
        params_.push_back({"wte", f.normal({c.vocab, h}, 0.02)});
        params_.push_back({"wpe", f.normal({c.seq, h}, 0.01)});
        for (int64_t i = 0; i < c.layers; ++i) {
            const std::string p = "layer" + std::to_string(i) + ".";
            params_.push_back({p + "ln1.weight", f.constant({h}, 1.0)});
            params_.push_back({p + "ln1.bias", f.constant({h}, 0.0)});
            params_.push_back({p + "qkv.weight", f.normal({3 * h, h}, 0.02)});
            params_.push_back({p + "qkv.bias", f.constant({3 * h}, 0.0)});
            params_.push_back({p + "proj.weight", f.normal({h, h}, 0.02)});
            params_.push_back({p + "proj.bias", f.constant({h}, 0.0)});
            params_.push_back({p + "ln2.weight", f.constant({h}, 1.0)});
            params_.push_back({p + "ln2.bias", f.constant({h}, 0.0)});
            params_.push_back({p + "fc1.weight", f.normal({4 * h, h}, 0.02)});
            params_.push_back({p + "fc1.bias", f.constant({4 * h}, 0.0)});
            params_.push_back({p + "fc2.weight", f.normal({h, 4 * h}, 0.02)});
            params_.push_back({p + "fc2.bias", f.constant({h}, 0.0)});
        }
        params_.push_back({"lnf.weight", f.constant({h}, 1.0)});
        params_.push_back({"lnf.bias", f.constant({h}, 0.0)});
        params_.push_back({"head.weight", f.normal({c.vocab, h}, 0.02)});
        // Additive causal mask, built once: adding it saves nothing for backward.
        mask_ = at::full({c.seq, c.seq}, -std::numeric_limits<double>::infinity(),
                         at::TensorOptions().dtype(dtype_).device(device))
                    .triu(1);
        buffers_.push_back(mask_);
    }

    Batch makeBatch(int step) const override {
        at::Generator g = at::make_generator<at::CPUGeneratorImpl>(seed_ * 7919 + 17 + step);
        auto opts = at::TensorOptions().dtype(at::kLong);
        at::Tensor tokens = at::empty({c_.batch, c_.seq + 1}, opts).random_(0, c_.vocab, g);
        // Next-token prediction on a random sequence.
        return {tokens.narrow(1, 0, c_.seq).contiguous().to(device_),
                tokens.narrow(1, 1, c_.seq).contiguous().to(device_)};
    }

    at::Tensor loss(const Batch& batch, const Policy& policy, at::Generator& gen,
                    RunContext& ctx) const override {
        at::Tensor x;
        {
            PhaseScope scope(ctx, PhaseKind::Range, "embedding");
            x = at::embedding(params_[0].tensor, batch.input) + params_[1].tensor;
        }
        x = runBlocks(x, policy, gen, ctx);
        PhaseScope scope(ctx, PhaseKind::Range, "head");
        const size_t n = params_.size();
        x = at::layer_norm(x, {c_.hidden}, params_[n - 3].tensor, params_[n - 2].tensor, 1e-5);
        at::Tensor logits = at::linear(x, params_[n - 1].tensor);
        return at::cross_entropy_loss(logits.view({-1, c_.vocab}), batch.target.view({-1}));
    }

protected:
    int64_t layers() const override { return c_.layers; }
    std::vector<at::Tensor> blockInputs(int64_t i, const at::Tensor& x) const override {
        std::vector<at::Tensor> in{x};
        const size_t base = 2 + static_cast<size_t>(i) * (kGptParams - 1);
        for (int k = 1; k < kGptParams; ++k) in.push_back(params_[base + k - 1].tensor);
        return in;
    }
    at::Tensor block(int64_t i, const std::vector<at::Tensor>& in, at::Generator& gen,
                     RunContext& ctx, bool selective, OpCache* cache) const override {
        return layer(in, gen, selective, ctx, static_cast<int>(i), cache);
    }

private:
    at::Tensor layer(const std::vector<at::Tensor>& v, at::Generator& gen, bool selective,
                     RunContext& ctx, int block, OpCache* cache) const {
        const int64_t b = c_.batch, s = c_.seq, h = c_.hidden, a = c_.heads;
        const at::Tensor& x = v[0];
        at::Tensor ln1 = at::layer_norm(x, {h}, v[kLn1W], v[kLn1B], 1e-5);
        // One contiguous (3, b, a, s, h/a) buffer: q, k and v are views of it,
        // so what attention saves of them is exactly 3·s·b·h elements.
        at::Tensor qkv = labelledLinear(ctx, ln1, v[kWqkv], v[kBqkv], cache)
                             .view({b, s, 3, a, h / a})
                             .permute({2, 0, 3, 1, 4})
                             .contiguous();
        at::Tensor attn;
        if (selective) {
            attn =
                checkpoint([this](const std::vector<at::Tensor>& in, at::Generator& g,
                                  OpCache*) { return attentionCore(in[0], g); },
                           {qkv}, gen, ctx, {"attention " + std::to_string(block), block, false});
        } else {
            // The attention core as one op of kind "attention" (op_labels.h).
            PhaseScope op(ctx, PhaseKind::Range, opLabel(kSaveAttention));
            attn = keptOp(
                [this](const at::Tensor& in, at::Generator& g) { return attentionCore(in, g); },
                qkv, gen, cache, kSaveAttention);
        }
        at::Tensor y =
            x + dropout(labelledLinear(ctx, attn, v[kWo], v[kBo], cache), c_.dropout, gen);
        at::Tensor ln2 = at::layer_norm(y, {h}, v[kLn2W], v[kLn2B], 1e-5);
        at::Tensor g = at::gelu(labelledLinear(ctx, ln2, v[kFc1W], v[kFc1B], cache));
        return y + dropout(labelledLinear(ctx, g, v[kFc2W], v[kFc2B], cache), c_.dropout, gen);
    }

    // QKᵀ, scale, causal mask, softmax, dropout, ·V; returns (b, s, h).
    at::Tensor attentionCore(const at::Tensor& qkv, at::Generator& gen) const {
        const int64_t b = c_.batch, s = c_.seq, h = c_.hidden, a = c_.heads, hd = h / a;
        at::Tensor q = qkv.select(0, 0).reshape({b * a, s, hd});
        at::Tensor k = qkv.select(0, 1).reshape({b * a, s, hd});
        at::Tensor vv = qkv.select(0, 2).reshape({b * a, s, hd});
        // bmm saves its inputs, not its output, so scaling and masking in place
        // keep one (b·a, s, s) buffer alive instead of three.
        at::Tensor scores = at::bmm(q, k.transpose(1, 2));
        scores.mul_(1.0 / std::sqrt(static_cast<double>(hd)));
        scores.add_(mask_);  // (s, s) broadcasts over b·a
        at::Tensor probs = dropout(at::softmax(scores, -1), c_.dropout, gen);
        at::Tensor out = at::bmm(probs, vv);  // (b·a, s, hd)
        return out.view({b, a, s, hd}).transpose(1, 2).reshape({b, s, h});
    }

    ModelConfig c_;
    uint64_t seed_;
    at::Device device_;
    at::ScalarType dtype_;
    at::Tensor mask_;
};

}  // namespace

std::unique_ptr<Model> makeModel(const ModelConfig& config, uint64_t seed,
                                 const at::Device& device) {
    if (config.kind == ModelKind::Mlp) return std::make_unique<Mlp>(config, seed, device);
    return std::make_unique<Gpt>(config, seed, device);
}

}  // namespace memscope::trainer
