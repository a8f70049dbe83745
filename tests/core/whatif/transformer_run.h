#pragma once
// A transformer run built by hand for the what-if tests: kLayers layers of
// attention and mlp (or mlp alone), their ops recorded as op scopes,
// inferred per allocation, or labelled by op phases as the reference trainer
// does, so that what each policy keeps is known.

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "memscope/model/trace.h"

namespace memscope::testutil {

constexpr int kLayers = 4;
constexpr int64_t kStepLen = 10000;
constexpr int64_t kT0 = 1000;

enum class Ops { None, Recorded, Inferred, Phases };

struct Options {
    Ops ops = Ops::Recorded;
    int attention_layers = kLayers;  // the first ones have attention, the rest only an mlp
    bool sdpa = false;               // one fused attention op instead of bmm … softmax … bmm
    // When the layer's code lets go of qkv in forward (relative time; -1:
    // saved for backward), as a script whose q, k, v are views of it and
    // whose core copies them does: freed after the core returns.
    int64_t qkv_freed = -1;
};

// One layer's forward, relative to its start f (the layer's module scope is
// [f, f + 800)): qkv linear, the attention core (bmm scores, div, masked_fill,
// _softmax, dropout, bmm), the proj linear, a residual add, the gelu mlp.
struct Alloc {
    int64_t at = 0;
    uint64_t size = 0;
    const char* op = "";
    int64_t freed = -1;  // relative time freed in forward; -1: saved for backward
};
const Alloc kAttention[] = {
    {10, 300, "aten::addmm"},      // qkv: the core's q, k, v
    {110, 400, "aten::bmm", 170},  // scores
    {165, 400, "aten::div", 210},  // scaled
    {205, 400, "aten::masked_fill", 260},
    {255, 400, "aten::_softmax"},    // probabilities, softmax's backward needs them
    {305, 100, "aten::dropout"},     // the dropout mask
    {310, 400, "aten::dropout"},     // dropped probabilities, the second bmm's input
    {360, 300, "aten::bmm"},         // the core's output
    {430, 300, "aten::addmm", 500},  // proj, used once by the residual add
    {495, 300, "aten::add", 715},    // residual
};
const Alloc kMlp[] = {
    {530, 600, "aten::addmm"},       // fc1, gelu's input
    {600, 600, "aten::gelu"},        // fc2's input
    {640, 300, "aten::addmm", 710},  // fc2, used once
    {705, 300, "aten::add", -2},     // the layer's output: freed in the next layer's backward
};
// Op calls (relative start, end, name, depth) of one layer.
struct Call {
    int64_t start = 0, end = 0;
    const char* name = "";
    uint16_t depth = 0;
};
const Call kAttentionCalls[] = {
    {0, 60, "aten::linear", 0},      {5, 55, "aten::addmm", 1},
    {60, 70, "aten::view", 0},       {100, 150, "aten::bmm", 0},
    {160, 190, "aten::div", 0},      {200, 230, "aten::masked_fill", 0},
    {250, 280, "aten::_softmax", 0}, {300, 340, "aten::dropout", 0},
    {350, 400, "aten::bmm", 0},      {420, 480, "aten::linear", 0},
    {425, 475, "aten::addmm", 1},    {490, 510, "aten::add", 0},
};
const Call kMlpCalls[] = {
    {520, 580, "aten::linear", 0}, {525, 575, "aten::addmm", 1}, {590, 620, "aten::gelu", 0},
    {630, 690, "aten::linear", 0}, {635, 685, "aten::addmm", 1}, {700, 720, "aten::add", 0},
};

struct Builder {
    Trace t;
    uint64_t next_address = 0x1000;
    std::vector<StringId> event_ops;

