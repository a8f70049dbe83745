// Module table, paths, layers and the one rule that attributes a time to the
// innermost module scope.
#include <gtest/gtest.h>

#include <string>

#include "memscope/model/module_attribution.h"
#include "memscope/model/trace.h"

namespace memscope {
namespace {

ModuleScope scope(ModuleId m, int64_t start, int64_t end,
                  ModuleScopeKind kind = ModuleScopeKind::Forward) {
    return ModuleScope{start, end, m, kind};
}

TEST(ModuleTable, InternerMakesParentsAndKeepsOneIdPerModule) {
    Trace t;
    ModuleInterner in(t);
    const ModuleId attn = in.intern("GPT", "h.3.attn", "CausalSelfAttention");
    EXPECT_EQ(in.intern("GPT", "h.3.attn"), attn);
    ASSERT_EQ(t.modules.modules.size(), 4u);  // "", "h", "h.3", "h.3.attn"
    const Module* m = t.modules.module(attn);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->depth, 3);
    EXPECT_EQ(t.string(m->type), "CausalSelfAttention");
    EXPECT_EQ(modulePath(t, attn), "h.3.attn");
    EXPECT_EQ(modulePath(t, m->parent), "h.3");
    EXPECT_EQ(modulePath(t, in.intern("GPT", "")), "GPT");
    EXPECT_FALSE(hasSeveralRoots(t));
}

TEST(ModuleTable, SeveralRootsArePrefixedWithTheirLabel) {
    Trace t;
    ModuleInterner in(t);
    const ModuleId g = in.intern("Generator", "main.0");
    const ModuleId d = in.intern("Discriminator", "main.0");
    EXPECT_NE(g, d);
    EXPECT_TRUE(hasSeveralRoots(t));
    EXPECT_EQ(modulePath(t, g), "Generator/main.0");
    EXPECT_EQ(modulePath(t, d), "Discriminator/main.0");
}

TEST(ModuleTable, LayerIsTheShallowestNumberedModuleElseDepthOne) {
    Trace t;
    ModuleInterner in(t);
    EXPECT_EQ(modulePath(t, layerOf(t, in.intern("GPT", "h.3.attn.c_attn"))), "h.3");
    EXPECT_EQ(modulePath(t, layerOf(t, in.intern("GPT", "h.3"))), "h.3");
    EXPECT_EQ(modulePath(t, layerOf(t, in.intern("GPT", "lm_head"))), "lm_head");
    EXPECT_EQ(modulePath(t, layerOf(t, in.intern("GPT", "enc.blocks.1.mlp.0"))), "enc.blocks.1");
    EXPECT_EQ(modulePath(t, layerOf(t, in.intern("GPT", ""))), "GPT");
    EXPECT_EQ(modulePath(t, ancestorAtDepth(t, in.intern("GPT", "h.3.attn.c_attn"), 2)), "h.3");
    EXPECT_TRUE(moduleWithin(t, in.intern("GPT", "h.3.attn"), in.intern("GPT", "h")));
    EXPECT_FALSE(moduleWithin(t, in.intern("GPT", "h.3.attn"), in.intern("GPT", "h.2")));
}

TEST(ModuleTable, HostilePathsAreBounded) {
    Trace t;
    ModuleInterner in(t);
    const std::string huge(1 << 20, 'x');
    const ModuleId id = in.intern("M", huge);
    EXPECT_LE(t.string(t.modules.module(id)->path).size(), kMaxModulePathBytes);
    // 100,000 levels: capped at kMaxModuleDepth, linear, no deep recursion.
    std::string deep = "a";
    for (int i = 0; i < 100000; ++i) deep += ".a";
    const ModuleId d = in.intern("M", deep.substr(0, kMaxModulePathBytes - 1));
    EXPECT_LE(t.modules.module(d)->depth, kMaxModuleDepth);
    EXPECT_LE(t.modules.modules.size(), size_t(kMaxModuleDepth) + 3);
    // 100,000 distinct names: one module each, nothing more.
    for (int i = 0; i < 100000; ++i) in.intern("M", "layer" + std::to_string(i));
    EXPECT_LE(t.modules.modules.size(), size_t(kMaxModuleDepth) + 3 + 100000);
    // A parent that is not earlier becomes none.
    Module bad;
    bad.parent = ModuleId(1000000);
    const ModuleId b = t.modules.add(bad);
    EXPECT_TRUE(t.modules.module(b)->parent.isNull());
    EXPECT_EQ(t.modules.module(b)->depth, 0);
}

TEST(ModuleAttribution, InnermostScopeWinsAndEndsAreExclusive) {
    Trace t;
    ModuleInterner in(t);
    const ModuleId root = in.intern("GPT", "");
    const ModuleId h0 = in.intern("GPT", "h.0");
    const ModuleId attn = in.intern("GPT", "h.0.attn");
    t.modules.source = ModuleSource::Recorded;
    t.modules.scopes = {scope(attn, 20, 30), scope(root, 0, 100), scope(h0, 10, 50),
                        scope(h0, 60, 70, ModuleScopeKind::Recompute), scope(root, 80, 80)};
    const ModuleAttribution a(t);
    EXPECT_EQ(a.source(), ModuleSource::Recorded);
    EXPECT_FALSE(a.at(-1));
    EXPECT_EQ(a.at(0)->module, root);
    EXPECT_EQ(a.at(10)->module, h0);
    EXPECT_EQ(a.at(25)->module, attn);
    EXPECT_EQ(a.at(30)->module, h0);  // attn's end is exclusive
    EXPECT_EQ(a.at(50)->module, root);
    EXPECT_EQ(a.at(65)->module, h0);
    EXPECT_EQ(a.at(65)->kind, ModuleScopeKind::Recompute);
    EXPECT_EQ(a.at(99)->module, root);
    EXPECT_FALSE(a.at(100));
}

TEST(ModuleAttribution, SameStartTakesTheDeeperModuleAndBadScopesAreSkipped) {
    Trace t;
    ModuleInterner in(t);
    const ModuleId h0 = in.intern("GPT", "h.0");
    const ModuleId mlp = in.intern("GPT", "h.0.mlp");
    t.modules.scopes = {scope(mlp, 5, 8), scope(h0, 5, 9), scope(ModuleId(999), 0, 50),
                        scope(h0, 40, 30)};
    const ModuleAttribution a(t);
    EXPECT_EQ(a.at(5)->module, mlp);
    EXPECT_EQ(a.at(8)->module, h0);
    EXPECT_FALSE(a.at(20));
    EXPECT_FALSE(a.at(35));
}

TEST(ModuleAttribution, EmptyTraceHasNoModules) {
    const Trace t;
    const ModuleAttribution a(t);
    EXPECT_TRUE(a.empty());
    EXPECT_EQ(a.source(), ModuleSource::None);
    EXPECT_FALSE(a.at(0));
}

}  // namespace
}  // namespace memscope
