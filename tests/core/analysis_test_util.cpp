#include "analysis_test_util.h"

#include <algorithm>
#include <utility>

namespace memscope::testutil {

Trace trainingRun(const std::string& name, const std::string& policy, uint64_t act,
                  uint64_t recompute, int steps, bool optimizer_in_backward) {
    Trace t;
    t.metadata.name = name;
    t.metadata.source_format = "test";
    RunMetrics m;
    m.policy = policy;
    int64_t now = 1'000'000'000'000'000'000;
    uint64_t next = 0x10000;
    auto alloc = [&](uint64_t size, Category c, PhaseId ph) {
        const uint64_t a = next;
        next += 0x10000;
        t.events.push_back(event(now += 10, EventKind::Alloc, a, size, c, ph));
        return a;
    };
    auto release = [&](uint64_t a, uint64_t size, Category c, PhaseId ph) {
        t.events.push_back(event(now += 10, EventKind::FreeCompleted, a, size, c, ph));
    };
    alloc(1000, Category::Parameter, {});
    uint64_t state = 0;
    for (int s = 0; s < steps; ++s) {
        const int64_t step_start = now;
        const PhaseId step = t.addPhase({t.internString("step " + std::to_string(s)),
                                         PhaseKind::Step,
                                         {},
                                         s,
                                         -1,
                                         -1,
                                         now,
                                         now});
        const PhaseId fwd =
            t.addPhase({t.internString("forward"), PhaseKind::Forward, step, s, -1, -1, now, now});
        const uint64_t a = alloc(act, Category::Activation, fwd);
        const uint64_t tmp = alloc(50, Category::Temporary, fwd);
        release(tmp, 50, Category::Temporary, fwd);
        t.phases[fwd.value - 1].end = now += 10000;
        const PhaseId bwd = t.addPhase(
            {t.internString("backward"), PhaseKind::Backward, step, s, -1, -1, now, now});
        if (recompute) {
            const PhaseId rc = t.addPhase(
                {t.internString("recompute"), PhaseKind::Recompute, bwd, s, -1, -1, now, now});
            const uint64_t r = alloc(recompute, Category::Activation, rc);
            release(r, recompute, Category::Activation, rc);
            t.phases[rc.value - 1].end = now += 10000;
        }
        const uint64_t g = alloc(1000, Category::Gradient, bwd);
        release(a, act, Category::Activation, bwd);
        auto optimizer = [&](PhaseId parent) {
            const PhaseId opt = t.addPhase(
                {t.internString("optimizer"), PhaseKind::Optimizer, parent, s, -1, -1, now, now});
            if (!state) state = alloc(2000, Category::OptimizerState, opt);
            const uint64_t tmp2 = alloc(300, Category::Temporary, opt);
            release(tmp2, 300, Category::Temporary, opt);
            release(g, 1000, Category::Gradient, opt);
            t.phases[opt.value - 1].end = now += 10000;
        };
        if (optimizer_in_backward) optimizer(bwd);
        t.phases[bwd.value - 1].end = now += 10000;
        if (!optimizer_in_backward) optimizer(step);
        t.phases[step.value - 1].end = now += 10000;
        m.step_ns.push_back(now - step_start);
        m.recompute_ns.push_back(recompute ? 10000 : 0);
    }
    t.metrics = m;
    return t;
}

Trace makeRun(int64_t len, std::string name) {
    Trace t;
    t.metadata.name = std::move(name);
    int64_t s = 1000;
    for (int k = 0; k < 2; ++k) {
        Phase step{t.internString("step " + std::to_string(k)),
                   PhaseKind::Step,
                   {},
                   k,
                   -1,
                   -1,
                   s,
                   s + len};
        const PhaseId sid = t.addPhase(step);
        const PhaseId fwd = t.addPhase(Phase{t.internString("forward"), PhaseKind::Forward, sid, k,
                                             -1, -1, s, s + len * 4 / 10});
        t.addPhase(Phase{t.internString("backward"), PhaseKind::Backward, sid, k, -1, -1,
                         s + len * 4 / 10, s + len * 9 / 10});
        t.events.push_back(ev(s + 1, EventKind::SegmentAlloc, 0x1000, 1024));
        t.events.push_back(ev(s + 2, EventKind::Alloc, 0x1000, 100));
        t.events.back().phase = fwd;
        t.events.push_back(ev(s + len * 4 / 10 + 1, EventKind::FreeCompleted, 0x1000, 100));
        t.events.push_back(ev(s + len - 1, EventKind::SegmentFree, 0x1000, 1024));
        s += len;
    }
    return t;
}

Stacked realisticStack() {
    Stacked s;
    Trace& t = s.trace;
    const std::pair<const char*, const char*> frames[] = {
        {"torch::unwind::unwind()", "??"},
        {"c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(int, unsigned "
         "long)",
         "CUDACachingAllocator.cpp"},
        {"at::detail::empty_strided_cuda(c10::ArrayRef<long>)", "??"},
        {"c10::impl::wrap_kernel_functor_unboxed_<...>::call", "RegisterCUDA_0.cpp"},
        {"at::_ops::_softmax::call(at::Tensor const&, long, bool)", "Operators_2.cpp"},
        {"_PyEval_EvalFrameDefault", "??"},
        {"softmax", "/usr/lib/python3/dist-packages/torch/nn/functional.py"},
        {"forward", "/home/me/project/model.py"},
        {"_call_impl", "/usr/lib/python3/dist-packages/torch/nn/modules/module.py"},
        {"train", "/home/me/project/train.py"},
        {"torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)",
         "??"},
        {"start_thread", "./nptl/pthread_create.c"},
    };
    for (const auto& [fn, file] : frames)
        s.frames.push_back(t.internFrame({t.internString(fn), t.internString(file), 7}));
    s.stack = t.internStack(s.frames);
    return s;
}

namespace {

struct LayeredBuilder {
    Trace t;
    uint64_t next_address = 0x1000;
    std::vector<uint64_t> params;

