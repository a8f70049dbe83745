// Which layers each policy name checkpoints (checkpoint_regions.h), on
// chains of 6 and 8 layers built by hand, and module:CLASS's windows on a
// run whose layers hold an attention module.
#include "memscope/whatif/checkpoint_regions.h"

#include <gtest/gtest.h>

#include <map>

#include "../analysis_test_util.h"
#include "memscope/open/open_run.h"

namespace memscope {
namespace {

LayerChain chainOf(size_t n) {
    LayerChain c;
    c.steps.push_back({0, 100000, 0, 50000, 90000});
    for (size_t i = 0; i < n; ++i) {
        ChainLayer l;
        l.name = "h." + std::to_string(i);
        l.index = static_cast<int64_t>(i);
        const int64_t start = 100 + static_cast<int64_t>(i) * 1000;
        l.runs.push_back({0, start, start + 800});
        c.layers.push_back(std::move(l));
    }
    return c;
}

using Regions = std::vector<LayerRegion>;

Regions regions(const std::string& name, size_t layers) {
    auto p = parseWhatIfPolicy(name);
    EXPECT_TRUE(p.ok()) << name << ": " << p.message();
    if (!p) return {};
    auto r = layerRegions(*p, chainOf(layers));
    EXPECT_TRUE(r.ok()) << name << ": " << r.message();
    return r ? *r : Regions{};
}

std::string refusedWhy(const std::string& name, size_t layers) {
    auto p = parseWhatIfPolicy(name);
    if (!p) return "parse: " + p.message();
    auto r = layerRegions(*p, chainOf(layers));
    return r ? std::string() : r.message();
}

TEST(CheckpointRegions, SequentialIsCheckpointSequentialTheLastSegmentRunsNormally) {
    // segment_size = 8 // 3 = 2: [0,2) and [2,4) checkpointed, 4..7 not.
    EXPECT_EQ(regions("sequential:3", 8), (Regions{{0, 2}, {2, 4}}));
    // 6 // 4 = 1: layers 0, 1, 2 each alone; 3..5 run normally.
    EXPECT_EQ(regions("sequential:4", 6), (Regions{{0, 1}, {1, 2}, {2, 3}}));
    EXPECT_EQ(regions("sequential:2", 6), (Regions{{0, 3}}));
    EXPECT_EQ(regions("sequential:1", 6), Regions{});  // one segment: nothing checkpointed
    // segments:K is the same cut.
    EXPECT_EQ(regions("segments:3", 8), regions("sequential:3", 8));
    EXPECT_NE(refusedWhy("sequential:9", 8).find("the chain has 8 layers"), std::string::npos)
        << refusedWhy("sequential:9", 8);
}

TEST(CheckpointRegions, EveryNthLayerCountsAsTorchtitanDoes) {
    // torchtitan: a counter from 1, wrapped when it is a multiple of N.
    EXPECT_EQ(regions("every:2", 6), (Regions{{1, 2}, {3, 4}, {5, 6}}));
    EXPECT_EQ(regions("every:3", 8), (Regions{{2, 3}, {5, 6}}));
    EXPECT_EQ(regions("every:1", 6).size(), 6u);
    EXPECT_EQ(regions("every:8", 8), (Regions{{7, 8}}));
    EXPECT_FALSE(refusedWhy("every:9", 8).empty());
}

TEST(CheckpointRegions, UniformChunksWithAShortLastOne) {
    EXPECT_EQ(regions("uniform:3", 8), (Regions{{0, 3}, {3, 6}, {6, 8}}));
    EXPECT_EQ(regions("uniform:2", 6), (Regions{{0, 2}, {2, 4}, {4, 6}}));
    EXPECT_EQ(regions("uniform:8", 8), (Regions{{0, 8}}));
    EXPECT_FALSE(refusedWhy("uniform:7", 6).empty());
}

TEST(CheckpointRegions, FirstNLayersEachOnItsOwn) {
    EXPECT_EQ(regions("first:2", 8), (Regions{{0, 1}, {1, 2}}));
    EXPECT_EQ(regions("first:6", 6).size(), 6u);
    EXPECT_NE(refusedWhy("first:7", 6).find("first:7"), std::string::npos);
}

TEST(CheckpointRegions, TheExistingNamesKeepTheirCuts) {
    EXPECT_EQ(regions("block", 6).size(), 6u);
    EXPECT_EQ(regions("sqrt", 8), (Regions{{0, 3}, {3, 6}, {6, 8}}));
    EXPECT_EQ(regions("layers:0,2,4", 6), (Regions{{0, 1}, {2, 3}, {4, 5}}));
    EXPECT_EQ(regions("opt-in-bwd", 6), Regions{});
    EXPECT_NE(refusedWhy("layers:9", 6).find("no layer 9"), std::string::npos);
}

TEST(CheckpointRegions, WindowsSpanTheRegionsLayers) {
    auto p = parseWhatIfPolicy("uniform:3");
    ASSERT_TRUE(p.ok());
    Trace none;
    auto w = checkpointWindows(*p, chainOf(8), none);
    ASSERT_TRUE(w.ok()) << w.message();
    ASSERT_EQ(w->size(), 3u);
    EXPECT_EQ((*w)[0].forward_start, 100);
    EXPECT_EQ((*w)[0].forward_end, 2100 + 800);
    EXPECT_EQ((*w)[0].name, "h.0–h.2");
    EXPECT_EQ((*w)[2].name, "h.6–h.7");
    EXPECT_EQ((*w)[2].block, 6);
}

TEST(WhatIfPolicyNames, ParseRoundTripAndRefuseBadArguments) {
    for (const char* name :
         {"sequential:4", "every:2", "uniform:3", "first:2", "module:Block", "every:2+opt-in-bwd",
          "module:CausalSelfAttention+opt-in-bwd", "sequential:3+opt-in-bwd"}) {
        auto p = parseWhatIfPolicy(name);
        ASSERT_TRUE(p.ok()) << name << ": " << p.message();
        EXPECT_EQ(p->name, name);
        auto again = parseWhatIfPolicy(p->name);
        ASSERT_TRUE(again.ok());
        EXPECT_EQ(again->plan, p->plan);
        EXPECT_EQ(again->count, p->count);
        EXPECT_EQ(again->module_type, p->module_type);
    }
    auto e = parseWhatIfPolicy("every:2+opt-in-bwd");
    EXPECT_EQ(e->plan, RegionPlan::Every);
    EXPECT_EQ(e->count, 2);
    EXPECT_TRUE(e->policy.optimizer_in_backward);
    EXPECT_EQ(parseWhatIfPolicy("module:Block")->module_type, "Block");
    for (const char* bad :
         {"sequential:0", "every:0", "uniform:0", "first:0", "every:", "every:x", "first:-1",
          "module:", "module:a.b", "every:2+block", "module:Block+sqrt"}) {
        auto p = parseWhatIfPolicy(bad);
        EXPECT_FALSE(p.ok()) << bad;
        if (!p) {
            EXPECT_NE(p.message().find(bad), std::string::npos) << p.message();
        }
    }
    EXPECT_NE(parseWhatIfPolicy("every:0").message().find("N, every N-th layer"),
              std::string::npos);
    // A comma list: each name its own policy.
    auto list = parseWhatIfPolicies(std::vector<std::string>{"every:2,uniform:2,module:Block"});
    ASSERT_TRUE(list.ok()) << list.message();
    EXPECT_EQ(list->size(), 3u);
    // The help names every one.
    for (const char* name : {"sequential:K", "every:N", "uniform:N", "first:N", "module:CLASS"}) {
        EXPECT_NE(whatIfPolicyHelp().find(name), std::string_view::npos) << name;
        EXPECT_NE(whatIfPolicyMeanings().find(name), std::string_view::npos) << name;
    }
}

// The layered run (analysis_test_util.h), each layer h.K holding an
// attention module h.K.attn (a CausalSelfAttention) and, inside it, a
// second one (nested: only the outer is a region).
Trace runWithAttention() {
    Trace t = testutil::layeredFullSaveRun();
    std::map<uint32_t, std::pair<ModuleId, ModuleId>> attention;  // layer -> (attn, inner)
    std::vector<ModuleScope> more;
    for (const ModuleScope& s : t.modules.scopes) {
        auto [it, fresh] = attention.try_emplace(s.module.value);
        if (fresh) {
            Module attn;
            attn.path = t.internString(modulePath(t, s.module) + ".attn");
            attn.root = t.modules.module(s.module)->root;
            attn.type = t.internString("CausalSelfAttention");
            attn.parent = s.module;
            it->second.first = t.modules.add(attn);
            Module inner = attn;
            inner.path = t.internString(modulePath(t, s.module) + ".attn.inner");
            inner.parent = it->second.first;
            it->second.second = t.modules.add(inner);
        }
        more.push_back({s.start, s.start + 400, it->second.first, ModuleScopeKind::Forward});
        more.push_back({s.start + 100, s.start + 300, it->second.second, ModuleScopeKind::Forward});
    }
    t.modules.scopes.insert(t.modules.scopes.end(), more.begin(), more.end());
    return t;
}

TEST(CheckpointRegions, ModuleClassWindowsAreTheOutermostCallsInEachStep) {
    auto opened = openTrace(runWithAttention(), "full.memscope");
    ASSERT_TRUE(opened.ok()) << opened.message();
    auto chain = findLayerChain(*opened->trace, 0);
    ASSERT_TRUE(chain.ok()) << chain.message();
    auto p = parseWhatIfPolicy("module:CausalSelfAttention");
    ASSERT_TRUE(p.ok());
    auto w = checkpointWindows(*p, *chain, *opened->trace);
    ASSERT_TRUE(w.ok()) << w.message();
    ASSERT_EQ(w->size(), size_t(2 * testutil::kLayers));  // 2 steps, the inner ones not
    EXPECT_EQ((*w)[1].name, "h.1.attn");
    EXPECT_EQ((*w)[1].forward_end - (*w)[1].forward_start, 400);
    EXPECT_EQ((*w)[1].block, 1);
    EXPECT_EQ((*w)[testutil::kLayers].step, 1u);

    // The chain's own class works the same as block.
    auto blocks = checkpointWindows(*parseWhatIfPolicy("module:Block"), *chain, *opened->trace);
    ASSERT_TRUE(blocks.ok()) << blocks.message();
    EXPECT_EQ(blocks->size(), size_t(2 * testutil::kLayers));

    // No module of the class: refused, naming the classes there are.
    auto none = checkpointWindows(*parseWhatIfPolicy("module:Nope"), *chain, *opened->trace);
    ASSERT_FALSE(none.ok());
    EXPECT_NE(none.message().find("no module of class Nope"), std::string::npos) << none.message();
    EXPECT_NE(none.message().find("CausalSelfAttention (8), Block (4)"), std::string::npos)
        << none.message();
}

}  // namespace
}  // namespace memscope
