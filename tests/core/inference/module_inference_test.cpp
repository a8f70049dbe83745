// Module scopes inferred where none were recorded: the trainer's block
// phases as layers, and layers from the module calls in Python frames.
#include "memscope/inference/module_inference.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "memscope/inference/inference.h"
#include "memscope/model/module_attribution.h"

namespace memscope {
namespace {

// A trainer-like trace: step / forward / block k, and with checkpointing
// backward / block k / recompute block k (as memscope-train names them).
Trace trainerTrace(int blocks) {
    Trace t;
    t.metadata.source_format = "memscope-train";
    auto phase = [&](const std::string& name, PhaseKind kind, PhaseId parent, int64_t start,
                     int64_t end, int block = -1) {
        Phase p;
        p.name = t.internString(name);
        p.kind = kind;
        p.parent = parent;
        p.step = 0;
        p.block = block;
        p.start = start;
        p.end = end;
        return t.addPhase(p);
    };
    const PhaseId step = phase("step 0", PhaseKind::Step, {}, 0, 1000);
    const PhaseId fwd = phase("step 0 / forward", PhaseKind::Forward, step, 0, 400);
    for (int k = 0; k < blocks; ++k)
        phase("step 0 / forward / block " + std::to_string(k), PhaseKind::Block, fwd, 10 + 50 * k,
              50 + 50 * k, k);
    const PhaseId bwd = phase("step 0 / backward", PhaseKind::Backward, step, 400, 900);
    for (int k = blocks - 1; k >= 0; --k) {
        const int64_t s = 400 + 60 * (blocks - 1 - k);
        const PhaseId b = phase("step 0 / backward / block " + std::to_string(k), PhaseKind::Block,
                                bwd, s, s + 50, k);
        phase("step 0 / backward / block " + std::to_string(k) + " / recompute block " +
                  std::to_string(k),
              PhaseKind::Recompute, b, s + 1, s + 20, k);
    }
    for (int64_t time = 0; time < 1000; time += 5) {
        Event e;
        e.time = time;
        e.address = 0x1000 + uint64_t(time);
        e.size = 64;
        t.events.push_back(e);
    }
    return t;
}

TEST(ModuleInference, TrainerBlocksAreRecordedLayers) {
    Trace t = trainerTrace(4);
    const InferenceReport report = inferMissingLabels(t);
    EXPECT_EQ(report.modules.source, ModuleSource::Recorded);
    EXPECT_EQ(t.modules.source, ModuleSource::Recorded);
    EXPECT_EQ(report.modules.layers, 4u);
    std::map<std::string, std::multiset<std::string>> kinds;  // path -> kinds
    for (const ModuleScope& s : t.modules.scopes)
        kinds[modulePath(t, s.module)].insert(std::string(toString(s.kind)));
    ASSERT_EQ(kinds.size(), 4u);
    for (int k = 0; k < 4; ++k) {
        const std::string path = "block " + std::to_string(k);
        EXPECT_EQ(kinds[path], (std::multiset<std::string>{"backward", "forward", "recompute"}))
            << path;
    }
    // Each allocation's innermost scope: block 2's recompute inside its backward.
    const ModuleAttribution at(t);
    const auto hit = at.at(400 + 60 * 1 + 5);
    ASSERT_TRUE(hit);
    EXPECT_EQ(modulePath(t, hit->module), "block 2");
    EXPECT_EQ(hit->kind, ModuleScopeKind::Recompute);
    EXPECT_EQ(at.at(400 + 60 * 1 + 30)->kind, ModuleScopeKind::Backward);
    EXPECT_EQ(at.at(20)->kind, ModuleScopeKind::Forward);
    EXPECT_FALSE(at.at(5));
}

TEST(ModuleInference, RecordedModulesAreKept) {
    Trace t = trainerTrace(2);
    ModuleInterner interner(t);
    t.modules.source = ModuleSource::Recorded;
    t.modules.scopes.push_back({0, 10, interner.intern("GPT", "h.0"), ModuleScopeKind::Forward});
    const ModuleInferenceReport report = inferModules(t);
    EXPECT_EQ(report.source, ModuleSource::Recorded);
    EXPECT_EQ(t.modules.scopes.size(), 1u);
}

TEST(ModuleInference, NoFramesNoBlocksNoModules) {
    Trace t;
    for (int i = 0; i < 10; ++i) {
        Event e;
        e.time = i;
        e.address = 0x100 * uint64_t(i + 1);
        e.size = 8;
        t.events.push_back(e);
    }
    const ModuleInferenceReport report = inferModules(t);
    EXPECT_EQ(report.source, ModuleSource::None);
    EXPECT_TRUE(t.modules.empty());
}

// Python frames: a loop over three blocks called from one line; a block's
// forward allocates twice on one line (the same instance), and once more
// further down; the next block starts back at the top (a new instance).
Trace blocksCalledInALoop() {
    Trace t;
    auto frame = [&](const std::string& fn, const std::string& file, uint32_t line) {
        return t.internFrame({t.internString(fn), t.internString(file), line});
    };
    const std::string module_py = "/usr/lib/python3/dist-packages/torch/nn/modules/module.py";
    const FrameId wrapped = frame("_wrapped_call_impl", module_py, 1518);
    const FrameId impl = frame("_call_impl", module_py, 1527);
    const FrameId train = frame("main", "/u/train.py", 20);
    const FrameId model = frame("forward", "/u/model.py", 120);  // for block in self.h
    int64_t now = 0;
    auto alloc = [&](uint32_t block_line) {
        // Innermost first, with a C++ frame between (stacks="all").
        const std::vector<FrameId> stack{frame("at::empty", "", 0),
                                         frame("forward", "/u/model.py", block_line),
                                         impl,
                                         frame("PyObject_Call", "Objects/call.c", 1),
                                         wrapped,
                                         model,
                                         impl,
                                         wrapped,
                                         train};
        Event e;
        e.time = now++;
        e.address = 0x1000 + 0x100 * uint64_t(now);
        e.size = 100;
        e.stack = t.internStack(stack);
        t.events.push_back(e);
    };
    for (int k = 0; k < 3; ++k) {
        alloc(88);
        alloc(88);
        alloc(90);
    }
    return t;
}

TEST(ModuleInference, BlocksCalledInALoopAreNumberedInstances) {
    Trace t = blocksCalledInALoop();
    const ModuleInferenceReport report = inferModules(t);
    EXPECT_EQ(report.source, ModuleSource::Inferred);
    EXPECT_EQ(report.layers, 4u);  // the three blocks and the model around them
    const ModuleAttribution at(t);
    std::vector<std::string> paths;
    for (const Event& e : t.events) paths.push_back(modulePath(t, at.at(e.time)->module));
    EXPECT_EQ(paths[0], paths[2]);
    EXPECT_NE(paths[2], paths[3]);
    EXPECT_EQ(paths[3], paths[5]);
    EXPECT_EQ(paths[8], "forward@model:88.2");
    const Module* m = t.modules.module(at.at(8)->module);
    EXPECT_EQ(t.string(m->root), "forward@model:120");
    EXPECT_EQ(t.string(m->type), "forward, model.py:88");
    // Each scope spans its instance's allocations: first to last + 1.
    for (const ModuleScope& s : t.modules.scopes)
        if (modulePath(t, s.module) == "forward@model:88.1") {
            EXPECT_EQ(s.start, 3);
            EXPECT_EQ(s.end, 6);
        }
}

// Inference walks the frames for modules beside the categories, on two
// cores, and writes the modules after: the same modules as alone.
TEST(ModuleInference, TheWalkBesideTheCategoriesFindsTheSameModules) {
    Trace alone = blocksCalledInALoop();
    inferModules(alone);
    Trace t = blocksCalledInALoop();
    const InferenceReport report = inferMissingLabels(t);
    EXPECT_EQ(report.modules.source, ModuleSource::Inferred);
    EXPECT_EQ(report.modules.layers, 4u);
    ASSERT_EQ(t.modules.scopes.size(), alone.modules.scopes.size());
    for (size_t i = 0; i < t.modules.scopes.size(); ++i) {
        EXPECT_EQ(t.modules.scopes[i].start, alone.modules.scopes[i].start);
        EXPECT_EQ(t.modules.scopes[i].end, alone.modules.scopes[i].end);
        EXPECT_EQ(modulePath(t, t.modules.scopes[i].module),
                  modulePath(alone, alone.modules.scopes[i].module));
    }
    EXPECT_EQ(t.inferred_categories.size(), t.events.size());  // the categories ran too
}

}  // namespace
}  // namespace memscope
