#include "training_recipe.h"

#include <initializer_list>
#include <string_view>

namespace memscope::recipes {
namespace {

struct F {
    const char* function;
    const char* file;
    uint32_t line;
};

// What an allocation is, for its frames.
enum class Site : uint8_t {
    ParameterInit,  // nn.Module.__init__ with device=
    ParameterTo,    // model.to(device)
    BufferInit,     // BatchNorm's running statistics
    Input,
    Activation,
    AutocastCast,
    ForwardTemp,
    Loss,
    BackwardTemp,
    GradAccumulate,  // AccumulateGrad's clone of the incoming gradient
    GradStolen,      // a backward op's output, taken as the gradient unchanged
    StateInit,       // the optimizer's state, made in its first step
    UpdateTemp,      // the update's intermediates
    ZeroGrad,        // zero_grad(set_to_none=True) dropping the gradients (frees only)
};

class Builder {
public:
    explicit Builder(const TrainingRecipe& r) : r_(r) {}

    RecipeTrace build() {
        const int first = r_.from_creation ? 0 : r_.warmup_steps;
        if (r_.from_creation) cut_time_ = t_;
        makeModel();
        for (int s = 0; s < first + r_.recorded_steps; ++s) {
            if (s == first && !r_.from_creation) cut_time_ = t_;
            trainStep();
        }
        return finish();
    }

private:
    struct Param {
        uint64_t size = 0;
        bool buffer = false;
        uint64_t address = 0;
        uint64_t grad = 0;  // 0 = none
        std::vector<uint64_t> state;
    };

    // --- the model --------------------------------------------------------
    void addParam(uint64_t size, bool buffer) {
        Param p;
        p.size = size;
        p.buffer = buffer;
        params_.push_back(p);
    }

    void makeModel() {
        for (int k = 0; k < r_.layers; ++k) {
            const uint64_t width = 128 * (1 + uint64_t(k % 3));
            if (r_.conv_batch_norm) {
                const uint64_t channels = width / 2;
                addParam(channels * channels * 9 * 4, false);  // conv weight
                addParam(channels * 4, false);                 // bn weight
                addParam(channels * 4, false);                 // bn bias
                addParam(channels * 4, true);                  // running_mean
                addParam(channels * 4, true);                  // running_var
                addParam(8, true);                             // num_batches_tracked
            } else {
                addParam(width * width * 4, false);  // weight
                addParam(width * 4, false);          // bias
            }
        }
        // Made on the device in __init__ (half of the layers), or on the CPU
        // and moved with .to() (the rest): both are PyTorch's usual ways.
        for (size_t i = 0; i < params_.size(); ++i) {
            Param& p = params_[i];
            const Site site = p.buffer                 ? Site::BufferInit
                              : i < params_.size() / 2 ? Site::ParameterInit
                                                       : Site::ParameterTo;
            p.address = alloc(p.size, Category::Parameter, site);
        }
    }

    // --- one step ---------------------------------------------------------
    void trainStep() {
        if (r_.zero_grad_first) zeroGrad();
        for (int micro = 0; micro < r_.micro_batches; ++micro) forwardBackward();
        optimizerStep();
        if (!r_.zero_grad_first) zeroGrad();
        if (r_.fetch_at_loop_end) next_batch_ = alloc(kFetchedBatch, Category::Input, Site::Input);
    }

