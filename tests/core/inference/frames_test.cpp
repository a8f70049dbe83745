// The frame rule: noise, library and user frames, and an allocation's site as
// its first user frame.
#include "memscope/inference/frames.h"

#include <gtest/gtest.h>

#include <array>

#include "../analysis_test_util.h"
#include "memscope/model/trace.h"

namespace memscope {
namespace {

using testutil::realisticStack;
using testutil::Stacked;

TEST(Frames, RolesFollowTheOneRule) {
    const Stacked s = realisticStack();
    const auto role = [&](size_t i) { return frameRole(s.trace, s.frames[i]); };
    for (size_t i : {0, 1, 2, 3, 4, 5, 8, 10, 11})
        EXPECT_EQ(role(i), FrameRole::Noise) << frameText(s.trace, s.frames[i]);
    EXPECT_EQ(role(6), FrameRole::Library);  // torch's own Python
    EXPECT_EQ(role(7), FrameRole::User);
    EXPECT_EQ(role(9), FrameRole::User);
    EXPECT_EQ(frameRoles(s.trace).size(), s.frames.size() + 1);
}

TEST(Frames, GeneratedRegistrationsAreNoiseWithoutADirectory) {
    Trace t;
    const FrameId f = t.internFrame({t.internString("at::(anonymous namespace)::create_out(long)"),
                                     t.internString("RegisterCUDA.cpp"), 0});
    EXPECT_EQ(frameRole(t, f), FrameRole::Noise);
    const FrameId g = t.internFrame({t.internString("at::TensorIteratorBase::build()"),
                                     t.internString("TensorIterator.cpp"), 0});
    EXPECT_EQ(frameRole(t, g), FrameRole::Library);
}

TEST(Frames, TheSiteIsTheFirstUserFrame) {
    const Stacked s = realisticStack();
    ASSERT_TRUE(siteFrame(s.trace, s.stack));
    EXPECT_EQ(*siteFrame(s.trace, s.stack), s.frames[7]);
    EXPECT_EQ(siteLabel(s.trace, s.stack), "forward  (/home/me/project/model.py:7)");
    const auto visible = visibleFrames(s.trace, s.stack, 10);
    ASSERT_EQ(visible.size(), 3u);  // functional.py, model.py, train.py
    EXPECT_EQ(visible[0], s.frames[6]);

    // Only library frames: the first of them; only noise or no stack: none.
    Trace t;
    const std::array lib{t.internFrame(
        {t.internString("_C._nn.linear"), t.internString("/opt/torch/nn/functional.py"), 1})};
    EXPECT_EQ(siteLabel(t, t.internStack(lib)), "_C._nn.linear  (/opt/torch/nn/functional.py:1)");
    const std::array noise{
        t.internFrame({t.internString("PyObject_Call"), t.internString("??"), 0})};
    EXPECT_FALSE(siteFrame(t, t.internStack(noise)));
    EXPECT_FALSE(siteFrame(t, StackId()));
    EXPECT_FALSE(siteFrame(t, StackId(999)));  // a bad id is no site, not a crash
}

}  // namespace
}  // namespace memscope
