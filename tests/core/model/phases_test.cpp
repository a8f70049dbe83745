// Phase paths, with producers that name whole paths.
#include "memscope/model/phases.h"

#include <gtest/gtest.h>

#include "memscope/model/trace.h"

namespace memscope {
namespace {

TEST(Compare, PhasePathWithProducersThatNameWholePaths) {
    Trace t;
    const PhaseId step =
        t.addPhase({t.internString("step 1"), PhaseKind::Step, {}, 1, -1, -1, 0, 10});
    const PhaseId bwd = t.addPhase(
        {t.internString("step 1 / backward"), PhaseKind::Backward, step, 1, -1, -1, 0, 10});
    const PhaseId blk =
        t.addPhase({t.internString("block 0"), PhaseKind::Block, bwd, 1, 0, -1, 0, 10});
    EXPECT_EQ(phasePath(t, blk), "step 1 / backward / block 0");
    EXPECT_EQ(phasePath(t, bwd), "step 1 / backward");
    EXPECT_EQ(phasePath(t, PhaseId{}), "");
}

}  // namespace
}  // namespace memscope