    void forwardBackward() {
        uint64_t input = next_batch_;
        next_batch_ = 0;
        if (input == 0)
            input =
                alloc(r_.fetch_at_loop_end ? kFetchedBatch : 65536, Category::Input, Site::Input);
        std::vector<uint64_t> saved;
        const size_t per_layer = params_.size() / size_t(r_.layers);
        for (int k = 0; k < r_.layers; ++k) {
            if (r_.autocast)  // the weight's bf16 copy, saved for backward
                saved.push_back(alloc(params_[size_t(k) * per_layer].size / 2, Category::Activation,
                                      Site::AutocastCast));
            release(alloc(32768, Category::Temporary, Site::ForwardTemp), Site::ForwardTemp);
            saved.push_back(alloc(262144, Category::Activation, Site::Activation));
        }
        const uint64_t loss = alloc(512, Category::Activation, Site::Loss);
        for (int k = r_.layers - 1; k >= 0; --k) {
            const uint64_t grad_input = alloc(262144, Category::Temporary, Site::BackwardTemp);
            for (size_t j = 0; j < per_layer; ++j) {
                Param& p = params_[size_t(k) * per_layer + j];
                if (p.buffer) continue;
                const bool stolen = (k + int(j)) % 2 == 1;
                if (p.grad == 0) {
                    p.grad = alloc(p.size, Category::Gradient,
                                   stolen ? Site::GradStolen : Site::GradAccumulate);
                    if (r_.optimizer_in_backward) stepInBackward(p);
                } else {
                    // Accumulated in place: the op's output is added, then freed.
                    release(alloc(p.size, Category::Temporary, Site::BackwardTemp),
                            Site::BackwardTemp);
                }
            }
            release(grad_input, Site::BackwardTemp);
            release(saved.back(), Site::BackwardTemp);
            saved.pop_back();
            if (r_.autocast) {
                release(saved.back(), Site::BackwardTemp);
                saved.pop_back();
            }
        }
        release(loss, Site::Input);
        release(input, Site::Input);
    }

    std::string optimizerClass() const {
        if (!r_.optimizer_class.empty()) return r_.optimizer_class;
        return r_.optimizer == OptimizerKind::SgdMomentum ? "SGD" : "AdamW";
    }

    void initState(Param& p) {
        const size_t per = r_.optimizer == OptimizerKind::SgdMomentum ? 1 : 2;
        if (p.buffer || !p.state.empty() || p.grad == 0) return;
        for (size_t j = 0; j < per; ++j)
            p.state.push_back(alloc(p.size, Category::OptimizerState, Site::StateInit));
    }

    // A post-accumulate-grad hook: one optimizer per parameter steps and
    // drops its gradient as soon as autograd has made it.
    void stepInBackward(Param& p) {
        range(std::string("Optimizer.step#") + optimizerClass() + ".step", [&] {
            initState(p);
            if (r_.path != UpdatePath::Fused)
                release(alloc(p.size, Category::Temporary, Site::UpdateTemp), Site::UpdateTemp);
        });
        range(std::string("Optimizer.zero_grad#") + optimizerClass() + ".zero_grad", [&] {
            release(p.grad, Site::ZeroGrad);
            p.grad = 0;
        });
    }

    void optimizerStep() {
        if (r_.optimizer_in_backward) return;
        range(std::string("Optimizer.step#") + optimizerClass() + ".step", [&] {
            for (Param& p : params_) initState(p);
            if (r_.path == UpdatePath::Fused) return;
            if (r_.path == UpdatePath::ForLoop || r_.optimizer == OptimizerKind::UserAdam) {
                for (const Param& p : params_)
                    if (!p.buffer)
                        release(alloc(p.size, Category::Temporary, Site::UpdateTemp),
                                Site::UpdateTemp);
                return;
            }
            std::vector<uint64_t> temps;  // _foreach_sqrt(exp_avg_sqs) and the like
            for (const Param& p : params_)
                if (!p.buffer)
                    temps.push_back(alloc(p.size, Category::Temporary, Site::UpdateTemp));
            for (uint64_t a : temps) release(a, Site::UpdateTemp);
        });
    }

    void zeroGrad() {
        if (r_.optimizer_in_backward) return;
        range(std::string("Optimizer.zero_grad#") + optimizerClass() + ".zero_grad", [&] {
            if (!r_.set_to_none) return;  // zeroed in place: nothing allocated or freed
            for (Param& p : params_)
                if (p.grad) {
                    release(p.grad, Site::ZeroGrad);
                    p.grad = 0;
                }
        });
    }

