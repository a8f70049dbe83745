#include "gui_test_traces.h"

#include <QDir>
#include <QFile>
#include <algorithm>
#include <array>

#include "memscope/format/native_format.h"
#include "memscope_test/event_builder.h"

namespace memscope::guitest {

namespace {

// An event with its stack and phase (tests/support's builder, positionally).
Event ev(int64_t t, EventKind k, uint64_t addr, uint64_t size, Category c, StackId stack = {},
         PhaseId phase = {}) {
    return testsupport::makeEvent(t, k, addr, size, c).stack(stack).phase(phase);
}

}  // namespace

Trace makeSimpleTrace() {
    Trace t;
    t.metadata.name = "simple";
    t.metadata.source_format = "test";
    const FrameId fwd = t.internFrame({t.internString("forward"), t.internString("model.py"), 12});
    const FrameId noise =
        t.internFrame({t.internString("PyEval_EvalFrame"), t.internString("ceval.c"), 1});
    const FrameId bwd = t.internFrame({t.internString("backward"), t.internString("engine.py"), 7});
    const std::array fa{fwd, noise};
    const StackId sa = t.internStack(fa);
    const std::array fb{bwd};
    const StackId sb = t.internStack(fb);
    const PhaseId step =
        t.addPhase({t.internString("step 0"), PhaseKind::Step, {}, 0, -1, -1, 5, 60});
    const PhaseId f =
        t.addPhase({t.internString("forward"), PhaseKind::Forward, step, 0, -1, -1, 5, 25});
    const PhaseId b =
        t.addPhase({t.internString("backward"), PhaseKind::Backward, step, 0, -1, -1, 25, 55});
    t.events = {
        ev(5, EventKind::SegmentAlloc, 0x1000, 0x4000, Category::Unknown, {}, step),
        ev(10, EventKind::Alloc, 0x1000, 100, Category::Activation, sa, f),
        ev(20, EventKind::Alloc, 0x2000, 300, Category::Gradient, sb, f),
        ev(30, EventKind::FreeCompleted, 0x1000, 100, Category::Activation, sa, b),
        ev(40, EventKind::Alloc, 0x3000, 50, Category::Temporary, {}, b),
        ev(50, EventKind::FreeCompleted, 0x2000, 300, Category::Gradient, sb, b),
    };
    return t;
}

Trace makeTrainerLikeTrace(const std::string& policy, int steps) {
    Trace t;
    t.metadata.name = policy;
    t.metadata.source_format = "test";
    constexpr int kBlocks = 4;
    constexpr uint64_t kParam = 1 << 20;  // per block
    // Bytes saved per block in forward, and whether backward recomputes.
    uint64_t saved = 4 * kParam;
    bool recompute = false;
    double overhead = 0.0;
    if (policy == "block") {
        saved = kParam / 2;
        recompute = true;
        overhead = 0.33;
    } else if (policy == "selective") {
        saved = 2 * kParam;
        recompute = true;
        overhead = 0.05;
    }
    const bool optInBwd = policy == "opt-in-bwd";
    // What the trainer records besides memory: 10 ms steps, the policy's share recomputing.
    RunMetrics metrics;
    metrics.policy = policy;
    metrics.step_ns.assign(size_t(steps), 10'000'000);
    metrics.recompute_ns.assign(size_t(steps), int64_t(overhead * 10'000'000));
    // An mlp whose block input (s·b·h fp32 elements) is what "block" saves,
    // so the theory charts' prediction for it holds exactly.
    ModelShape shape;
    shape.name = "mlp";
    shape.dtype = "float32";
    shape.layers = kBlocks;
    shape.hidden = 128, shape.seq = 256, shape.batch = 4;
    metrics.model = shape;
    t.metrics = metrics;
    const FrameId fr =
        t.internFrame({t.internString("Block.forward"), t.internString("model.cpp"), 40});
    const std::array frames{fr};
    const StackId st = t.internStack(frames);

    int64_t now = 1'000'000'000;  // ns
    uint64_t next = 0x7f0000000000;
    auto alloc = [&](uint64_t size, Category c, PhaseId ph) {
        const uint64_t a = next;
        next += (size + 511) / 512 * 512;
        t.events.push_back(ev(now++, EventKind::Alloc, a, size, c, st, ph));
        return a;
    };
    auto release = [&](uint64_t a, uint64_t size, Category c, PhaseId ph) {
        t.events.push_back(ev(now++, EventKind::FreeCompleted, a, size, c, st, ph));
    };
    for (int b = 0; b < kBlocks; ++b) alloc(kParam, Category::Parameter, {});
    std::vector<uint64_t> grads, optState;
    const int64_t blockNs = recompute ? 1'300'000 : 1'000'000;
    for (int s = 0; s < steps; ++s) {
        const int64_t stepStart = now;
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
        std::vector<uint64_t> acts;
        for (int b = 0; b < kBlocks; ++b) {
            const PhaseId blk = t.addPhase({t.internString("block " + std::to_string(b)),
                                            PhaseKind::Block, fwd, s, b, -1, now, now});
            acts.push_back(alloc(saved, Category::Activation, blk));
            const uint64_t tmp = alloc(kParam / 4, Category::Temporary, blk);
            now += 1'000'000;
            release(tmp, kParam / 4, Category::Temporary, blk);
            t.phases[blk.value - 1].end = now;
        }
        t.phases[fwd.value - 1].end = now;
        const PhaseId bwd = t.addPhase(
            {t.internString("backward"), PhaseKind::Backward, step, s, -1, -1, now, now});
        for (int b = kBlocks - 1; b >= 0; --b) {
            const PhaseId blk = t.addPhase({t.internString("block " + std::to_string(b)),
                                            PhaseKind::Block, bwd, s, b, -1, now, now});
            uint64_t re = 0;
            if (recompute) {
                const PhaseId rc = t.addPhase(
                    {t.internString("recompute"), PhaseKind::Recompute, blk, s, b, -1, now, now});
                re = alloc(4 * kParam - saved, Category::Activation, rc);
                now += blockNs - 1'000'000;
                t.phases[rc.value - 1].end = now;
            }
            if (s == 0 || optInBwd) grads.push_back(alloc(kParam, Category::Gradient, blk));
            now += 1'000'000;
            if (re) release(re, 4 * kParam - saved, Category::Activation, blk);
            release(acts[size_t(b)], saved, Category::Activation, blk);
            if (optInBwd) {
                // The optimizer step runs as soon as the gradient exists, then frees it.
                if (s == 0) optState.push_back(alloc(2 * kParam, Category::OptimizerState, blk));
                release(grads.back(), kParam, Category::Gradient, blk);
                grads.pop_back();
            }
            t.phases[blk.value - 1].end = now;
        }
        t.phases[bwd.value - 1].end = now;
        if (!optInBwd) {
            const PhaseId opt = t.addPhase(
                {t.internString("optimizer"), PhaseKind::Optimizer, step, s, -1, -1, now, now});
            if (s == 0)
                for (int b = 0; b < kBlocks; ++b)
                    optState.push_back(alloc(2 * kParam, Category::OptimizerState, opt));
            const uint64_t tmp = alloc(kBlocks * kParam, Category::Temporary, opt);
            now += 500'000;
            release(tmp, kBlocks * kParam, Category::Temporary, opt);
            t.phases[opt.value - 1].end = now;
        }
        t.phases[step.value - 1].end = now;
        (void)stepStart;
    }
    return t;
}

Trace makeModuleTrace(int h1Scale, ModuleSource source) {
    Trace t;
    t.metadata.name = "modules";
    t.metadata.source_format = "test";
    ModuleInterner in(t);
    auto scope = [&](std::string_view path, int64_t a, int64_t b,
                     ModuleScopeKind k = ModuleScopeKind::Forward) {
        t.modules.scopes.push_back({a, b, in.intern("GPT", path), k});
    };
    scope("", 10, 55);
    scope("h.0", 10, 30);
    scope("h.0.attn", 10, 20);
    scope("h.0.mlp", 20, 30);
    scope("h.1", 30, 50);
    scope("h.1.attn", 30, 40);
    scope("h.1.mlp", 40, 50);
    scope("lm_head", 50, 55);
    scope("h.0", 62, 68, ModuleScopeKind::Recompute);
    t.modules.source = source;
    struct A {
        int64_t start, end;
        uint64_t address, size;
        Category c;
    };
    const uint64_t s1 = uint64_t(h1Scale);
    const A allocs[] = {
        {1, -1, 0x1000, 1000, Category::Parameter},
        {12, 80, 0x2000, 200, Category::Activation},
        {22, 75, 0x3000, 300, Category::Activation},
        {25, 26, 0x4000, 50, Category::Temporary},
        {32, 70, 0x5000, 400 * s1, Category::Activation},
        {45, 65, 0x6000, 100 * s1, Category::Activation},
        {52, 60, 0x7000, 250, Category::Activation},
        {63, 78, 0x8000, 150, Category::Activation},
    };
    for (const A& a : allocs) {
        t.events.push_back(ev(a.start, EventKind::Alloc, a.address, a.size, a.c));
        if (a.end >= 0)
            t.events.push_back(ev(a.end, EventKind::FreeCompleted, a.address, a.size, a.c));
    }
    std::stable_sort(t.events.begin(), t.events.end(),
                     [](const Event& a, const Event& b) { return a.time < b.time; });
    return t;
}

Trace makeModuleTrainingTrace(int layers, int steps) {
    Trace t;
    t.metadata.name = "gpt";
    t.metadata.source_format = "test";
    ModuleInterner in(t);
    constexpr uint64_t kMiB = 1 << 20;
    int64_t now = 1'000'000;
    uint64_t next = 0x7f0000000000;
    auto alloc = [&](uint64_t size, Category c) {
        const uint64_t a = next;
        next += size;
        t.events.push_back(ev(now, EventKind::Alloc, a, size, c));
        now += 1000;
        return a;
    };
    auto release = [&](uint64_t a, uint64_t size, Category c) {
        t.events.push_back(ev(now, EventKind::FreeCompleted, a, size, c));
        now += 1000;
    };
    auto scope = [&](const std::string& path, int64_t start,
                     ModuleScopeKind k = ModuleScopeKind::Forward) {
        t.modules.scopes.push_back({start, now, in.intern("GPT", path), k});
    };
    const uint64_t param = 8 * kMiB;
    for (int l = 0; l < layers + 2; ++l) alloc(param, Category::Parameter);
    std::vector<std::pair<uint64_t, uint64_t>> grads;
    for (int s = 0; s < steps; ++s) {
        const int64_t fwd = now;
        std::vector<std::vector<std::pair<uint64_t, uint64_t>>> saved(size_t(layers + 1));
        const int64_t e0 = now;
        saved[0].push_back({alloc(6 * kMiB, Category::Activation), 6 * kMiB});
        scope("wte", e0);
        for (int l = 0; l < layers; ++l) {
            const std::string h = "h." + std::to_string(l);
            const int64_t b0 = now;
            const int64_t a0 = now;
            saved[size_t(l + 1)].push_back({alloc(12 * kMiB, Category::Activation), 12 * kMiB});
            const uint64_t tmp = alloc(4 * kMiB, Category::Temporary);
            release(tmp, 4 * kMiB, Category::Temporary);
            scope(h + ".attn", a0);
            const int64_t m0 = now;
            saved[size_t(l + 1)].push_back({alloc(16 * kMiB, Category::Activation), 16 * kMiB});
            scope(h + ".mlp", m0);
            scope(h, b0);
        }
        const int64_t l0 = now;
        const uint64_t logits = alloc(24 * kMiB, Category::Activation);
        scope("lm_head", l0);
        scope("", fwd);
        release(logits, 24 * kMiB, Category::Activation);
        for (int l = layers; l >= 0; --l) {
            const int64_t b0 = now;
            if (s == 0) grads.push_back({alloc(param, Category::Gradient), param});
            const uint64_t tmp = alloc(10 * kMiB, Category::Temporary);
            release(tmp, 10 * kMiB, Category::Temporary);
            for (auto [a, size] : saved[size_t(l)]) release(a, size, Category::Activation);
            scope(l == 0 ? std::string("wte") : "h." + std::to_string(l - 1), b0,
                  ModuleScopeKind::Backward);
        }
        if (s == 0)
            for (int l = 0; l < layers + 2; ++l) alloc(2 * param, Category::OptimizerState);
        now += 50'000;
    }
    t.modules.source = ModuleSource::Recorded;
    return t;
}

Trace makeWhatIfSourceTrace(int steps) {
    Trace t;
    t.metadata.name = "mlp full";
    t.metadata.source_format = "test";
    constexpr int kLayers = 4;
    constexpr uint64_t kMiB = 1 << 20;
    RunMetrics metrics;
    metrics.policy = "full";
    metrics.step_ns.assign(size_t(steps), 10'000'000);
    metrics.recompute_ns.assign(size_t(steps), 0);
    t.metrics = metrics;
    ModuleInterner in(t);
    const ModuleId root = in.intern("MLP", "");
    std::vector<ModuleId> layers;
    for (int l = 0; l < kLayers; ++l) layers.push_back(in.intern("MLP", "h." + std::to_string(l)));
    int64_t now = 1'000'000'000;  // ns
    uint64_t next = 0x7f0000000000;
    auto alloc = [&](uint64_t size, Category c, PhaseId ph) {
        const uint64_t a = next;
        next += size;
        t.events.push_back(ev(now, EventKind::Alloc, a, size, c, {}, ph));
        now += 1000;
        return a;
    };
    auto release = [&](uint64_t a, uint64_t size, Category c, PhaseId ph) {
        t.events.push_back(ev(now, EventKind::FreeCompleted, a, size, c, {}, ph));
        now += 1000;
    };
    auto phase = [&](const std::string& name, PhaseKind k, PhaseId parent, int s) {
        return t.addPhase({t.internString(name), k, parent, s, -1, -1, now, now});
    };
    auto close = [&](PhaseId p) { t.phases[p.value - 1].end = now; };
    for (int l = 0; l < kLayers; ++l) alloc(kMiB, Category::Parameter, {});
    std::vector<uint64_t> grads, state;
    for (int s = 0; s < steps; ++s) {
        const PhaseId step = phase("step " + std::to_string(s), PhaseKind::Step, {}, s);
        const PhaseId fwd = phase("forward", PhaseKind::Forward, step, s);
        const int64_t f0 = now;
        // Each layer saves an inner activation (what checkpointing frees) and
        // its output (the next layer's input, which the checkpoint keeps).
        std::vector<std::array<uint64_t, 2>> saved;
        for (int l = 0; l < kLayers; ++l) {
            const int64_t l0 = now;
            const uint64_t inner = alloc(3 * kMiB, Category::Activation, fwd);
            const uint64_t tmp = alloc(kMiB / 4, Category::Temporary, fwd);
            release(tmp, kMiB / 4, Category::Temporary, fwd);
            const uint64_t out = alloc(kMiB, Category::Activation, fwd);
            now += 500'000;
            saved.push_back({inner, out});
            t.modules.scopes.push_back({l0, now, layers[size_t(l)], ModuleScopeKind::Forward});
        }
        t.modules.scopes.push_back({f0, now, root, ModuleScopeKind::Forward});
        close(fwd);
        const PhaseId bwd = phase("backward", PhaseKind::Backward, step, s);
        for (int l = kLayers - 1; l >= 0; --l) {
            const int64_t l0 = now;
            if (s == 0) grads.push_back(alloc(kMiB, Category::Gradient, bwd));
            now += 500'000;
            release(saved[size_t(l)][0], 3 * kMiB, Category::Activation, bwd);
            release(saved[size_t(l)][1], kMiB, Category::Activation, bwd);
            t.modules.scopes.push_back({l0, now, layers[size_t(l)], ModuleScopeKind::Backward});
        }
        close(bwd);
        const PhaseId opt = phase("optimizer", PhaseKind::Optimizer, step, s);
        if (s == 0)
            for (int l = 0; l < kLayers; ++l)
                state.push_back(alloc(2 * kMiB, Category::OptimizerState, opt));
        const uint64_t tmp = alloc(kLayers * kMiB, Category::Temporary, opt);
        now += 200'000;
        release(tmp, kLayers * kMiB, Category::Temporary, opt);
        close(opt);
        close(step);
    }
    t.modules.source = ModuleSource::Recorded;
    return t;
}

QString writeTrace(const Trace& trace, const QString& path) {
    auto r = writeNativeTrace(trace, QFile::encodeName(path).toStdString());
    return r.ok() ? path : QString();
}

QString fixturesDir() {
    return QDir::cleanPath(QStringLiteral(MEMSCOPE_FIXTURES_DIR));
}

bool haveFixtures() {
    return QDir(fixturesDir()).exists();
}

}  // namespace memscope::guitest
