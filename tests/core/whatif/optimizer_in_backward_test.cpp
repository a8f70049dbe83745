// The optimizer fused into backward (opt-in-bwd) on a hand-built
// transformer run: gradients the measured run never freed (its last step's,
// alive when the trace ended) are freed by the prediction too, and the
// optimizer step's temporaries are scaled per parameter whether the measured
// step updated one parameter at a time or all at once.
#include <gtest/gtest.h>

#include <algorithm>

#include "memscope/whatif/whatif.h"
#include "transformer_run.h"
#include "whatif_test_util.h"

namespace memscope {
namespace {

using testutil::kLayers;
using testutil::kStepLen;
using testutil::kT0;
using testutil::open;
using testutil::Ops;
using testutil::predict;
using testutil::transformerRun;

constexpr int kSteps = 2;

void sortByTime(Trace& t) {
    std::stable_sort(t.events.begin(), t.events.end(),
                     [](const Event& a, const Event& b) { return a.time < b.time; });
}

// Live bytes of `category` on device 0 after the last event.
int64_t liveAtEnd(const Trace& t, Category category) {
    int64_t bytes = 0;
    for (const Event& e : t.events) {
        if (e.category != category || e.device != 0) continue;
        if (e.kind == EventKind::Alloc) bytes += int64_t(e.size);
        if (e.kind == EventKind::FreeCompleted) bytes -= int64_t(e.size);
    }
    return bytes;
}

TEST(OptimizerInBackward, FreesTheGradientsTheMeasuredRunLeftAliveAtItsEnd) {
    Trace t = transformerRun({Ops::Recorded}, kSteps);
    // The last step's gradients are never freed (set_to_none comes with the
    // step that never ran).
    const int64_t last = kT0 + (kSteps - 1) * kStepLen;
    std::erase_if(t.events, [&](const Event& e) {
        return e.kind == EventKind::FreeCompleted && e.category == Category::Gradient &&
               e.time >= last;
    });
    ASSERT_EQ(liveAtEnd(t, Category::Gradient), kLayers * 300);
    const auto o = open(std::move(t));
    const WhatIfReport r = predict(o, {"opt-in-bwd"});
    ASSERT_FALSE(r.rows[1].refused) << *r.rows[1].refused;
    ASSERT_TRUE(r.rows[1].trace);
    EXPECT_EQ(liveAtEnd(*r.rows[1].trace, Category::Gradient), 0);
    // At the last backward's end the measured run held every gradient; the
    // prediction none.
    const int64_t end_of_backward = last + 8000 - 1;
    EXPECT_EQ(testutil::liveAt(*o.timeline, end_of_backward) -
                  testutil::liveAt(*r.rows[1].timeline, end_of_backward),
              kLayers * 300);
}

// The run with optimizer temporaries: per step, one of 600 B per gradient
// (300 B), each freed before the next (one parameter at a time), or all
// alive together (all at once).
Trace withOptimizerTemporaries(bool one_at_a_time) {
    Trace t = transformerRun({Ops::Recorded}, kSteps);
    uint64_t address = 0x900000;
    for (int s = 0; s < kSteps; ++s) {
        const int64_t b = kT0 + s * kStepLen + 8000;  // the optimizer phase
        for (int k = 0; k < kLayers; ++k) {
            Event e;
            e.kind = EventKind::Alloc;
            e.time = one_at_a_time ? b + 100 + 50 * k : b + 100 + k;
            e.address = address;
            address += 4096;
            e.size = 600;
            e.category = Category::Temporary;
            t.events.push_back(e);
            e.kind = EventKind::FreeCompleted;
            e.time = one_at_a_time ? b + 120 + 50 * k : b + 300 + k;
            t.events.push_back(e);
        }
    }
    sortByTime(t);
    return t;
}

TEST(OptimizerInBackward, ScalesTheStepsTemporariesPerParameterAsTheStepRan) {
    for (bool one : {true, false}) {
        SCOPED_TRACE(one);
        const auto o = open(withOptimizerTemporaries(one));
        const WhatIfReport r = predict(o, {"opt-in-bwd"});
        ASSERT_FALSE(r.rows[1].refused) << *r.rows[1].refused;
        // 600 B of temporaries per 300 B gradient, either way: the largest
        // gradient's share when one at a time, all of them otherwise.
        const auto& a = r.rows[1].assumptions;
        const auto said = std::find_if(a.begin(), a.end(), [](const std::string& s) {
            return s.find("optimizer step's temporaries") != std::string::npos;
        });
        ASSERT_NE(said, a.end());
        EXPECT_NE(said->find("200% of its bytes"), std::string::npos) << *said;
        EXPECT_NE(said->find(one ? "one parameter at a time" : "all at once"), std::string::npos)
            << *said;
    }
}

}  // namespace
}  // namespace memscope