    // --- events -----------------------------------------------------------
    uint64_t alloc(uint64_t size, Category truth, Site site) {
        const uint64_t rounded = (size + 511) / 512 * 512;
        uint64_t address = 0;
        // The caching allocator hands a freed block of the size back first.
        if (auto it = free_.find(rounded); it != free_.end() && !it->second.empty()) {
            address = it->second.back();
            it->second.pop_back();
        } else {
            address = next_;
            next_ += rounded;
        }
        all_.push_back({t_ += 1000, EventKind::Alloc, address, size, truth, stackOf(site)});
        live_[address] = {size, truth, stackOf(site)};
        return address;
    }

    // PyTorch records a free with the frames of the code that freed it.
    void release(uint64_t address, Site where) {
        const auto it = live_.find(address);
        if (it == live_.end()) return;
        all_.push_back({t_ += 1000, EventKind::FreeCompleted, address, it->second.size,
                        it->second.truth, stackOf(where)});
        free_[(it->second.size + 511) / 512 * 512].push_back(address);
        live_.erase(it);
    }

    template <typename Body>
    void range(const std::string& name, Body body) {
        const bool annotated = r_.annotations && r_.optimizer != OptimizerKind::UserAdam;
        const int64_t start = t_ += 1000;
        body();
        const int64_t end = t_ += 1000;
        if (annotated) ranges_.push_back({name, start, end});
    }

    StackId stack(std::initializer_list<F> frames) {
        std::vector<FrameId> ids;
        for (const F& f : frames) {
            if (r_.frames == RecordedFrames::None) break;
            // C++ frames name a namespace or a .cpp file, or no file at all.
            const std::string_view file = f.file;
            const bool cpp = std::string_view(f.function).find("::") != std::string_view::npos ||
                             file.empty() || file.ends_with(".cpp");
            if (cpp && r_.frames == RecordedFrames::Python) continue;
            ids.push_back(out_.trace.internFrame(
                {out_.trace.internString(f.function), out_.trace.internString(f.file), f.line}));
        }
        return out_.trace.internStack(ids);
    }

    const char* updateFunction() const {
        const bool loop = r_.path == UpdatePath::ForLoop;
        if (r_.optimizer == OptimizerKind::SgdMomentum)
            return loop ? "_single_tensor_sgd" : "_multi_tensor_sgd";
        return loop ? "_single_tensor_adamw" : "_multi_tensor_adamw";
    }