    uint64_t alloc(int64_t time, uint64_t size, Category c, PhaseId phase) {
        Event e;
        e.time = time;
        e.kind = EventKind::Alloc;
        e.address = next_address;
        next_address += 4096;
        e.size = size;
        e.category = c;
        e.phase = phase;
        t.events.push_back(e);
        return e.address;
    }
    void free(int64_t time, uint64_t address, uint64_t size, Category c, PhaseId phase) {
        Event e;
        e.time = time;
        e.kind = EventKind::FreeCompleted;
        e.address = address;
        e.size = size;
        e.category = c;
        e.phase = phase;
        t.events.push_back(e);
    }
    PhaseId phase(PhaseKind kind, const char* name, PhaseId parent, int64_t start, int64_t end,
                  int32_t step) {
        Phase p;
        p.kind = kind;
        p.name = t.internString(name);
        p.parent = parent;
        p.start = start;
        p.end = end;
        p.step = step;
        return t.addPhase(p);
    }
};

}  // namespace

Trace layeredFullSaveRun(int steps, const std::string& policy) {
    LayeredBuilder b;
    b.t.metadata.name = "gpt-full";
    RunMetrics m;
    m.policy = policy;
    ModuleInterner modules(b.t);
    std::vector<ModuleId> layer;
    for (int k = 0; k < kLayers; ++k)
        layer.push_back(modules.intern("GPT", "h." + std::to_string(k), "Block"));
    b.t.modules.source = ModuleSource::Recorded;
    for (int k = 0; k < kLayers; ++k)
        b.params.push_back(b.alloc(500, 300, Category::Parameter, {}));
    std::vector<uint64_t> state;
    for (int s = 0; s < steps; ++s) {
        const int64_t B = kLayeredT0 + s * kLayeredStepLen;
        const PhaseId step = b.phase(PhaseKind::Step, "step", {}, B, B + 9000, s);
        const PhaseId fwd = b.phase(PhaseKind::Forward, "forward", step, B, B + 4000, s);
        const PhaseId bwd = b.phase(PhaseKind::Backward, "backward", step, B + 4000, B + 8000, s);
        const PhaseId opt = b.phase(PhaseKind::Optimizer, "optimizer", step, B + 8000, B + 9000, s);
        std::vector<uint64_t> saved(kLayers), out(kLayers), grads(kLayers);
        for (int k = 0; k < kLayers; ++k) {
            const int64_t f = B + 100 + k * 1000;
            b.t.modules.scopes.push_back({f, f + 800, layer[size_t(k)], ModuleScopeKind::Forward});
            saved[size_t(k)] = b.alloc(f, 1000, Category::Activation, fwd);
            const uint64_t temp = b.alloc(f + 100, 200, Category::Temporary, fwd);
            b.free(f + 200, temp, 200, Category::Temporary, fwd);
            out[size_t(k)] = b.alloc(f + 300, 100, Category::Activation, fwd);
        }
        const uint64_t head = b.alloc(B + 3950, 50, Category::Activation, fwd);
        b.free(B + 4100, head, 50, Category::Activation, bwd);
        b.free(B + 4150, out[kLayers - 1], 100, Category::Activation, bwd);
        for (int k = kLayers - 1; k >= 0; --k) {
            const int64_t at = B + 4200 + (kLayers - 1 - k) * 900;
            grads[size_t(k)] = b.alloc(at + 100, 300, Category::Gradient, bwd);
            b.free(at + 200, saved[size_t(k)], 1000, Category::Activation, bwd);
            if (k > 0) b.free(at + 500, out[size_t(k - 1)], 100, Category::Activation, bwd);
        }
        const uint64_t scratch = b.alloc(B + 8100, 1200, Category::Temporary, opt);
        b.free(B + 8200, scratch, 1200, Category::Temporary, opt);
        if (s == 0)
            for (int k = 0; k < 2 * kLayers; ++k)
                state.push_back(b.alloc(B + 8300 + k, 300, Category::OptimizerState, opt));
        for (int k = 0; k < kLayers; ++k)
            b.free(B + 8500 + k, grads[size_t(k)], 300, Category::Gradient, opt);
        m.step_ns.push_back(9000);
        m.recompute_ns.push_back(0);
    }
    std::stable_sort(b.t.events.begin(), b.t.events.end(),
                     [](const Event& x, const Event& y) { return x.time < y.time; });
    b.t.metrics = m;
    return std::move(b.t);
}

namespace {

constexpr uint64_t MiB = 1 << 20;
constexpr int64_t kStepLen = 1'000'000;
constexpr int64_t kT0 = 1'000'000'000'000'000'000;

}  // namespace

Trace leakyRun(const LeakyOptions& o) {
    Trace t;
    t.metadata.name = "leaky";
    auto frame = [&](const char* fn, const char* file, uint32_t line) {
        return t.internFrame({t.internString(fn), t.internString(file), line});
    };
    const FrameId train = frame("train", "/home/me/train.py", 80);
    const FrameId block_fwd = frame("forward", "/home/me/model.py", 30);
    const FrameId head_fwd = frame("forward", "/home/me/model.py", 50);
    const FrameId hook = frame("save_output", "/home/me/train.py", 20);
    const FrameId cache = frame("cached_mask", "/home/me/model.py", 70);
    const FrameId s_block[] = {block_fwd, train}, s_head[] = {head_fwd, train},
                  s_hook[] = {hook, block_fwd, train}, s_cache[] = {cache, train};
    const StackId block_stack = t.internStack(s_block), head_stack = t.internStack(s_head),
                  hook_stack = t.internStack(s_hook), cache_stack = t.internStack(s_cache);
    ModuleInterner in(t);
    std::vector<ModuleId> blocks;
    for (int k = 0; k < 4; ++k) blocks.push_back(in.intern("Net", "blocks." + std::to_string(k)));
    const ModuleId head = in.intern("Net", "head");
    if (o.modules) t.modules.source = ModuleSource::Recorded;
    uint64_t next = 0x100000;
    auto alloc = [&](int64_t time, uint64_t size, Category c, PhaseId ph, StackId s = {}) {
        Event e = testutil::event(time, EventKind::Alloc, next, size, c, ph);
        e.stack = s;
        t.events.push_back(e);
        next += 0x10000000;
        return std::pair{e.address, size};
    };
    auto release = [&](int64_t time, std::pair<uint64_t, uint64_t> a, Category c, PhaseId ph) {
        t.events.push_back(
            testutil::event(time, EventKind::FreeCompleted, a.first, a.second, c, ph));
    };
    auto scope = [&](int64_t start, int64_t end, ModuleId m) {
        if (o.modules) t.modules.scopes.push_back({start, end, m, ModuleScopeKind::Forward});
    };
    alloc(kT0 - 1000, 8 * MiB, Category::Parameter, {});
    for (int s = 0; s < o.steps; ++s) {
        const int64_t B = kT0 + s * kStepLen;
        auto phase = [&](PhaseKind kind, const char* name, PhaseId parent, int64_t a, int64_t b) {
            return t.addPhase({t.internString(name), kind, parent, s, -1, -1, B + a, B + b});
        };
        const PhaseId step = phase(PhaseKind::Step, "step", {}, 0, 900000);
        const PhaseId fwd = phase(PhaseKind::Forward, "forward", step, 0, 400000);
        const PhaseId bwd = phase(PhaseKind::Backward, "backward", step, 400000, 800000);
        const PhaseId opt = phase(PhaseKind::Optimizer, "optimizer", step, 800000, 900000);
        if (s == 0) alloc(B + 100, 4 * MiB, Category::Unknown, fwd);  // warm-up workspace, kept
        std::vector<std::pair<uint64_t, uint64_t>> saved;
        for (int k = 0; k < 4; ++k) {
            const int64_t f = B + 1000 + k * 50000;
            scope(f, f + 40000, blocks[size_t(k)]);
            saved.push_back(alloc(f + 10, MiB, Category::Activation, fwd, block_stack));
            if (k == 3) {
                const auto out = alloc(f + 20, MiB / 2, Category::Activation, fwd, hook_stack);
                if (!o.hook_stores) release(f + 30, out, Category::Activation, fwd);
            }
        }
        scope(B + 250000, B + 300000, head);
        const auto logits = alloc(B + 250010, 2 * MiB, Category::Activation, fwd, head_stack);
        if (o.plateau_cache && s < 4) alloc(B + 350000, MiB, Category::Unknown, fwd, cache_stack);
        for (size_t k = 0; k < saved.size(); ++k)
            release(B + 400000 + int64_t(k) * 10, saved[k], Category::Activation, bwd);
        if (!o.keep_logits) release(B + 450000, logits, Category::Activation, bwd);
        const auto grads = alloc(B + 500000, 8 * MiB, Category::Gradient, bwd);
        if (s == 0) alloc(B + 800010, 16 * MiB, Category::OptimizerState, opt);  // kept
        const auto tmp = alloc(B + 800020, MiB + uint64_t(s) * 4096, Category::Temporary, opt);
        release(B + 800030, tmp, Category::Temporary, opt);
        release(B + 850000, grads, Category::Gradient, opt);
    }
    return t;
}

Trace fragmentedOom() {
    constexpr uint64_t MiB = 1024 * 1024;
    Trace t;
    const uint64_t s = 0x7f0000000000;
    t.events = {ev(0, EventKind::SegmentAlloc, s, 270 * MiB),
                ev(1, EventKind::Alloc, s, 270 * MiB),
                ev(2, EventKind::FreeCompleted, s, 270 * MiB),
                ev(3, EventKind::Alloc, s, 5 * MiB),
                ev(4, EventKind::Alloc, s + 5 * MiB, 5 * MiB),
                ev(5, EventKind::Alloc, s + 10 * MiB, 5 * MiB),
                ev(6, EventKind::Alloc, s + 15 * MiB, 5 * MiB),
                ev(7, EventKind::FreeCompleted, s, 5 * MiB),
                ev(8, EventKind::FreeCompleted, s + 10 * MiB, 5 * MiB),
                ev(9, EventKind::Oom, 0, 255 * MiB)};
    t.attributes.push_back(
        {9, t.internString("device_free"), t.internString(std::to_string(30 * MiB))});
    return t;
}

}  // namespace memscope::testutil
