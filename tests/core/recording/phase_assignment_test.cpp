// assignInnermostPhases and nestPhasesByTime: phases recorded apart from the
// events (the Python hook's), matched to events and to each other by time.
#include "memscope/recording/phase_assignment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "memscope/model/trace.h"

namespace memscope {
namespace {

PhaseId addPhase(Trace& t, const char* name, int64_t start, int64_t end, int16_t device = -1,
                 PhaseId parent = {}) {
    Phase p;
    p.name = t.internString(name);
    p.start = start;
    p.end = end;
    p.device = device;
    p.parent = parent;
    return t.addPhase(p);
}

// Events at the given times (ascending), each with a stale phase that the
// assignment must overwrite.
void addEvents(Trace& t, const std::vector<int64_t>& times) {
    for (int64_t time : times) {
        Event e;
        e.time = time;
        e.phase = PhaseId(999);
        t.events.push_back(e);
    }
}

std::vector<PhaseId> phasesOfEvents(const Trace& t) {
    std::vector<PhaseId> out;
    for (const Event& e : t.events) out.push_back(e.phase);
    return out;
}

TEST(AssignInnermostPhases, TheInnermostNestedPhaseWinsAndEndsAreExclusive) {
    Trace t;
    const PhaseId step = addPhase(t, "step", 0, 100);
    const PhaseId fwd = addPhase(t, "forward", 10, 50);
    const PhaseId block = addPhase(t, "block", 20, 30);
    addEvents(t, {0, 9, 10, 20, 29, 30, 49, 50, 99});
    assignInnermostPhases(t);
    EXPECT_EQ(phasesOfEvents(t),
              (std::vector<PhaseId>{step, step, fwd, block, block, fwd, fwd, step, step}));
}

TEST(AssignInnermostPhases, EventsOutsideEveryPhaseGetNoPhase) {
    Trace t;
    const PhaseId a = addPhase(t, "a", 100, 200);
    const PhaseId b = addPhase(t, "b", 300, 400);
    addEvents(t, {-5, 0, 99, 100, 200, 250, 399, 400, 10'000});
    assignInnermostPhases(t);
    EXPECT_EQ(phasesOfEvents(t),
              (std::vector<PhaseId>{PhaseId(), PhaseId(), PhaseId(), a, PhaseId(), PhaseId(), b,
                                    PhaseId(), PhaseId()}));
}

TEST(AssignInnermostPhases, WithoutPhasesEveryEventGetsNone) {
    Trace t;
    addEvents(t, {1, 2, 3});
    assignInnermostPhases(t);
    EXPECT_EQ(phasesOfEvents(t), (std::vector<PhaseId>(3, PhaseId())));

    Trace empty;
    addPhase(empty, "lonely", 0, 10);
    assignInnermostPhases(empty);  // no events: nothing to do, nothing to break
    EXPECT_TRUE(empty.events.empty());
}

TEST(AssignInnermostPhases, OnAStartTieTheContainedPhaseWinsWhicheverWasAddedFirst) {
    for (bool inner_first : {false, true}) {
        SCOPED_TRACE(inner_first ? "inner added first" : "outer added first");
        Trace t;
        PhaseId outer, inner;
        if (inner_first) {
            inner = addPhase(t, "inner", 0, 40);
            outer = addPhase(t, "outer", 0, 100);
        } else {
            outer = addPhase(t, "outer", 0, 100);
            inner = addPhase(t, "inner", 0, 40);
        }
        addEvents(t, {0, 39, 40, 99});
        assignInnermostPhases(t);
        EXPECT_EQ(phasesOfEvents(t), (std::vector<PhaseId>{inner, inner, outer, outer}));
    }
}

TEST(AssignInnermostPhases, TheLatestStartingPhaseWinsWhenPhasesOverlap) {
    // a [0,100) holds b [10,20) and c [15,60), which overlap each other.
    Trace t;
    const PhaseId a = addPhase(t, "a", 0, 100);
    const PhaseId b = addPhase(t, "b", 10, 20);
    const PhaseId c = addPhase(t, "c", 15, 60);
    addEvents(t, {12, 15, 19, 20, 50, 60, 70});
    assignInnermostPhases(t);
    EXPECT_EQ(phasesOfEvents(t), (std::vector<PhaseId>{b, c, c, c, c, a, a}));
}

TEST(AssignInnermostPhases, PhasesMayBeAddedInAnyOrder) {
    // The same phases as in the nested test, added innermost first and
    // latest first: only the events need to be in time order.
    Trace t;
    const PhaseId block = addPhase(t, "block", 20, 30);
    const PhaseId late = addPhase(t, "late", 200, 300);
    const PhaseId fwd = addPhase(t, "forward", 10, 50);
    const PhaseId step = addPhase(t, "step", 0, 100);
    addEvents(t, {5, 15, 25, 25, 35, 150, 250});
    assignInnermostPhases(t);
    EXPECT_EQ(phasesOfEvents(t),
              (std::vector<PhaseId>{step, fwd, block, block, fwd, PhaseId(), late}));
}

TEST(AssignInnermostPhases, AnOpenPhaseLastsToTheEndOfTheTrace) {
    // end == start: still open when recording ended.
    Trace t;
    const PhaseId open = addPhase(t, "open", 50, 50);
    const PhaseId inside = addPhase(t, "inside", 60, 70);
    const int64_t far = std::numeric_limits<int64_t>::max() - 1;
    addEvents(t, {49, 50, 65, 70, 1'000'000, far});
    assignInnermostPhases(t);
    EXPECT_EQ(phasesOfEvents(t), (std::vector<PhaseId>{PhaseId(), open, inside, open, open, open}));
}

TEST(AssignInnermostPhases, AnOpenPhaseStartingWithAClosedOneIsTheOuterOne) {
    // Same start: the open phase runs longer, so the closed one is inside it.
    Trace t;
    const PhaseId closed = addPhase(t, "closed", 10, 20);
    const PhaseId open = addPhase(t, "open", 10, 10);
    addEvents(t, {10, 19, 20, 500});
    assignInnermostPhases(t);
    EXPECT_EQ(phasesOfEvents(t), (std::vector<PhaseId>{closed, closed, open, open}));
}

TEST(NestPhasesByTime, PhasesGetTheInnermostPhaseThatHoldsThem) {
    Trace t;
    const PhaseId step = addPhase(t, "step", 0, 100);
    const PhaseId fwd = addPhase(t, "forward", 0, 40);
    const PhaseId block = addPhase(t, "block", 10, 20);
    const PhaseId bwd = addPhase(t, "backward", 40, 90);  // starts as forward ends
    const PhaseId next = addPhase(t, "next step", 100, 200);
    nestPhasesByTime(t);
    EXPECT_TRUE(t.phase(step)->parent.isNull());
    EXPECT_EQ(t.phase(fwd)->parent, step);
    EXPECT_EQ(t.phase(block)->parent, fwd);
    EXPECT_EQ(t.phase(bwd)->parent, step);  // forward ended at 40: not inside it
    EXPECT_TRUE(t.phase(next)->parent.isNull());
}

TEST(NestPhasesByTime, InputOrderDoesNotMatter) {
    Trace t;
    const PhaseId block = addPhase(t, "block", 10, 20);
    const PhaseId fwd = addPhase(t, "forward", 0, 40);
    const PhaseId step = addPhase(t, "step", 0, 100);
    nestPhasesByTime(t);
    EXPECT_TRUE(t.phase(step)->parent.isNull());
    EXPECT_EQ(t.phase(fwd)->parent, step);
    EXPECT_EQ(t.phase(block)->parent, fwd);
}

TEST(NestPhasesByTime, ARecordedParentIsKept) {
    Trace t;
    const PhaseId other = addPhase(t, "other", 500, 600);
    const PhaseId step = addPhase(t, "step", 0, 100);
    const PhaseId fwd = addPhase(t, "forward", 10, 40, -1, other);
    nestPhasesByTime(t);
    EXPECT_EQ(t.phase(fwd)->parent, other);
    EXPECT_TRUE(t.phase(step)->parent.isNull());
}

TEST(NestPhasesByTime, PartiallyOverlappingPhasesDoNotNest) {
    Trace t;
    const PhaseId a = addPhase(t, "a", 0, 50);
    const PhaseId b = addPhase(t, "b", 30, 80);
    nestPhasesByTime(t);
    EXPECT_TRUE(t.phase(a)->parent.isNull());
    EXPECT_TRUE(t.phase(b)->parent.isNull());
}

TEST(NestPhasesByTime, PhasesOfDifferentDevicesDoNotNestButAllDevicePhasesDo) {
    Trace t;
    const PhaseId dev0 = addPhase(t, "dev0", 0, 100, 0);
    const PhaseId dev1 = addPhase(t, "dev1", 10, 20, 1);
    const PhaseId all = addPhase(t, "all", 30, 40, -1);
    const PhaseId dev0_inner = addPhase(t, "dev0 inner", 50, 60, 0);
    nestPhasesByTime(t);
    EXPECT_TRUE(t.phase(dev1)->parent.isNull());
    EXPECT_EQ(t.phase(all)->parent, dev0);
    EXPECT_EQ(t.phase(dev0_inner)->parent, dev0);

    Trace u;
    const PhaseId everywhere = addPhase(u, "everywhere", 0, 100, -1);
    const PhaseId on1 = addPhase(u, "on 1", 10, 20, 1);
    nestPhasesByTime(u);
    EXPECT_EQ(u.phase(on1)->parent, everywhere);
}

TEST(NestPhasesByTime, AnOpenPhaseHoldsWhatStartsAfterItButNotTheOtherWayRound) {
    Trace t;
    const PhaseId open = addPhase(t, "open", 10, 10);
    const PhaseId closed = addPhase(t, "closed", 20, 30);
    nestPhasesByTime(t);
    EXPECT_TRUE(t.phase(open)->parent.isNull());
    EXPECT_EQ(t.phase(closed)->parent, open);

    // An open phase runs to the end of the trace: a closed phase cannot hold it.
    Trace u;
    const PhaseId outer = addPhase(u, "closed outer", 0, 100);
    const PhaseId still_open = addPhase(u, "still open", 50, 50);
    nestPhasesByTime(u);
    EXPECT_TRUE(u.phase(still_open)->parent.isNull());
    EXPECT_TRUE(u.phase(outer)->parent.isNull());
}

TEST(NestPhasesByTime, TheNestingMatchesTheEventAssignment) {
    // After nesting, an event's phase's parent chain holds every phase that
    // contains the event.
    Trace t;
    addPhase(t, "step", 0, 100);
    addPhase(t, "forward", 0, 40);
    addPhase(t, "block", 10, 20);
    addPhase(t, "backward", 40, 90);
    addEvents(t, {0, 5, 15, 39, 45, 95});
    nestPhasesByTime(t);
    assignInnermostPhases(t);
    for (const Event& e : t.events) {
        SCOPED_TRACE(e.time);
        std::vector<PhaseId> chain;
        for (PhaseId p = e.phase; !p.isNull(); p = t.phase(p)->parent) chain.push_back(p);
        for (uint32_t i = 0; i < t.phases.size(); ++i) {
            const Phase& p = t.phases[i];
            const bool holds = p.start <= e.time && e.time < p.end;
            const bool in_chain =
                std::find(chain.begin(), chain.end(), PhaseId(i + 1)) != chain.end();
            EXPECT_EQ(holds, in_chain) << t.string(p.name);
        }
    }
}

}  // namespace
}  // namespace memscope