    // Innermost first, as PyTorch records them.
    StackId stackOf(Site site) {
        const bool user = r_.optimizer == OptimizerKind::UserAdam;
        const bool sgd = r_.optimizer == OptimizerKind::SgdMomentum;
        const char* optim_file = sgd ? "torch/optim/sgd.py" : "torch/optim/adamw.py";
        switch (site) {
            case Site::ParameterInit:
                return stack({{"at::native::empty_cuda", "EmptyTensor.cpp", 0},
                              {"__init__", "torch/nn/modules/linear.py", 98},
                              {"__init__", "model.py", 20},
                              {"main", "train.py", 30}});
            case Site::ParameterTo:
                return stack({{"at::native::_to_copy", "Copy.cpp", 0},
                              {"convert", "torch/nn/modules/module.py", 1160},
                              {"_apply", "torch/nn/modules/module.py", 805},
                              {"to", "torch/nn/modules/module.py", 1174},
                              {"main", "train.py", 31}});
            case Site::BufferInit:
                return stack({{"at::native::zeros", "TensorFactories.cpp", 0},
                              {"__init__", "torch/nn/modules/batchnorm.py", 62},
                              {"__init__", "model.py", 22},
                              {"main", "train.py", 30}});
            case Site::Input:
                return stack({{"at::native::_to_copy", "Copy.cpp", 0}, {"main", "train.py", 40}});
            case Site::AutocastCast:
                return stack({{"at::native::_to_copy", "Copy.cpp", 0},
                              {"at::autocast::cached_cast", "autocast_mode.cpp", 0},
                              {"forward", "torch/nn/modules/linear.py", 114},
                              {"_call_impl", "torch/nn/modules/module.py", 1501},
                              {"forward", "model.py", 40},
                              {"main", "train.py", 42}});
            case Site::Activation:
            case Site::ForwardTemp:
                return stack({{"at::native::addmm_out_cuda", "Blas.cpp", 0},
                              {"forward", "torch/nn/modules/linear.py", 114},
                              {"_call_impl", "torch/nn/modules/module.py", 1501},
                              {"forward", "model.py", 40},
                              {"main", "train.py", 42}});
            case Site::Loss:
                return stack(
                    {{"cross_entropy", "torch/nn/functional.py", 3029}, {"main", "train.py", 43}});
            case Site::BackwardTemp:
                return stack({{"at::native::mm", "LinearAlgebra.cpp", 0},
                              {"torch::autograd::generated::MmBackward0::apply", "", 0},
                              {"torch::autograd::Engine::evaluate_function", "engine.cpp", 0},
                              {"_engine_run_backward", "torch/autograd/graph.py", 744},
                              {"backward", "torch/_tensor.py", 521},
                              {"main", "train.py", 44}});
            case Site::GradStolen:
                return stack({{"at::native::mm", "LinearAlgebra.cpp", 0},
                              {"torch::autograd::generated::MmBackward0::apply", "", 0},
                              {"torch::autograd::Engine::evaluate_function", "engine.cpp", 0},
                              {"_engine_run_backward", "torch/autograd/graph.py", 744},
                              {"backward", "torch/_tensor.py", 521},
                              {"main", "train.py", 44}});
            case Site::GradAccumulate:
                return stack({{"torch::autograd::utils::clone_obey_contract", "", 0},
                              {"torch::autograd::AccumulateGrad::apply", "accumulate_grad.cpp", 0},
                              {"torch::autograd::Engine::evaluate_function", "engine.cpp", 0},
                              {"_engine_run_backward", "torch/autograd/graph.py", 744},
                              {"backward", "torch/_tensor.py", 521},
                              {"main", "train.py", 44}});
            case Site::StateInit:
                if (user)
                    return stack({{"at::native::zeros_like", "TensorFactories.cpp", 0},
                                  {"step", "train.py", 12},
                                  {"main", "train.py", 45}});
                return stack({{"at::native::zeros_like", "TensorFactories.cpp", 0},
                              {sgd ? "_multi_tensor_sgd" : "_init_group", optim_file, 120},
                              {"step", optim_file, 200},
                              {"wrapper", "torch/optim/optimizer.py", 487},
                              {"main", "train.py", 45}});
            case Site::ZeroGrad:
                if (user)  // model.zero_grad()
                    return stack({{"zero_grad", "torch/nn/modules/module.py", 2410},
                                  {"main", "train.py", 39}});
                return stack({{"zero_grad", "torch/optim/optimizer.py", 815},
                              {"wrapper", "torch/optim/optimizer.py", 487},
                              {"main", "train.py", 39}});
            case Site::UpdateTemp:
                if (user)
                    return stack({{"at::native::sqrt", "UnaryOps.cpp", 0},
                                  {"step", "train.py", 14},
                                  {"main", "train.py", 45}});
                return stack({{"at::native::foreach_tensor_sqrt_cuda", "ForeachOps.cpp", 0},
                              {updateFunction(), optim_file, 699},
                              {"step", optim_file, 200},
                              {"wrapper", "torch/optim/optimizer.py", 487},
                              {"main", "train.py", 45}});
        }
        return {};
    }

