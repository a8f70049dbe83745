#pragma once
// A churn of allocations and its timeline, sites and interval ends, for the
// tests of the by-allocation layout and the indexes it is built on.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"
#include "memscope/view/allocation_layout.h"

namespace memscope::testutil {

// A churn of allocations from `siteCount` user sites (model.py:line), sizes
// spanning four orders of magnitude, some never freed.
Trace churn(int events, int siteCount, uint64_t seed);

// A trace with its timeline (device 0) and allocation index.
struct AllocationFixture {
    Trace trace;
    std::shared_ptr<const Timeline> timeline;
    const DeviceTimeline* tl = nullptr;
    AllocationIndex index;
    const AllocationSites& sites = index.sites;

    explicit AllocationFixture(Trace t);
    // The whole timeline in `columns` columns, bands at least `minBand` bytes high.
    AllocationLayout layout(uint64_t minBand, size_t columns = 300) const;
};

}  // namespace memscope::testutil
