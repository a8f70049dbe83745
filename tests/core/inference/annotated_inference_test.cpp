// Inference on training snapshots as PyTorch >= 2.5 writes them: the
// optimizer's own Optimizer.step# / Optimizer.zero_grad# ranges as the only
// labels, and the history switched on after warm-up (what was alive then is
// in the end state, without frames or an allocation in the trace). The loops
// are built here, so every allocation's true category is known.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "../analysis_test_util.h"
#include "memscope/inference/inference.h"
#include "memscope/open/open_run.h"

namespace memscope {
namespace {

using testutil::event;

struct LoopShape {
    int steps = 3;
    int layers = 6;
    int state_per_param = 2;             // Adam: 2, SGD with momentum: 1
    int micro_batches = 1;               // gradient accumulation: backwards per optimizer step
    bool optimizer_in_backward = false;  // a step (and zero_grad) per parameter inside backward
    bool replaces_state = false;         // a user's optimizer assigning new moments each step
    bool frees_state_at_end = false;     // the script drops the optimizer after the loop
    bool set_to_none = true;             // zero_grad frees the gradients (else zeroes them)
    int64_t history_from_step = 0;       // the history starts at this step (after warm-up)
};

uint64_t paramSize(int k) {
    return 4096 + 512 * uint64_t(k);
}

// A loop and what each of its allocations is. Events carry no category and
// no stack; the optimizer's ranges are recorded phases, as the snapshot
// importer makes them from external_annotations.
struct Loop {
    Trace trace;
    std::map<uint64_t, Category> truth;  // by address: what lives there (reused addresses: last)
    std::vector<Category> truth_of;      // per event of the trace
};

class LoopBuilder {
public:
    explicit LoopBuilder(const LoopShape& shape) : shape_(shape) {}

    Loop build() {
        std::vector<uint64_t> params, state;
        for (int k = 0; k < shape_.layers; ++k)
            params.push_back(alloc(paramSize(k), Category::Parameter));
        std::vector<uint64_t> grads;
        for (int s = 0; s < shape_.steps; ++s) {
            step_ = s;
            for (int micro = 0; micro < shape_.micro_batches; ++micro) {
                const uint64_t input = alloc(8192, Category::Input);
                std::vector<uint64_t> acts;
                for (int k = 0; k < shape_.layers; ++k) {
                    acts.push_back(alloc(65536, Category::Activation));
                    release(alloc(1024, Category::Temporary));
                }
                for (int k = shape_.layers - 1; k >= 0; --k) {
                    const uint64_t tmp = alloc(2048, Category::Temporary);
                    if (micro == 0 && (shape_.set_to_none || s == 0))
                        grads.push_back(alloc(paramSize(k), Category::Gradient));
                    release(tmp);
                    release(acts[size_t(k)]);
                    if (shape_.optimizer_in_backward) {
                        range("Optimizer.step#AdamW.step", [&] { update(s, k, state); });
                        range("Optimizer.zero_grad#AdamW.zero_grad", [&] {
                            release(grads.back());
                            grads.pop_back();
                        });
                    }
                }
                release(input);
            }
            if (shape_.optimizer_in_backward) continue;
            range("Optimizer.step#AdamW.step", [&] {
                for (int k = 0; k < shape_.layers; ++k) update(s, k, state);
            });
            range("Optimizer.zero_grad#AdamW.zero_grad", [&] {
                if (!shape_.set_to_none) return;
                for (uint64_t g : grads) release(g);
                grads.clear();
            });
        }
        if (shape_.frees_state_at_end)
            for (uint64_t a : state) release(a);
        return cut();
    }

private:
    uint64_t alloc(uint64_t size, Category c) {
        const uint64_t a = next_;
        next_ += 0x100000;
        all_.push_back({event(t_ += 1000, EventKind::Alloc, a, size, Category::Unknown), c, step_});
        live_[a] = {size, c};
        return a;
    }
    void release(uint64_t a) {
        const auto it = live_.find(a);
        all_.push_back(
            {event(t_ += 1000, EventKind::FreeCompleted, a, it->second.size, Category::Unknown),
             it->second.category, step_});
        live_.erase(it);
    }
    template <typename F>
    void range(const char* name, F body) {
        const int64_t start = t_ += 500;
        body();
        ranges_.push_back({name, start, t_ += 500, step_});
    }
    // One parameter's update: state made in the first step (or replaced in
    // every step by a user's optimizer), a temporary.
    void update(int s, int k, std::vector<uint64_t>& state) {
        if (s == 0 || shape_.replaces_state) {
            std::vector<uint64_t> fresh;
            for (int j = 0; j < shape_.state_per_param; ++j)
                fresh.push_back(alloc(paramSize(k), Category::OptimizerState));
            if (s > 0)
                for (int j = 0; j < shape_.state_per_param; ++j) {
                    release(state[size_t(k * shape_.state_per_param + j)]);
                    state[size_t(k * shape_.state_per_param + j)] = fresh[size_t(j)];
                }
            else
                state.insert(state.end(), fresh.begin(), fresh.end());
        }
        release(alloc(256, Category::Temporary));
    }

