#pragma once
// A trace like one `memscope-cli record` makes of a small GPT (a ModuleList
// of blocks, each with attention and an MLP), built by hand: allocations with
// the Python frames PyTorch captures (module.py's call wrappers, each
// module's forward at plausible lines), the module scopes the hook records
// (h.3.attn.c_attn), and forward, backward and (with checkpointing) recompute.
// Every allocation's true module and category are known, so inference from
// its frames can be scored against them.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "memscope/model/trace.h"

namespace memscope::test {

struct GptShape {
    int layers = 6;
    int steps = 2;
    bool checkpoint = false;  // torch.utils.checkpoint around each block
};

class GptTraceBuilder {
public:
    static constexpr int64_t kT0 = 1'700'000'000'000'000'000;  // ns; whole microseconds below

    explicit GptTraceBuilder(GptShape shape) : shape_(shape), interner_(t_) {
        t_.metadata.source_format = "memscope-record";
        t_.metadata.time_base = TimeBase::Nanoseconds;
        t_.modules.source = ModuleSource::Recorded;
    }

    Trace build() {
        py_ = {{"<module>", kTrain, 50}};
        for (int k = 0; k < 4 * shape_.layers + 4; ++k)
            params_.push_back(alloc(4096 + 64 * uint64_t(k), Category::Parameter));
        for (int s = 0; s < shape_.steps; ++s) trainingStep();
        return std::move(t_);
    }

private:
    struct Py {
        std::string function, file;
        uint32_t line;
    };
    struct Open {
        std::string path;
        ModuleScopeKind kind;
        int64_t start;
        size_t py_depth;
    };
    static constexpr const char* kTrain = "/home/user/nanogpt/train.py";
    static constexpr const char* kModel = "/home/user/nanogpt/model.py";
    static constexpr const char* kModuleFile =
        "/usr/lib/python3/dist-packages/torch/nn/modules/module.py";
    static constexpr const char* kLinear =
        "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py";
    static constexpr const char* kNorm =
        "/usr/lib/python3/dist-packages/torch/nn/modules/normalization.py";
    static constexpr const char* kSparse =
        "/usr/lib/python3/dist-packages/torch/nn/modules/sparse.py";
    static constexpr const char* kFunctional =
        "/usr/lib/python3/dist-packages/torch/nn/functional.py";
    static constexpr const char* kCheckpoint =
        "/usr/lib/python3/dist-packages/torch/utils/checkpoint.py";
    static constexpr const char* kAutogradFunction =
        "/usr/lib/python3/dist-packages/torch/autograd/function.py";

    void at(uint32_t line) { py_.back().line = line; }

    StackId stack(const std::vector<Py>& inner) {
        std::vector<FrameId> frames;
        for (auto it = inner.rbegin(); it != inner.rend(); ++it) frames.push_back(frame(*it));
        for (auto it = py_.rbegin(); it != py_.rend(); ++it) frames.push_back(frame(*it));
        return t_.internStack(frames);
    }
    FrameId frame(const Py& p) {
        return t_.internFrame({t_.internString(p.function), t_.internString(p.file), p.line});
    }

    uint64_t event(EventKind kind, uint64_t address, uint64_t size, Category c, StackId s) {
        Event e;
        e.time = now_;
        e.kind = kind;
        e.address = address;
        e.size = size;
        e.category = c;
        e.stack = s;
        t_.events.push_back(e);
        now_ += 1000;
        return address;
    }
    uint64_t alloc(uint64_t size, Category c, const std::vector<Py>& inner = {}) {
        const uint64_t address = next_address_;
        next_address_ += (size + 511) / 512 * 512;
        sizes_[address] = size;
        event(EventKind::Alloc, address, size, c, stack(inner));
        if (!block_allocs_.empty()) block_allocs_.back().push_back(address);
        return address;
    }
    // An allocation of the autograd engine's thread: C++ frames only.
    uint64_t engineAlloc(uint64_t size, Category c) {
        const std::vector<FrameId> frames{
            t_.internFrame({t_.internString("torch::autograd::Engine::evaluate_function"),
                            t_.internString("engine.cpp"), 0})};
        const uint64_t address = next_address_;
        next_address_ += (size + 511) / 512 * 512;
        sizes_[address] = size;
        event(EventKind::Alloc, address, size, c, t_.internStack(frames));
        return address;
    }
    void release(uint64_t address) {
        event(EventKind::FreeCompleted, address, sizes_[address], Category::Unknown, {});
    }

