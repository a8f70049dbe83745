// The memory-versus-time frontier and the budget answer on constructed
// tables.

#include "memscope/whatif/policy_frontier.h"

#include <gtest/gtest.h>

#include <vector>

using namespace memscope;

namespace {

constexpr int64_t MiB = 1024 * 1024;

// Peak MiB and step ms, as a sweep might measure them.
std::vector<PolicyPoint> table() {
    return {
        {"full", 600 * MiB, 30.0},              // fastest: on
        {"opt-in-bwd", 500 * MiB, 30.0},        // as fast, smaller: dominates full
        {"block", 300 * MiB, 45.0},             // on
        {"selective", 450 * MiB, 33.0},         // on
        {"sqrt", 350 * MiB, 50.0},              // block is smaller and faster: off
        {"save:matmul", 450 * MiB, 36.0},       // selective as small and faster: off
        {"block+opt-in-bwd", 250 * MiB, 46.0},  // smallest: on
        {"twin", 300 * MiB, 45.0},              // equal to block: both stay on
    };
}

}  // namespace

TEST(PolicyFrontier, NoOtherPolicyIsSmallerAndFaster) {
    const auto points = table();
    const std::vector<bool> expected{false, true, true, true, false, false, true, true};
    EXPECT_EQ(onFrontier(points), expected);
    EXPECT_TRUE(dominates(points[1], points[0]));
    EXPECT_FALSE(dominates(points[0], points[1]));
    EXPECT_FALSE(dominates(points[2], points[7]));
    EXPECT_FALSE(dominates(points[7], points[2]));
}

TEST(PolicyFrontier, EdgeCases) {
    EXPECT_TRUE(onFrontier(std::vector<PolicyPoint>{}).empty());
    EXPECT_EQ(onFrontier(std::vector<PolicyPoint>{{"only", 1, 1.0}}), std::vector<bool>{true});
}

TEST(PolicyFrontier, BudgetNamesTheFastestThatFits) {
    const auto points = table();
    // Everything fits: the fastest; full and opt-in-bwd tie on time, the
    // smaller wins.
    auto a = fitBudget(points, 1024 * MiB);
    ASSERT_TRUE(a.choice);
    EXPECT_EQ(points[*a.choice].name, "opt-in-bwd");
    EXPECT_EQ(a.short_by_bytes, 0);
    // 460 MiB: selective (450, 33 ms) beats save:matmul (450, 36 ms).
    a = fitBudget(points, 460 * MiB);
    ASSERT_TRUE(a.choice);
    EXPECT_EQ(points[*a.choice].name, "selective");
    // The limit is inclusive.
    a = fitBudget(points, 300 * MiB);
    ASSERT_TRUE(a.choice);
    EXPECT_EQ(points[*a.choice].name, "block");
    a = fitBudget(points, 299 * MiB);
    ASSERT_TRUE(a.choice);
    EXPECT_EQ(points[*a.choice].name, "block+opt-in-bwd");
    EXPECT_NE(describeBudget(points, a).find("block+opt-in-bwd is the fastest policy that fits"),
              std::string::npos)
        << describeBudget(points, a);
}

TEST(PolicyFrontier, BudgetSaysByHowMuchTheBestMisses) {
    const auto points = table();
    const auto a = fitBudget(points, 200 * MiB);
    EXPECT_FALSE(a.choice);
    ASSERT_TRUE(a.closest);
    EXPECT_EQ(points[*a.closest].name, "block+opt-in-bwd");
    EXPECT_EQ(a.short_by_bytes, 50 * MiB);
    EXPECT_EQ(describeBudget(points, a),
              "budget 200 MiB: no policy fits; the smallest peak, block+opt-in-bwd's 250 MiB, "
              "is 50.0 MiB over");
    const auto none = fitBudget(std::vector<PolicyPoint>{}, 1);
    EXPECT_FALSE(none.choice);
    EXPECT_FALSE(none.closest);
    EXPECT_EQ(none.short_by_bytes, 0);
}
