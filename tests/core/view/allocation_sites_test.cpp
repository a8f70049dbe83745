// Allocation sites: each allocation's first user frame, with a hash that is
// the same in every trace.
#include "memscope/view/allocation_sites.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "../allocation_test_util.h"
#include "memscope/inference/frames.h"

namespace memscope {
namespace {

using testutil::AllocationFixture;
using testutil::churn;

TEST(AllocationSites, TheFirstUserFrameWithAStableHash) {
    const AllocationFixture f(churn(400, 5, 1));
    EXPECT_EQ(f.sites.siteCount(), 6u);  // five sites and "no site"
    for (uint32_t i = 0; i < f.tl->intervals.size(); ++i) {
        const AllocationSite& s = f.sites.site(f.sites.siteOf(i));
        EXPECT_EQ(s.label, siteLabel(f.trace, f.tl->intervals[i].stack));
        EXPECT_EQ(s.hash, siteHash(s.label));
    }
    // Another trace with the same sites in another order: the same hashes.
    const AllocationFixture g(churn(400, 5, 2));
    EXPECT_EQ(g.sites.site(1).hash, siteHash(g.sites.site(1).label));
    EXPECT_EQ(f.sites.siteOf(uint32_t(f.tl->intervals.size())), AllocationSites::kNoSite);
}

}  // namespace
}  // namespace memscope