    // The trace from the first event of step `history_from_step` on; what
    // was alive then stays in the end state only.
    Loop cut() {
        Loop out;
        std::map<uint64_t, Live> alive;
        for (const Recorded& r : all_) {
            const Event& e = r.event;
            const bool kept = r.step >= shape_.history_from_step;
            if (kept) {
                out.trace.events.push_back(e);
                out.truth_of.push_back(r.category);
            }
            if (e.kind == EventKind::Alloc)
                alive[e.address] = {e.size, r.category};
            else
                alive.erase(e.address);
        }
        AllocatorState state;
        for (const auto& [address, l] : alive) {
            Segment s;
            s.address = address;
            s.total_size = l.size;
            s.first_block = uint32_t(state.blocks.size());
            s.block_count = 1;
            state.segments.push_back(s);
            state.blocks.push_back(
                {address, l.size, l.size, StackId(), BlockState::ActiveAllocated});
            out.truth[address] = l.category;
        }
        out.trace.allocator_state = std::move(state);
        for (const Range& r : ranges_) {
            if (r.step < shape_.history_from_step) continue;
            Phase p;
            p.name = out.trace.internString(r.name);
            p.kind = PhaseKind::Optimizer;
            p.start = r.start;
            p.end = r.end;
            const PhaseId id = out.trace.addPhase(p);
            for (Event& e : out.trace.events)
                if (e.time >= r.start && e.time < r.end) e.phase = id;
        }
        return out;
    }

