// The chain of layers found on model shapes beyond one ModuleList: ResNet
// stages, a Sequential body, encoder–decoder stacks, Sequential and
// ModuleList loops, weight-shared layers. Traces built here with module
// scopes shaped as the Python hook records them.
#include "memscope/whatif/layer_chain.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "memscope/report/whatif_report.h"
#include "memscope/whatif/checkpoint_regions.h"
#include "memscope/whatif/whatif.h"

namespace memscope {
namespace {

struct Call {
    std::string path;  // dotted, under root "Net"
    std::string type;
};

// One training step whose forward calls `calls` in order, each 100 ns; every
// ancestor of a call gets a forward scope around its descendants' calls (a
// Sequential's or a stage's forward), as the hook records them.
Trace chainRun(const std::vector<Call>& calls, int steps = 1) {
    Trace t;
    ModuleInterner in(t);
    t.modules.source = ModuleSource::Recorded;
    for (int s = 0; s < steps; ++s) {
        const int64_t base = 1000 + s * 100000;
        Phase step;
        step.kind = PhaseKind::Step;
        step.name = t.internString("step");
        step.start = base;
        step.end = base + 90000;
        step.step = s;
        const PhaseId sp = t.addPhase(step);
        Phase fwd = step;
        fwd.kind = PhaseKind::Forward;
        fwd.name = t.internString("forward");
        fwd.end = base + 50000;
        fwd.parent = sp;
        t.addPhase(fwd);
        Phase bwd = fwd;
        bwd.kind = PhaseKind::Backward;
        bwd.name = t.internString("backward");
        bwd.start = base + 50000;
        bwd.end = base + 80000;
        t.addPhase(bwd);
        std::map<std::string, std::pair<int64_t, int64_t>> spans;  // ancestors' scopes
        int64_t now = base + 100;
        for (const Call& c : calls) {
            const ModuleId id = in.intern("Net", c.path, c.type);
            t.modules.scopes.push_back({now, now + 100, id, ModuleScopeKind::Forward});
            for (size_t dot = c.path.rfind('.'); dot != std::string::npos && dot > 0;
                 dot = c.path.rfind('.', dot - 1)) {
                auto [it, fresh] = spans.try_emplace(c.path.substr(0, dot), now, now + 100);
                if (!fresh) it->second.second = now + 100;
            }
            now += 200;
        }
        for (const auto& [path, span] : spans)
            t.modules.scopes.push_back(
                {span.first, span.second, in.intern("Net", path), ModuleScopeKind::Forward});
    }
    return t;
}

std::vector<std::string> names(const LayerChain& c) {
    std::vector<std::string> out;
    for (const ChainLayer& l : c.layers) out.push_back(l.name);
    return out;
}

std::vector<Call> numbered(const std::string& prefix, int n, const std::string& type) {
    std::vector<Call> out;
    for (int i = 0; i < n; ++i) out.push_back({prefix + std::to_string(i), type});
    return out;
}

TEST(LayerChainShapes, ResNetStagesOfDifferentDepthsAreOneChainOfTheirBlocks) {
    std::vector<Call> calls{{"conv1", "Conv2d"}, {"bn1", "BatchNorm2d"}};
    const int blocks[] = {3, 4, 6, 3};
    for (int s = 0; s < 4; ++s)
        for (const Call& c :
             numbered("layer" + std::to_string(s + 1) + ".", blocks[s], "Bottleneck"))
            calls.push_back(c);
    calls.push_back({"fc", "Linear"});
    auto chain = findLayerChain(chainRun(calls), 0);
    ASSERT_TRUE(chain.ok()) << chain.message();
    ASSERT_EQ(chain->layers.size(), 16u);  // not layer3's 6, nor the 4 stages
    EXPECT_EQ(chain->layers[0].name, "layer1.0");
    EXPECT_EQ(chain->layers[3].name, "layer2.0");
    EXPECT_EQ(chain->layers[15].name, "layer4.2");
    // Indices are positions in forward order, so layers:LIST is unambiguous.
    for (size_t i = 0; i < chain->layers.size(); ++i) EXPECT_EQ(chain->layers[i].index, int64_t(i));
    // Forward order.
    for (size_t i = 1; i < chain->layers.size(); ++i)
        EXPECT_GT(chain->layers[i].runs[0].forward_start,
                  chain->layers[i - 1].runs[0].forward_start);
    EXPECT_FALSE(chain->assumptions.empty());
    EXPECT_TRUE(chain->indices_are_positions);

    // whatif's table says what layers:LIST numbers.
    WhatIfReport report;
    report.chain = *chain;
    WhatIfRow measured;
    measured.measured = true;
    report.rows.push_back(measured);
    const std::string text = whatIfText(report, std::nullopt);
    EXPECT_NE(text.find("layers: 16 (recorded): layer1.0, layer1.1"), std::string::npos) << text;
    EXPECT_NE(text.find("0–15 (positions in forward order: layer1.0 is 0, layer4.2 is 15)"),
              std::string::npos)
        << text;
}

TEST(LayerChainShapes, ASequentialBodyOfStemAndStagesIsTheChainOfItsChildren) {
    // body = nn.Sequential(stem, stage1, stage2, stage3, head-ish pool), as
    // checkpoint_sequential(body, K, x) takes it; stage2 has more blocks
    // than the body has children.
    std::vector<Call> calls{{"body.0.conv", "Conv2d"}};
    for (const Call& c : numbered("body.1.", 3, "Block")) calls.push_back(c);
    for (const Call& c : numbered("body.2.", 8, "Block")) calls.push_back(c);
    for (const Call& c : numbered("body.3.", 3, "Block")) calls.push_back(c);
    calls.push_back({"body.4", "AdaptiveAvgPool2d"});
    auto chain = findLayerChain(chainRun(calls), 0);
    ASSERT_TRUE(chain.ok()) << chain.message();
    EXPECT_EQ(names(*chain),
              (std::vector<std::string>{"body.0", "body.1", "body.2", "body.3", "body.4"}));
    EXPECT_EQ(chain->layers[2].index, 2);
}

TEST(LayerChainShapes, EncoderAndDecoderStacksAreOneChainInForwardOrder) {
    std::vector<Call> calls{{"shared", "Embedding"}};
    for (const Call& c : numbered("encoder.layers.", 6, "EncoderLayer")) calls.push_back(c);
    for (const Call& c : numbered("decoder.layers.", 6, "DecoderLayer")) calls.push_back(c);
    auto chain = findLayerChain(chainRun(calls), 0);
    ASSERT_TRUE(chain.ok()) << chain.message();
    ASSERT_EQ(chain->layers.size(), 12u);
    EXPECT_EQ(chain->layers[0].name, "encoder.layers.0");
    EXPECT_EQ(chain->layers[5].name, "encoder.layers.5");
    EXPECT_EQ(chain->layers[6].name, "decoder.layers.0");
    EXPECT_EQ(chain->layers[6].index, 6);
    EXPECT_EQ(chain->layers[11].index, 11);

    // Policies apply to both stacks: every:2 takes layers 1, 3, … of the one chain.
    auto every = parseWhatIfPolicy("every:2");
    ASSERT_TRUE(every.ok());
    auto regions = layerRegions(*every, *chain);
    ASSERT_TRUE(regions.ok()) << regions.message();
    ASSERT_EQ(regions->size(), 6u);
    EXPECT_EQ(chain->layers[(*regions)[2].first].name, "encoder.layers.5");
    EXPECT_EQ(chain->layers[(*regions)[3].first].name, "decoder.layers.1");
    // layers:LIST names them by position: layers:6 is decoder.layers.0.
    auto six = parseWhatIfPolicy("layers:6");
    ASSERT_TRUE(six.ok());
    auto r6 = layerRegions(*six, *chain);
    ASSERT_TRUE(r6.ok()) << r6.message();
    EXPECT_EQ(chain->layers[(*r6)[0].first].name, "decoder.layers.0");
}

TEST(LayerChainShapes, LayersCalledFromAModuleListOrASequential) {
    // A ModuleList looped over in forward (chainRun gives the list a scope
    // around its layers too; the chain does not depend on it).
    Trace list = chainRun(numbered("h.", 5, "Block"));
    auto a = findLayerChain(list, 0);
    ASSERT_TRUE(a.ok()) << a.message();
    EXPECT_EQ(a->layers.size(), 5u);
    EXPECT_EQ(a->layers[4].index, 4);
    EXPECT_FALSE(a->indices_are_positions);
    EXPECT_TRUE(a->assumptions.empty());
    // An nn.Sequential called as one module: its own scope around its children's.
    std::vector<Call> calls{{"embed", "Embedding"}};
    for (const Call& c : numbered("blocks.", 5, "Block")) calls.push_back(c);
    calls.push_back({"head", "Linear"});
    auto b = findLayerChain(chainRun(calls, 2), 0);
    ASSERT_TRUE(b.ok()) << b.message();
    EXPECT_EQ(names(*b), (std::vector<std::string>{"blocks.0", "blocks.1", "blocks.2", "blocks.3",
                                                   "blocks.4"}));
    EXPECT_EQ(b->layers[0].runs.size(), 2u);
}

TEST(LayerChainShapes, LayersHoldingNumberedSubmodulesStayTheChain) {
    // Transformer layers whose MLP holds experts (layers.K.moe.experts.E):
    // the layers, not the (more numerous) experts.
    std::vector<Call> calls;
    for (int l = 0; l < 4; ++l) {
        calls.push_back({"layers." + std::to_string(l) + ".attn", "Attention"});
        for (const Call& c : numbered("layers." + std::to_string(l) + ".moe.experts.", 8, "Expert"))
            calls.push_back(c);
    }
    auto chain = findLayerChain(chainRun(calls), 0);
    ASSERT_TRUE(chain.ok()) << chain.message();
    EXPECT_EQ(chain->layers.size(), 4u);
    EXPECT_EQ(chain->layers[3].name, "layers.3");
}

TEST(LayerChainShapes, LayersWrappingOneNumberedModuleEachStayTheChain) {
    // Each layer holds one module whose name ends in a number (inferred
    // frames "forward@model:478", a wrapper's "fn1"): no stages of blocks.
    std::vector<Call> calls;
    for (int l = 0; l < 5; ++l) calls.push_back({"blocks." + std::to_string(l) + ".fn1", "Fn"});
    auto chain = findLayerChain(chainRun(calls), 0);
    ASSERT_TRUE(chain.ok()) << chain.message();
    EXPECT_EQ(names(*chain), (std::vector<std::string>{"blocks.0", "blocks.1", "blocks.2",
                                                       "blocks.3", "blocks.4"}));
    EXPECT_FALSE(chain->indices_are_positions);
}

TEST(LayerChainShapes, WeightSharedLayersAreNamedNotCrashedOn) {
    // The same module in every slot of a ModuleList: named_modules() lists it
    // once ("layers.0"), called 6 times a step. No chain, and a reason
    // that names the way out.
    std::vector<Call> calls(6, Call{"layers.0", "SharedLayer"});
    auto none = findLayerChain(chainRun(calls), 0);
    ASSERT_FALSE(none.ok());
    EXPECT_NE(none.message().find("layers.0"), std::string::npos) << none.message();
    EXPECT_NE(none.message().find("module:CLASS"), std::string::npos) << none.message();
    // One numbered module called once a step is not called "shared".
    auto once = findLayerChain(chainRun({{"fc1", "Linear"}}, 3), 0);
    ASSERT_FALSE(once.ok());
    EXPECT_EQ(once.message().find("shared"), std::string::npos) << once.message();

    // Two shared layers called alternately (a, b, a, b): one span each, and
    // an assumption says they overlap.
    std::vector<Call> alternate{
        {"layers.0", "L"}, {"layers.1", "L"}, {"layers.0", "L"}, {"layers.1", "L"}};
    auto chain = findLayerChain(chainRun(alternate), 0);
    ASSERT_TRUE(chain.ok()) << chain.message();
    ASSERT_EQ(chain->layers.size(), 2u);
    bool overlap = false;
    for (const std::string& a : chain->assumptions)
        overlap |= a.find("overlap") != std::string::npos;
    EXPECT_TRUE(overlap);
}

}  // namespace
}  // namespace memscope
