#include "analysis_test_util.h"

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

}  // namespace memscope::testutil