    struct Live {
        uint64_t size;
        Category category;
    };
    struct Recorded {
        Event event;
        Category category;
        int step;
    };
    struct Range {
        std::string name;
        int64_t start, end;
        int step;
    };
    LoopShape shape_;
    int64_t t_ = 1'000'000'000;
    uint64_t next_ = 0x1000;
    int step_ = -1;
    std::vector<Recorded> all_;
    std::vector<Range> ranges_;
    std::map<uint64_t, Live> live_;
};

Loop loop(const LoopShape& shape) {
    return LoopBuilder(shape).build();
}

size_t countPhases(const Trace& t, PhaseKind kind, bool inferred) {
    size_t n = 0;
    for (const Phase& p : t.phases) n += p.kind == kind && p.inferred == inferred;
    return n;
}

// Bytes by true and by inferred category live at the busiest device's peak.
struct AtPeak {
    std::array<int64_t, kCategoryCount> truth{}, found{};
    int64_t right = 0, all = 0;
    double share() const { return all ? double(right) / double(all) : 0; }
};

AtPeak scoreAtPeak(Loop& l) {
    std::map<uint64_t, Category> truth_of_event_address;
    auto opened = openTrace(std::move(l.trace), "loop");
    EXPECT_TRUE(opened.ok()) << opened.message();
    AtPeak s;
    if (!opened.ok()) return s;
    const DeviceTimeline& tl = opened->timeline->devices().front();
    for (uint32_t i : tl.peak.live_intervals) {
        const AllocationInterval& a = tl.intervals[i];
        Category t = Category::Unknown;
        if (a.alloc_event != kNoEvent)
            t = l.truth_of[a.alloc_event];
        else if (a.free_event != kNoEvent)
            t = l.truth_of[a.free_event];
        else if (auto it = l.truth.find(a.address); it != l.truth.end())
            t = it->second;
        s.truth[size_t(index(t))] += int64_t(a.size);
        s.found[size_t(index(a.category))] += int64_t(a.size);
        s.all += int64_t(a.size);
        s.right += t == a.category ? int64_t(a.size) : 0;
    }
    l.trace = *opened->trace;  // for the tests that look at phases afterwards
    return s;
}

TEST(AnnotatedInference, OptimizerRangesAnchorInferredStepsForwardAndBackward) {
    Loop l = loop({});
    const InferenceReport r = inferMissingLabels(l.trace);
    EXPECT_EQ(r.steps, 3u);
    EXPECT_EQ(r.steps_source, StepSource::Inferred);
    EXPECT_EQ(countPhases(l.trace, PhaseKind::Step, true), 3u);
    EXPECT_EQ(countPhases(l.trace, PhaseKind::Forward, true), 3u);
    EXPECT_EQ(countPhases(l.trace, PhaseKind::Backward, true), 3u);
    // The optimizer is what was recorded: kept, not inferred again.
    EXPECT_EQ(countPhases(l.trace, PhaseKind::Optimizer, false), 6u);
    EXPECT_EQ(countPhases(l.trace, PhaseKind::Optimizer, true), 0u);
    // Events inside a recorded range keep it as their phase.
    for (const Event& e : l.trace.events)
        for (const Phase& p : l.trace.phases)
            if (!p.inferred && e.time >= p.start && e.time < p.end) {
                EXPECT_EQ(&l.trace.phases[e.phase.value - 1], &p);
            }
    EXPECT_NE(l.trace.metadata.property("phases")->find("the optimizer's recorded steps"),
              std::string::npos);
}

TEST(AnnotatedInference, LabelsTheAnnotatedLoopsBytesAtThePeak) {
    Loop l = loop({});
    const AtPeak s = scoreAtPeak(l);
    EXPECT_GE(s.share(), 0.9);
    EXPECT_EQ(s.found[size_t(index(Category::Parameter))],
              s.truth[size_t(index(Category::Parameter))]);
    EXPECT_EQ(s.found[size_t(index(Category::OptimizerState))],
              s.truth[size_t(index(Category::OptimizerState))]);
}

TEST(AnnotatedInference, OneStepStillGetsItsForwardAndBackward) {
    Loop l = loop({.steps = 1});
    const InferenceReport r = inferMissingLabels(l.trace);
    EXPECT_EQ(r.steps, 1u);
    EXPECT_EQ(countPhases(l.trace, PhaseKind::Forward, true), 1u);
    EXPECT_EQ(countPhases(l.trace, PhaseKind::Backward, true), 1u);
}

TEST(AnnotatedInference, HistoryAfterWarmupSplitsParametersFromAdamState) {
    for (int steps : {2, 4}) {  // one step recorded, and three
        Loop l = loop({.steps = steps, .history_from_step = 1});
        const AtPeak s = scoreAtPeak(l);
        EXPECT_EQ(countPhases(l.trace, PhaseKind::Step, true), size_t(steps - 1));
        const int64_t params = s.truth[size_t(index(Category::Parameter))];
        ASSERT_GT(params, 0);
        EXPECT_EQ(s.found[size_t(index(Category::Parameter))], params);
        EXPECT_EQ(s.found[size_t(index(Category::OptimizerState))], 2 * params);
        EXPECT_EQ(s.truth[size_t(index(Category::OptimizerState))], 2 * params);
        EXPECT_GE(s.share(), 0.9);
    }
    // The inspector says which rule decided.
    Loop l = loop({.steps = 2, .history_from_step = 1});
    auto opened = openTrace(std::move(l.trace), "loop");
    ASSERT_TRUE(opened.ok());
    const DeviceTimeline& tl = opened->timeline->devices().front();
    bool said = false;
    for (const AllocationInterval& a : tl.intervals)
        if (a.alloc_event == kNoEvent && a.free_event == kNoEvent &&
            a.category == Category::OptimizerState)
            said |= explainCategory(*opened->trace, tl, a)
                        .find(
                            "optimizer_state (inferred): one of 3 same-size blocks per parameter, "
                            "alive before the trace") != std::string::npos;
    EXPECT_TRUE(said);
}

TEST(AnnotatedInference, MomentumKeepsOneTensorPerParameter) {
    Loop l = loop({.steps = 2, .state_per_param = 1, .history_from_step = 1});
    const AtPeak s = scoreAtPeak(l);
    const int64_t params = s.truth[size_t(index(Category::Parameter))];
    EXPECT_EQ(s.found[size_t(index(Category::Parameter))], params);
    EXPECT_EQ(s.found[size_t(index(Category::OptimizerState))], params);
}

TEST(AnnotatedInference, GradientsKeptByZeroGradAreSetsOfFourWithAdam) {
    // zero_grad(set_to_none=False): no gradient is born in the recorded
    // steps; the optimizer's class (AdamW) says each parameter has a
    // gradient and two moments of its size.
    Loop l = loop({.steps = 3, .set_to_none = false, .history_from_step = 1});
    const AtPeak s = scoreAtPeak(l);
    const int64_t params = s.truth[size_t(index(Category::Parameter))];
    ASSERT_GT(params, 0);
    EXPECT_EQ(s.truth[size_t(index(Category::Gradient))], params);
    EXPECT_EQ(s.found[size_t(index(Category::Parameter))], params);
    EXPECT_EQ(s.found[size_t(index(Category::Gradient))], params);
    EXPECT_EQ(s.found[size_t(index(Category::OptimizerState))], 2 * params);
}

TEST(AnnotatedInference, PreTraceBlocksThatFitNoStructureStayUnknown) {
    Loop l = loop({.steps = 2, .history_from_step = 1});
    // A buffer of a size no gradient has, alive from before the trace.
    AllocatorState& state = *l.trace.allocator_state;
    Segment s;
    s.address = 0x7f0000000000;
    s.total_size = 777 * 512;
    s.first_block = uint32_t(state.blocks.size());
    s.block_count = 1;
    state.segments.push_back(s);
    state.blocks.push_back(
        {s.address, s.total_size, s.total_size, StackId(), BlockState::ActiveAllocated});
    inferMissingLabels(l.trace);
    EXPECT_EQ(l.trace.inferred_block_categories.back().category, Category::Unknown);
}

TEST(AnnotatedInference, AUsersOptimizerStateIsStateNotTemporary) {
    // State made in the first step and dropped after the loop; a user's
    // optimizer that assigns new moments each step, recorded after warm-up.
    for (const LoopShape shape :
         {LoopShape{.frees_state_at_end = true},
          LoopShape{.steps = 3, .replaces_state = true, .history_from_step = 1}}) {
        Loop l = loop(shape);
        const AtPeak s = scoreAtPeak(l);
        EXPECT_EQ(s.found[size_t(index(Category::OptimizerState))],
                  s.truth[size_t(index(Category::OptimizerState))]);
        EXPECT_GE(s.share(), 0.9);
    }
}

TEST(AnnotatedInference, GradientAccumulationCountsOptimizerSteps) {
    Loop l = loop({.micro_batches = 3});
    const InferenceReport r = inferMissingLabels(l.trace);
    EXPECT_EQ(r.steps, 3u);
}

TEST(AnnotatedInference, AnOptimizerInBackwardClosesOneStepPerBackward) {
    Loop l = loop({.optimizer_in_backward = true});
    const AtPeak s = scoreAtPeak(l);
    EXPECT_EQ(countPhases(l.trace, PhaseKind::Step, true), 3u);
    EXPECT_EQ(s.found[size_t(index(Category::OptimizerState))],
              s.truth[size_t(index(Category::OptimizerState))]);
}

TEST(AnnotatedInference, TracesWithRecordedStepsAreLeftAlone) {
    Loop l = loop({});
    Phase step;
    step.name = l.trace.internString("step 0");
    step.kind = PhaseKind::Step;
    step.start = l.trace.events.front().time;
    step.end = l.trace.events.back().time;
    l.trace.addPhase(step);
    const size_t phases = l.trace.phases.size();
    inferMissingLabels(l.trace);
    EXPECT_EQ(l.trace.phases.size(), phases);
}

}  // namespace
}  // namespace memscope