    // A module call: the caller's frame stays, module.py's wrappers and the
    // callee's forward go on top; the recorded scope spans the call.
    template <typename F>
    void call(const std::string& path, const char* file, uint32_t first_line, F&& body) {
        const size_t depth = py_.size();
        py_.push_back({"_wrapped_call_impl", kModuleFile, 1518});
        py_.push_back({"_call_impl", kModuleFile, 1527});
        py_.push_back({"forward", file, first_line});
        const int64_t start = now_;
        body();
        addScope(path, start);
        py_.resize(depth);
    }
    void addScope(const std::string& path, int64_t start) {
        if (now_ <= start) return;
        ModuleScope s;
        s.start = start;
        s.end = now_;
        s.module = interner_.intern("GPT", path, typeOf(path));
        s.kind = kind_;
        t_.modules.scopes.push_back(s);
    }
    static std::string typeOf(const std::string& path) {
        const auto last = lastPathComponent(path);
        if (path.empty()) return "GPT";
        if (last == "attn") return "CausalSelfAttention";
        if (last == "mlp") return "MLP";
        if (last.starts_with("ln")) return "LayerNorm";
        if (last.starts_with("c_") || last == "lm_head") return "Linear";
        if (last.starts_with("w")) return "Embedding";
        return "Block";
    }

    uint64_t linear(const std::string& path, uint64_t size) {
        uint64_t out = 0;
        call(path, kLinear, 114, [&] { out = alloc(size, Category::Activation); });
        return out;
    }
    uint64_t layerNorm(const std::string& path, uint64_t size) {
        uint64_t out = 0;
        call(path, kNorm, 201, [&] {
            out = alloc(size, Category::Activation, {{"layer_norm", kFunctional, 2546}});
        });
        return out;
    }

    void attention(const std::string& h, uint64_t n) {
        call(h + ".attn", kModel, 51, [&] {
            at(52);
            linear(h + ".attn.c_attn", 3 * n);
            at(55);
            alloc(2 * n, Category::Activation);  // q @ k^T
            at(56);
            alloc(2 * n, Category::Activation, {{"softmax", kFunctional, 1841}});
            at(58);
            alloc(n, Category::Activation);  // att @ v
            at(60);
            linear(h + ".attn.c_proj", n);
        });
    }
    void mlp(const std::string& h, uint64_t n) {
        call(h + ".mlp", kModel, 81, [&] {
            at(82);
            linear(h + ".mlp.c_fc", 4 * n);
            at(83);
            alloc(4 * n, Category::Activation, {{"gelu", kFunctional, 1683}});
            at(84);
            linear(h + ".mlp.c_proj", n);
        });
    }
    void block(int k) {
        const std::string h = "h." + std::to_string(k);
        const uint64_t n = 65536;
        call(h, kModel, 100, [&] {
            at(100);
            layerNorm(h + ".ln_1", n);
            attention(h, n);
            at(100);
            alloc(n, Category::Activation);  // x + attn(...)
            at(101);
            layerNorm(h + ".ln_2", n);
            mlp(h, n);
            at(101);
            block_output_[k] = alloc(n, Category::Activation);  // x + mlp(...)
        });
    }

