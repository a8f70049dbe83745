#include <gtest/gtest.h>

#include "memscope/model/op_attribution.h"
#include "memscope/model/trace.h"

namespace memscope {
namespace {

OpScope scope(Trace& t, int64_t start, int64_t end, std::string_view name, uint16_t depth) {
    return OpScope{start, end, t.internString(name), depth};
}

TEST(OpAttribution, InnermostOpLooksThroughNestedAllocationHelpers) {
    Trace t;
    t.ops.source = OpSource::Recorded;
    t.ops.scopes = {scope(t, 0, 100, "aten::linear", 0), scope(t, 10, 90, "aten::addmm", 1),
                    scope(t, 20, 30, "aten::empty", 2), scope(t, 200, 210, "aten::empty", 0)};
    const OpAttribution ops(t);
    EXPECT_EQ(ops.source(), OpSource::Recorded);
    ASSERT_TRUE(ops.at(5));
    EXPECT_EQ(t.string(ops.at(5)->name), "aten::linear");
    // aten::empty inside aten::addmm makes addmm's output.
    ASSERT_TRUE(ops.at(25));
    EXPECT_EQ(t.string(ops.at(25)->name), "aten::addmm");
    EXPECT_EQ(ops.at(25)->scope, std::optional<uint32_t>(1));
    EXPECT_EQ(t.string(ops.at(95)->name), "aten::linear");
    EXPECT_FALSE(ops.at(100));  // half open
    // torch.empty() called from Python is itself the op.
    ASSERT_TRUE(ops.at(205));
    EXPECT_EQ(t.string(ops.at(205)->name), "aten::empty");
    EXPECT_FALSE(ops.at(-1));
}

TEST(OpAttribution, OverlappingAndBrokenScopesNeitherCrashNorCount) {
    Trace t;
    t.ops.scopes = {scope(t, 50, 10, "aten::mm", 0),  // ends before it starts
                    scope(t, 0, 40, "aten::bmm", 0), scope(t, 20, 60, "aten::_softmax", 0)};
    const OpAttribution ops(t);
    EXPECT_EQ(t.string(ops.at(30)->name), "aten::_softmax");  // started last
    EXPECT_EQ(t.string(ops.at(45)->name), "aten::_softmax");
    EXPECT_EQ(t.string(ops.at(10)->name), "aten::bmm");
    EXPECT_FALSE(OpAttribution(Trace{}).at(0));
    EXPECT_TRUE(OpAttribution(Trace{}).empty());
}

TEST(OpAttribution, OpsInferredPerEventWinOverTime) {
    Trace t;
    t.ops.source = OpSource::Inferred;
    t.ops.event_ops = {t.internString("aten::mm"), StringId{}};
    const OpAttribution ops(t);
    EXPECT_FALSE(ops.empty());
    ASSERT_TRUE(ops.ofEvent(0, 7));
    EXPECT_EQ(t.string(ops.ofEvent(0, 7)->name), "aten::mm");
    EXPECT_FALSE(ops.ofEvent(0, 7)->scope);
    EXPECT_FALSE(ops.ofEvent(1, 7));
    EXPECT_FALSE(ops.ofEvent(5, 7));  // past the events: none, not out of bounds
}

TEST(OpScopes, SourceNames) {
    EXPECT_EQ(toString(OpSource::Recorded), "recorded");
    EXPECT_EQ(toString(OpSource::Inferred), "inferred");
    EXPECT_TRUE(isAllocationHelperOp("aten::empty_strided"));
    EXPECT_FALSE(isAllocationHelperOp("aten::mm"));
}

}  // namespace
}  // namespace memscope
