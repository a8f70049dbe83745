#include "memscope/whatif/apply_plan.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace memscope {
namespace {

using nlohmann::json;

TEST(ApplyPlan, LayersWithSaveListsAndTheFusedOptimizer) {
    PolicyModules m;
    m.policy = "layers:0-1+opt-in-bwd";
    m.optimizer_in_backward = true;
    m.modules.push_back({"GPT", "h.0", "Block", {"aten::mm", "aten::addmm"}});
    m.modules.push_back({"GPT", "h.1", "Block", {}});
    const json plan = json::parse(applyPlanJson(m));
    EXPECT_EQ(plan["format"], "memscope-apply/1");
    EXPECT_EQ(plan["policy"], "layers:0-1+opt-in-bwd");
    EXPECT_EQ(plan["use_reentrant"], false);
    EXPECT_EQ(plan["optimizer_in_backward"], true);
    ASSERT_EQ(plan["checkpoint"].size(), 2u);
    EXPECT_EQ(plan["checkpoint"][0]["root"], "GPT");
    EXPECT_EQ(plan["checkpoint"][0]["path"], "h.0");
    EXPECT_EQ(plan["checkpoint"][0]["type"], "Block");
    EXPECT_EQ(plan["checkpoint"][0]["save"], json({"aten::mm", "aten::addmm"}));
    EXPECT_EQ(plan["checkpoint"][1]["save"], json::array());
    EXPECT_TRUE(plan["sequential"].is_null());
}

TEST(ApplyPlan, SequentialIsReentrantWithItsSegments) {
    PolicyModules m;
    m.policy = "sequential:2";
    m.reentrant = true;
    m.sequential = SequentialCheckpoint{"Net", "body", "Sequential", 2};
    const json plan = json::parse(applyPlanJson(m));
    EXPECT_EQ(plan["use_reentrant"], true);
    EXPECT_EQ(plan["optimizer_in_backward"], false);
    EXPECT_TRUE(plan["checkpoint"].empty());
    EXPECT_EQ(plan["sequential"]["path"], "body");
    EXPECT_EQ(plan["sequential"]["root"], "Net");
    EXPECT_EQ(plan["sequential"]["type"], "Sequential");
    EXPECT_EQ(plan["sequential"]["segments"], 2);
}

TEST(ApplyPlan, NamesFromATraceAreQuotedNeverBreakTheDocument) {
    PolicyModules m;
    m.policy = "layers:0";
    // A label the trace recorded: quotes, backslashes, control characters
    // and invalid UTF-8 stay inside their strings.
    m.modules.push_back({"Net\"x", "a\\b\n.c", std::string("T\xff", 2), {"aten::\"mm"}});
    const json plan = json::parse(applyPlanJson(m));
    EXPECT_EQ(plan["checkpoint"][0]["root"], "Net\"x");
    EXPECT_EQ(plan["checkpoint"][0]["path"], "a\\b\n.c");
    EXPECT_EQ(plan["checkpoint"][0]["save"][0], "aten::\"mm");
    EXPECT_EQ(plan["checkpoint"][0]["type"], "T\xef\xbf\xbd");
}

}  // namespace
}  // namespace memscope