    void trainingStep() {
        const uint64_t n = 65536;
        py_ = {{"<module>", kTrain, 50}, {"train_step", kTrain, 30}};
        kind_ = ModuleScopeKind::Forward;
        block_output_.assign(size_t(shape_.layers), 0);
        block_live_.assign(size_t(shape_.layers), {});
        std::vector<uint64_t> gpt_live;
        const uint64_t input = alloc(8192, Category::Input);
        call("", kModel, 181, [&] {
            at(181);
            call("wte", kSparse, 162, [&] {
                gpt_live.push_back(
                    alloc(n, Category::Activation, {{"embedding", kFunctional, 2233}}));
            });
            at(182);
            call("wpe", kSparse, 162, [&] {
                gpt_live.push_back(
                    alloc(n, Category::Activation, {{"embedding", kFunctional, 2233}}));
            });
            at(183);
            gpt_live.push_back(alloc(n, Category::Activation));  // tok + pos
            at(186);
            for (int k = 0; k < shape_.layers; ++k) {
                block_allocs_.emplace_back();
                if (shape_.checkpoint) {
                    const size_t depth = py_.size();
                    py_.push_back({"checkpoint", kCheckpoint, 249});
                    py_.push_back({"apply", kAutogradFunction, 506});
                    py_.push_back({"forward", kCheckpoint, 107});
                    block(k);
                    py_.resize(depth);
                } else {
                    block(k);
                }
                block_live_[size_t(k)] = std::move(block_allocs_.back());
                block_allocs_.pop_back();
                if (shape_.checkpoint) {
                    // Under no_grad only the block's output outlives it.
                    for (uint64_t a : block_live_[size_t(k)])
                        if (a != block_output_[size_t(k)]) release(a);
                    block_live_[size_t(k)] = {block_output_[size_t(k)]};
                }
            }
            at(188);
            gpt_live.push_back(layerNorm("ln_f", n));
            at(189);
            gpt_live.push_back(linear("lm_head", 8 * n));
        });
        at(31);
        const uint64_t loss =
            alloc(512, Category::Temporary, {{"cross_entropy", kFunctional, 3029}});

        // Backward: the engine's thread, the last block first.
        py_.clear();
        kind_ = ModuleScopeKind::Recompute;
        const uint64_t grad_logits = engineAlloc(8 * n, Category::AutogradDetail);
        for (int k = shape_.layers - 1; k >= 0; --k) {
            std::vector<uint64_t> recomputed;
            if (shape_.checkpoint) {
                py_ = {{"backward", kCheckpoint, 157}};
                block_allocs_.emplace_back();
                block(k);
                recomputed = std::move(block_allocs_.back());
                block_allocs_.pop_back();
                py_.clear();
            }
            for (int g = 0; g < 4; ++g) grads_.push_back(engineAlloc(4096, Category::Gradient));
            const uint64_t tmp = engineAlloc(2 * n, Category::AutogradDetail);
            release(tmp);
            for (uint64_t a : recomputed) release(a);
            for (uint64_t a : block_live_[size_t(k)]) release(a);
        }
        release(grad_logits);
        for (uint64_t a : gpt_live) release(a);
        release(loss);
        release(input);
        // The optimizer: gradients go, state stays from the first step.
        py_ = {{"<module>", kTrain, 50},
               {"step", "/usr/lib/python3/dist-packages/torch/optim/adam.py", 140}};
        if (state_.empty())
            for (size_t p = 0; p < params_.size(); ++p)
                state_.push_back(alloc(8192, Category::OptimizerState));
        for (uint64_t g : grads_) release(g);
        grads_.clear();
    }

    GptShape shape_;
    Trace t_;
    ModuleInterner interner_;
    int64_t now_ = kT0;
    uint64_t next_address_ = 0x7f0000000000;
    std::vector<Py> py_;
    ModuleScopeKind kind_ = ModuleScopeKind::Forward;
    std::unordered_map<uint64_t, uint64_t> sizes_;
    std::vector<uint64_t> params_, state_, grads_, block_output_;
    std::vector<std::vector<uint64_t>> block_live_, block_allocs_;
};

}  // namespace memscope::test