    uint64_t alloc(int64_t time, uint64_t size, Category c, PhaseId phase, const char* op = "") {
        Event e;
        e.time = time;
        e.kind = EventKind::Alloc;
        e.address = next_address;
        next_address += 4096;
        e.size = size;
        e.category = c;
        e.phase = phase;
        t.events.push_back(e);
        event_ops.push_back(*op ? t.internString(op) : StringId());
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
        event_ops.push_back({});
    }
    PhaseId phase(PhaseKind kind, std::string name, PhaseId parent, int64_t start, int64_t end,
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

inline Trace transformerRun(const Options& o, int steps = 2) {
    Builder b;
    b.t.metadata.name = "transformer-full";
    RunMetrics m;
    m.policy = "full";
    ModuleInterner modules(b.t);
    std::vector<ModuleId> layer;
    for (int k = 0; k < kLayers; ++k)
        layer.push_back(modules.intern("GPT", "h." + std::to_string(k), "Block"));
    b.t.modules.source = ModuleSource::Recorded;
    for (int k = 0; k < kLayers; ++k) b.alloc(500, 300, Category::Parameter, {});
    for (int s = 0; s < steps; ++s) {
        const int64_t B = kT0 + s * kStepLen;
        const PhaseId step = b.phase(PhaseKind::Step, "step", {}, B, B + 9000, s);
        const PhaseId fwd = b.phase(PhaseKind::Forward, "forward", step, B, B + 4000, s);
        const PhaseId bwd = b.phase(PhaseKind::Backward, "backward", step, B + 4000, B + 8000, s);
        b.phase(PhaseKind::Optimizer, "optimizer", step, B + 8000, B + 9000, s);
        std::vector<std::vector<std::pair<uint64_t, uint64_t>>> saved(kLayers);  // address, size
        std::vector<uint64_t> out(kLayers);
        for (int k = 0; k < kLayers; ++k) {
            const int64_t f = B + 100 + k * 1000;
            b.t.modules.scopes.push_back({f, f + 800, layer[size_t(k)], ModuleScopeKind::Forward});
            const bool attention = k < o.attention_layers;
            PhaseId core, fc[3];
            if (o.ops == Ops::Phases) {
                // The trainer's labels: "matmul" around each linear, "attention" around the core.
                if (attention) {
                    fc[0] = b.phase(PhaseKind::Range, "matmul", fwd, f + 5, f + 55, s);
                    core = b.phase(PhaseKind::Range, "attention", fwd, f + 100, f + 400, s);
                    fc[1] = b.phase(PhaseKind::Range, "matmul", fwd, f + 425, f + 475, s);
                }
                fc[2] = b.phase(PhaseKind::Range, "matmul", fwd, f + 525, f + 575, s);
                b.phase(PhaseKind::Range, "matmul", fwd, f + 635, f + 685, s);
            }
            auto calls = [&](const auto& list) {
                if (o.ops != Ops::Recorded) return;
                for (const Call& c : list) {
                    if (o.sdpa && c.start >= 100 && c.end <= 400) continue;
                    b.t.ops.scopes.push_back(
                        {f + c.start, f + c.end, b.t.internString(c.name), c.depth});
                }
                if (o.sdpa && &list[0] == &kAttentionCalls[0])
                    b.t.ops.scopes.push_back(
                        {f + 100, f + 400,
                         b.t.internString("aten::_scaled_dot_product_flash_attention"), 0});
            };
            if (attention) calls(kAttentionCalls);
            calls(kMlpCalls);
            auto run = [&](const auto& list) {
                std::vector<std::pair<int64_t, std::pair<uint64_t, uint64_t>>> frees;
                for (const Alloc& a : list) {
                    const bool in_core = a.at >= 100 && a.at < 400;
                    const char* op =
                        o.sdpa && in_core ? "aten::_scaled_dot_product_flash_attention" : a.op;
                    PhaseId p = fwd;
                    if (o.ops == Ops::Phases) {
                        if (in_core) p = core;
                        if (a.at == 10) p = fc[0];
                        if (a.at == 430) p = fc[1];
                        if (a.at == 530) p = fc[2];
                        if (a.at == 640)
                            p = PhaseId(uint32_t(b.t.phases.size()));  // the last matmul phase
                    }
                    const uint64_t addr = b.alloc(f + a.at, a.size, Category::Activation, p, op);
                    const int64_t freed = a.at == 10 && o.qkv_freed >= 0 ? o.qkv_freed : a.freed;
                    if (freed >= 0)
                        frees.push_back({f + freed, {addr, a.size}});
                    else if (freed == -2)
                        out[size_t(k)] = addr;
                    else
                        saved[size_t(k)].push_back({addr, a.size});
                }
                for (const auto& [at, what] : frees)
                    b.free(at, what.first, what.second, Category::Activation, fwd);
            };
            if (attention) run(kAttention);
            run(kMlp);
        }
        b.free(B + 4150, out[kLayers - 1], 300, Category::Activation, bwd);
        std::vector<uint64_t> grads;
        for (int k = kLayers - 1; k >= 0; --k) {
            const int64_t at = B + 4200 + (kLayers - 1 - k) * 900;
            grads.push_back(b.alloc(at + 100, 300, Category::Gradient, bwd));
            // Backward frees what the layer saved in reverse: the mlp's first.
            int64_t t = at + 200;
            for (auto it = saved[size_t(k)].rbegin(); it != saved[size_t(k)].rend(); ++it)
                b.free(t++, it->first, it->second, Category::Activation, bwd);
            if (k > 0) b.free(at + 500, out[size_t(k - 1)], 300, Category::Activation, bwd);
        }
        for (int k = 0; k < kLayers; ++k)
            b.free(B + 8500 + k, grads[size_t(k)], 300, Category::Gradient, {});
        m.step_ns.push_back(9000);
        m.recompute_ns.push_back(0);
    }
    // Sort the events by time, their inferred ops with them.
    std::vector<size_t> order(b.t.events.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return b.t.events[x].time < b.t.events[y].time; });
    std::vector<Event> events;
    std::vector<StringId> ops;
    for (size_t i : order) events.push_back(b.t.events[i]), ops.push_back(b.event_ops[i]);
    b.t.events = std::move(events);
    if (o.ops == Ops::Recorded) b.t.ops.source = OpSource::Recorded;
    if (o.ops == Ops::Inferred) {
        b.t.ops.source = OpSource::Inferred;
        b.t.ops.event_ops = std::move(ops);
    }
    b.t.metrics = m;
    return std::move(b.t);
}

}  // namespace memscope::testutil