    // --- the history as the user switched it on --------------------------
    RecipeTrace finish() {
        Trace& t = out_.trace;
        std::map<uint64_t, Live> alive;
        for (const Recorded& e : all_) {
            const bool kept = e.time >= cut_time_;
            if (kept) {
                Event ev;
                ev.time = e.time;
                ev.kind = e.kind;
                ev.address = e.address;
                ev.size = e.size;
                ev.stack = e.stack;
                t.events.push_back(ev);
                out_.truth_of.push_back(e.truth);
            }
            if (e.kind == EventKind::Alloc)
                alive[e.address] = {e.size, e.truth, kept ? e.stack : StackId()};
            else
                alive.erase(e.address);
        }
        AllocatorState state;
        for (const auto& [address, l] : alive) {
            Segment s;
            s.address = address;
            s.total_size = (l.size + 511) / 512 * 512;
            s.first_block = uint32_t(state.blocks.size());
            s.block_count = 1;
            state.segments.push_back(s);
            state.blocks.push_back(
                {address, s.total_size, l.size, l.stack, BlockState::ActiveAllocated});
            out_.blocks[address] = l.truth;
        }
        t.allocator_state = std::move(state);
        for (const Range& r : ranges_) {
            if (r.start < cut_time_) continue;
            const StringId name = t.internString(r.name);
            t.annotations.push_back({r.start, name, 0, AnnotationStage::Start});
            t.annotations.push_back({r.end, name, 0, AnnotationStage::End});
        }
        for (const Param& p : params_) {
            out_.parameter_bytes += int64_t(p.size);
            if (!p.buffer) out_.gradient_bytes += int64_t(p.size);
            out_.optimizer_state_bytes += int64_t(p.size * p.state.size());
        }
        return std::move(out_);
    }

    struct Live {
        uint64_t size = 0;
        Category truth = Category::Unknown;
        StackId stack;
    };
    struct Recorded {
        int64_t time;
        EventKind kind;
        uint64_t address, size;
        Category truth;
        StackId stack;
    };
    struct Range {
        std::string name;
        int64_t start, end;
    };

    // A batch fetched at the loop's end is large, so that calling it
    // optimizer state would show.
    static constexpr uint64_t kFetchedBatch = 1 << 20;

