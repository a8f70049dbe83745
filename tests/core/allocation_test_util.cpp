#include "allocation_test_util.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

namespace memscope::testutil {

Trace churn(int events, int siteCount, uint64_t seed) {
    Trace t;
    std::vector<StackId> stacks;
    for (int s = 0; s < siteCount; ++s) {
        const FrameId user = t.internFrame({t.internString("layer" + std::to_string(s)),
                                            t.internString("/home/me/model.py"), uint32_t(s + 1)});
        const FrameId noise =
            t.internFrame({t.internString("c10::cuda::CUDACachingAllocator::malloc"),
                           t.internString("CUDACachingAllocator.cpp"), 1});
        const FrameId frames[] = {noise, user};
        stacks.push_back(t.internStack(frames));
    }
    std::mt19937_64 rng(seed);
    std::vector<std::pair<uint64_t, uint64_t>> live;
    uint64_t address = 0x10000;
    for (int i = 0; i < events; ++i) {
        Event e;
        e.time = 1000 + int64_t(i) * 10;
        if (live.size() < 8 || rng() % 3 != 0) {
            e.kind = EventKind::Alloc;
            e.size = uint64_t(1) << (rng() % 16);
            e.address = address;
            address += e.size + 512;
            e.stack = stacks[rng() % stacks.size()];
            live.emplace_back(e.address, e.size);
        } else {
            const size_t k = rng() % live.size();
            e.kind = EventKind::FreeCompleted;
            e.address = live[k].first;
            e.size = live[k].second;
            live[k] = live.back();
            live.pop_back();
        }
        t.events.push_back(e);
    }
    return t;
}

AllocationFixture::AllocationFixture(Trace t) : trace(std::move(t)) {
    auto built = Timeline::build(trace);
    EXPECT_TRUE(built.ok());
    timeline = *built;
    tl = &timeline->devices().front();
    index = AllocationIndex::build(trace, *tl);
}

AllocationLayout AllocationFixture::layout(uint64_t minBand, size_t columns) const {
    LayoutRequest r;
    r.lo = tl->start;
    r.hi = tl->end + 1;
    r.columns = columns;
    r.min_band_bytes = minBand;
    return layoutAllocations(*tl, index, r);
}

}  // namespace memscope::testutil
