// The what-if simulator on a full-save run built by hand, so that what each
// policy must change is known: 4 layers h.0–h.3, each saving 1000 B for
// backward, a 200 B temporary and a 100 B output per step; gradients of
// 300 B per layer freed by the optimizer, whose state (2 x 300 B per layer)
// is born in the first optimizer step.
#include "memscope/analysis/whatif.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "memscope/format/native_format.h"
#include "memscope/open/open_run.h"

namespace memscope {
namespace {

constexpr int kLayers = 4;
constexpr int64_t kStepLen = 10000;
constexpr int64_t kT0 = 1000;

struct Builder {
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

// Events are made in time order within each step (the helper sorts at the end).
Trace fullSaveRun(int steps = 2, const std::string& policy = "full") {
    Builder b;
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
        const int64_t B = kT0 + s * kStepLen;
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

struct Opened {
    std::shared_ptr<const Trace> trace;
    std::shared_ptr<const Timeline> timeline;
};
Opened open(Trace t) {
    auto o = openTrace(std::move(t), "full.memscope");
    EXPECT_TRUE(o.ok()) << o.message();
    return {o->trace, o->timeline};
}

WhatIfReport predict(const Opened& o, std::vector<std::string> names, bool keep = true) {
    auto policies = parseWhatIfPolicies(names);
    EXPECT_TRUE(policies.ok()) << policies.message();
    auto r = whatIf(*o.trace, *o.timeline, "full.memscope", *policies, {.keep_traces = keep});
    EXPECT_TRUE(r.ok()) << r.message();
    return std::move(*r);
}

// Live bytes on device 0 at time x.
int64_t liveAt(const Timeline& tl, int64_t x) {
    return tl.device(0)->live.valueAt(x);
}

TEST(WhatIfPolicies, ParsesLayerListsAndComposedPolicies) {
    auto p = parseWhatIfPolicies(std::vector<std::string>{"layers:0,2,4", "block,sqrt+opt-in-bwd"});
    ASSERT_TRUE(p.ok()) << p.message();
    ASSERT_EQ(p->size(), 3u);
    EXPECT_EQ((*p)[0].name, "layers:0,2,4");
    EXPECT_EQ((*p)[0].layers, (std::vector<int64_t>{0, 2, 4}));
    EXPECT_EQ((*p)[1].name, "block");
    EXPECT_EQ((*p)[2].name, "sqrt+opt-in-bwd");
    auto range = parseWhatIfPolicy("layers:1-3+opt-in-bwd");
    ASSERT_TRUE(range.ok()) << range.message();
    EXPECT_EQ(range->layers, (std::vector<int64_t>{1, 2, 3}));
    EXPECT_TRUE(range->policy.optimizer_in_backward);
    for (const char* bad : {"layers:", "layers:x", "layers:3-1", "layers:0+block", "nonsense"})
        EXPECT_FALSE(parseWhatIfPolicy(bad).ok()) << bad;
    EXPECT_FALSE(parseWhatIfPolicies(std::vector<std::string>{"sweep"}).ok());
}

TEST(WhatIfLayers, FindsTheChainOfNumberedSiblings) {
    const Opened o = open(fullSaveRun());
    auto chain = findLayerChain(*o.trace, 0);
    ASSERT_TRUE(chain.ok()) << chain.message();
    ASSERT_EQ(chain->layers.size(), size_t(kLayers));
    EXPECT_EQ(chain->layers[2].name, "h.2");
    EXPECT_EQ(chain->source, ModuleSource::Recorded);
    ASSERT_EQ(chain->steps.size(), 2u);
    ASSERT_EQ(chain->layers[0].runs.size(), 2u);
    EXPECT_EQ(chain->layers[0].runs[1].forward_start, kT0 + kStepLen + 100);

    Trace bare = fullSaveRun();
    bare.modules = ModuleTable{};
    EXPECT_FALSE(findLayerChain(bare, 0).ok());
}

TEST(WhatIf, BlockFreesWhatEachLayerSavedAndReplaysItInBackward) {
    const Opened o = open(fullSaveRun());
    const WhatIfReport r = predict(o, {"block"});
    ASSERT_EQ(r.rows.size(), 2u);
    const WhatIfRow& block = r.rows[1];
    ASSERT_FALSE(block.refused) << *block.refused;
    ASSERT_TRUE(block.trace);
    ASSERT_TRUE(block.trace->prediction);
    EXPECT_EQ(block.trace->prediction->policy, "block");
    EXPECT_EQ(block.trace->metadata.name, "block (predicted)");
    EXPECT_FALSE(block.assumptions.empty());

    // At the end of the measured forward: parameters, 4 x (1000 saved + 100
    // output), the head's 50 (and from step 1 on the state). Predicted: the
    // saved bytes are gone; only the outputs are kept.
    const int64_t measured_end = liveAt(*o.timeline, kT0 + 3999);
    const int64_t predicted_end = liveAt(*block.timeline, kT0 + 3999);
    EXPECT_EQ(measured_end - predicted_end, kLayers * 1000);

    // One recompute phase per layer and step, each the layer's forward time.
    int recomputes = 0;
    for (const Phase& p : block.trace->phases)
        if (p.kind == PhaseKind::Recompute) {
            ++recomputes;
            EXPECT_EQ(p.end - p.start, 800);
        }
    EXPECT_EQ(recomputes, 2 * kLayers);
    EXPECT_EQ(block.recompute_ns, kLayers * 800);
    EXPECT_NEAR(block.step_time_ratio, (9000.0 + kLayers * 800) / 9000.0, 1e-9);
    ASSERT_TRUE(block.trace->metrics);
    EXPECT_EQ(block.trace->metrics->step_ns[0], 9000 + kLayers * 800);

    // Events stay in time order, and every predicted allocation is freed.
    int64_t last = INT64_MIN;
    for (const Event& e : block.trace->events) {
        EXPECT_GE(e.time, last);
        last = e.time;
    }
    EXPECT_EQ(block.timeline->device(0)->live.ys().back(), o.timeline->device(0)->live.ys().back());

    // The peak: full-save peaks at the end of forward with everything saved;
    // block at most one layer's saved bytes in backward beyond the outputs.
    EXPECT_LT(block.peak_bytes, r.rows[0].peak_bytes);
    EXPECT_EQ(block.delta_bytes, block.peak_bytes - r.rows[0].peak_bytes);
}

TEST(WhatIf, LayerListsCheckpointOnlyTheLayersNamed) {
    const Opened o = open(fullSaveRun());
    const WhatIfReport r = predict(o, {"layers:0,2", "layers:7"});
    const WhatIfRow& two = r.rows[1];
    ASSERT_FALSE(two.refused);
    EXPECT_EQ(liveAt(*o.timeline, kT0 + 3999) - liveAt(*two.timeline, kT0 + 3999), 2 * 1000);
    EXPECT_EQ(two.recompute_ns, 2 * 800);
    ASSERT_TRUE(r.rows[2].refused);
    EXPECT_NE(r.rows[2].refused->find("no layer 7"), std::string::npos) << *r.rows[2].refused;
}

TEST(WhatIf, OptimizerInBackwardFreesGradientsAndMovesTheState) {
    const Opened o = open(fullSaveRun());
    const WhatIfReport r = predict(o, {"opt-in-bwd"});
    const WhatIfRow& w = r.rows[1];
    ASSERT_FALSE(w.refused) << *w.refused;
    const DeviceTimeline& d = *w.timeline->device(0);
    // No gradient is alive at the end of any backward.
    const auto& grads = d.live_by_category[size_t(index(Category::Gradient))];
    EXPECT_EQ(grads.valueAt(kT0 + 7999), 0);
    EXPECT_EQ(o.timeline->device(0)->live_by_category[size_t(index(Category::Gradient))].valueAt(
                  kT0 + 7999),
              kLayers * 300);
    // The optimizer state is whole by the end of the first backward.
    const auto& state = d.live_by_category[size_t(index(Category::OptimizerState))];
    EXPECT_EQ(state.valueAt(kT0 + 7999), 2 * kLayers * 300);
    // The optimizer's 1200 B scratch is gone from the optimizer phase.
    ASSERT_TRUE(w.peaks_by_phase[size_t(index(TrainingPhase::Optimizer))]);
    EXPECT_LT(*w.peaks_by_phase[size_t(index(TrainingPhase::Optimizer))],
              *r.rows[0].peaks_by_phase[size_t(index(TrainingPhase::Optimizer))]);
}

TEST(WhatIf, RefusesWhatTheTraceCannotSupport) {
    const Opened o = open(fullSaveRun());
    const WhatIfReport r = predict(o, {"save:matmul", "selective", "segments:9"});
    for (size_t i = 1; i < r.rows.size(); ++i) EXPECT_TRUE(r.rows[i].refused) << r.rows[i].policy;
    const Opened blocked = open(fullSaveRun(2, "block"));
    const WhatIfReport b = predict(blocked, {"block"});
    ASSERT_TRUE(b.rows[1].refused);
    EXPECT_NE(b.rows[1].refused->find("full-save"), std::string::npos);
    // A prediction is not predicted from again.
    const WhatIfReport first = predict(o, {"block"});
    auto again = whatIf(*first.rows[1].trace, *first.rows[1].timeline, "x", {});
    EXPECT_FALSE(again.ok());
}

TEST(WhatIf, DefaultsToEverySweepPolicyTheLayersAllowAndMarksTheFrontier) {
    const Opened o = open(fullSaveRun());
    auto r = whatIf(*o.trace, *o.timeline, "full.memscope", {});
    ASSERT_TRUE(r.ok()) << r.message();
    std::vector<std::string> names;
    for (const WhatIfRow& row : r->rows) names.push_back(row.policy);
    EXPECT_EQ(names.front(), "full (measured)");
    EXPECT_NE(std::find(names.begin(), names.end(), "segments:4"), names.end());
    EXPECT_NE(std::find(names.begin(), names.end(), "block+opt-in-bwd"), names.end());
    bool any_frontier = false;
    for (const WhatIfRow& row : r->rows) any_frontier |= row.on_frontier;
    EXPECT_TRUE(any_frontier);
    const std::string json = whatIfJson(*r, whatIfBudget(*r, 1 << 20), {});
    EXPECT_NE(json.find("\"measured_policy\": \"full\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"source\": \"recorded\""), std::string::npos);
    EXPECT_NE(json.find("\"budget\""), std::string::npos);
    const std::string text = whatIfText(*r, std::nullopt);
    EXPECT_NE(text.find("block (predicted)"), std::string::npos) << text;
}

TEST(WhatIf, PredictedRunsKeepTheirProvenanceInTheNativeFormat) {
    const Opened o = open(fullSaveRun());
    const WhatIfReport r = predict(o, {"block+opt-in-bwd"});
    const auto path = std::filesystem::temp_directory_path() /
                      ("memscope-whatif-" + std::to_string(::getpid()) + ".memscope");
    ASSERT_TRUE(writeNativeTrace(*r.rows[1].trace, path.string()).ok());
    auto back = importNativeTrace(path.string());
    std::filesystem::remove(path);
    ASSERT_TRUE(back.ok()) << back.message();
    ASSERT_TRUE(back->prediction);
    EXPECT_EQ(*back->prediction, *r.rows[1].trace->prediction);
    EXPECT_EQ(back->prediction->policy, "block+opt-in-bwd");
    EXPECT_EQ(back->prediction->layers_source, "recorded");
    EXPECT_EQ(back->metadata.name, "block+opt-in-bwd (predicted)");
}

}  // namespace
}  // namespace memscope