    const TrainingRecipe& r_;
    RecipeTrace out_;
    uint64_t next_batch_ = 0;
    std::vector<Param> params_;
    std::vector<Recorded> all_;
    std::vector<Range> ranges_;
    std::map<uint64_t, Live> live_;
    std::map<uint64_t, std::vector<uint64_t>> free_;
    int64_t t_ = 1'700'000'000'000'000'000;
    int64_t cut_time_ = 0;
    uint64_t next_ = 0x7f0000000000;
};

}  // namespace

std::vector<TrainingRecipe> issue58Classes() {
    std::vector<TrainingRecipe> out;
    // (a) PyTorch's optimizers after warm-up.
    for (UpdatePath path : {UpdatePath::Foreach, UpdatePath::Fused, UpdatePath::ForLoop})
        for (bool none : {true, false}) {
            TrainingRecipe r;
            r.path = path;
            r.set_to_none = none;
            r.name = std::string("a adamw ") +
                     (path == UpdatePath::Foreach ? "foreach"
                      : path == UpdatePath::Fused ? "fused"
                                                  : "for-loop") +
                     (none ? ", set_to_none" : ", zeroed");
            out.push_back(r);
        }
    {
        TrainingRecipe r;
        r.name = "a adamw foreach, zero_grad after step, 3 steps";
        r.zero_grad_first = false;
        r.recorded_steps = 3;
        out.push_back(r);
    }
    {
        TrainingRecipe r;
        r.name = "a sgd momentum foreach, set_to_none";
        r.optimizer = OptimizerKind::SgdMomentum;
        out.push_back(r);
    }
    // ... as older PyTorch writes them (no optimizer annotations before
    // 2.5), with Python frames only, without frames, and three steps.
    {
        TrainingRecipe r;
        r.name = "a adamw foreach, no annotations (< 2.5)";
        r.annotations = false;
        r.recorded_steps = 2;
        out.push_back(r);
    }
    {
        TrainingRecipe r;
        r.name = "a adamw foreach, python frames only";
        r.frames = RecordedFrames::Python;
        out.push_back(r);
    }
    {
        TrainingRecipe r;
        r.name = "a adamw foreach, no frames";
        r.frames = RecordedFrames::None;
        out.push_back(r);
    }
    {
        TrainingRecipe r;
        r.name = "a adamw foreach, 3 steps";
        r.recorded_steps = 3;
        out.push_back(r);
    }
    {
        TrainingRecipe r;
        r.name = "a adamw foreach, batch fetched at the loop's end";
        r.fetch_at_loop_end = true;
        r.recorded_steps = 2;
        out.push_back(r);
    }
    // (b) The first optimizer step inside the trace.
    {
        TrainingRecipe r;
        r.name = "b adamw, first step in the trace";
        r.warmup_steps = 0;
        r.recorded_steps = 2;
        out.push_back(r);
    }
    // (c) A model created inside the trace.
    {
        TrainingRecipe r;
        r.name = "c adamw, from model creation";
        r.from_creation = true;
        r.recorded_steps = 3;
        out.push_back(r);
    }
    {
        TrainingRecipe r;
        r.name = "c user's adam, from creation, python frames";
        r.optimizer = OptimizerKind::UserAdam;
        r.path = UpdatePath::ForLoop;
        r.from_creation = true;
        r.frames = RecordedFrames::Python;
        r.recorded_steps = 4;
        out.push_back(r);
    }
    // (d) Gradient accumulation.
    {
        TrainingRecipe r;
        r.name = "d adamw, 4 micro-batches";
        r.micro_batches = 4;
        out.push_back(r);
    }
    // (e) Autocast.
    {
        TrainingRecipe r;
        r.name = "e adamw, bf16 autocast";
        r.autocast = true;
        out.push_back(r);
    }
    // (f) Convolutions with BatchNorm and SGD with momentum.
    for (bool creation : {false, true}) {
        TrainingRecipe r;
        r.name = std::string("f conv+bn sgd momentum") + (creation ? ", from creation" : "");
        r.optimizer = OptimizerKind::SgdMomentum;
        r.conv_batch_norm = true;
        r.from_creation = creation;
        r.recorded_steps = creation ? 3 : 1;
        out.push_back(r);
    }
    {
        TrainingRecipe r;
        r.name = "f conv+bn sgd momentum, no frames";
        r.optimizer = OptimizerKind::SgdMomentum;
        r.conv_batch_norm = true;
        r.frames = RecordedFrames::None;
        out.push_back(r);
    }
    // The optimizer fused into backward (post-accumulate-grad hooks): its
    // state is not gradients, from the first step and after warm-up.
    for (bool first : {true, false}) {
        TrainingRecipe r;
        r.name = std::string("opt-in-bwd adamw") + (first ? ", first step in the trace" : "");
        r.optimizer_in_backward = true;
        r.warmup_steps = first ? 0 : 3;
        r.recorded_steps = 2;
        out.push_back(r);
    }
    // A user's optimizer subclassing torch.optim.Optimizer (annotated under a
    // class memscope does not know), momentum-like, gradients zeroed in place
    // (PyTorch 1.13's default): the blocks' counts say what it keeps.
    {
        TrainingRecipe r;
        r.name = "f conv+bn, a user's momentum optimizer, zeroed";
        r.optimizer = OptimizerKind::SgdMomentum;
        r.optimizer_class = "HeavyBall";
        r.conv_batch_norm = true;
        r.set_to_none = false;
        out.push_back(r);
    }
    // (g) A user's own optimizer, without PyTorch's annotations.
    for (bool creation : {false, true}) {
        TrainingRecipe r;
        r.name = std::string("g user's adam") + (creation ? ", from creation" : "");
        r.optimizer = OptimizerKind::UserAdam;
        r.path = UpdatePath::ForLoop;
        r.from_creation = creation;
        r.recorded_steps = creation ? 3 : 2;
        out.push_back(r);
    }
    return out;
}

RecipeTrace buildRecipe(const TrainingRecipe& recipe) {
    return Builder(recipe).build();
}

}  // namespace memscope::recipes
