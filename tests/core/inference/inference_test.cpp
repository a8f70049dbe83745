// Inference of steps, phases and categories (inference.h) on traces built by
// hand: what is found, that it is marked inferred, and that recorded labels
// are never replaced.
#include "memscope/inference/inference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>

#include "../analysis_test_util.h"
#include "memscope/analysis/summary.h"
#include "memscope/open/open_run.h"
#include "memscope/report/report_json.h"
#include "memscope_test/wall_guard.h"

namespace memscope {
namespace {

using testutil::event;

// A training loop as an allocator sees it: parameters first, then per step an
// input, a forward that saves `layers` activations (and frees a temporary
// per layer), a backward that frees them in reverse and makes one gradient
// per parameter, an optimizer whose first step creates two state buffers per
// parameter, then zero_grad and the input freed at the step's end.
struct Loop {
    Trace trace;
    std::vector<Category> truth;  // per event: the category the loop gave it
};

Loop trainingLoop(int steps, int layers = 6) {
    Loop l;
    int64_t t = 1'000'000'000;
    uint64_t next = 0x1000;
    auto alloc = [&](uint64_t size, Category c) {
        const uint64_t a = next;
        next += 0x100000;
        l.trace.events.push_back(event(t += 1000, EventKind::Alloc, a, size, Category::Unknown));
        l.truth.push_back(c);
        return a;
    };
    auto release = [&](uint64_t a, uint64_t size, Category c) {
        l.trace.events.push_back(
            event(t += 1000, EventKind::FreeCompleted, a, size, Category::Unknown));
        l.truth.push_back(c);
    };
    std::vector<uint64_t> params;
    for (int p = 0; p < layers; ++p)
        params.push_back(alloc(4096 + 512 * uint64_t(p), Category::Parameter));
    for (int s = 0; s < steps; ++s) {
        const uint64_t input = alloc(8192, Category::Input);
        std::vector<uint64_t> acts;
        for (int k = 0; k < layers; ++k) {
            acts.push_back(alloc(65536, Category::Activation));
            const uint64_t tmp = alloc(1024, Category::Temporary);
            release(tmp, 1024, Category::Temporary);
        }
        std::vector<uint64_t> grads;
        for (int k = layers - 1; k >= 0; --k) {
            const uint64_t tmp = alloc(2048, Category::Temporary);
            grads.push_back(alloc(4096 + 512 * uint64_t(k), Category::Gradient));
            release(tmp, 2048, Category::Temporary);
            release(acts[size_t(k)], 65536, Category::Activation);
        }
        for (int k = 0; k < layers; ++k) {
            if (s == 0) {
                alloc(4096 + 512 * uint64_t(k), Category::OptimizerState);
                alloc(4096 + 512 * uint64_t(k), Category::OptimizerState);
            }
            for (int j = 0; j < 4; ++j) {
                const uint64_t tmp = alloc(256, Category::Temporary);
                release(tmp, 256, Category::Temporary);
            }
        }
        for (int k = 0; k < layers; ++k)
            release(grads[size_t(k)], 4096 + 512 * uint64_t(layers - 1 - k), Category::Gradient);
        release(input, 8192, Category::Input);
    }
    return l;
}

TEST(Inference, FindsTheStepsOfARepeatingLoopAndMarksThemInferred) {
    Loop l = trainingLoop(4);
    const InferenceReport r = inferMissingLabels(l.trace);
    EXPECT_EQ(r.steps, 4u);
    EXPECT_EQ(r.steps_source, StepSource::Inferred);
    EXPECT_FALSE(r.phases_from_frames);
    for (const Phase& p : l.trace.phases) EXPECT_TRUE(p.inferred) << l.trace.string(p.name);
    // Each step has a forward, a backward and an optimizer.
    std::array<int, 8> kinds{};
    for (const Phase& p : l.trace.phases) ++kinds[size_t(p.kind)];
    EXPECT_EQ(kinds[size_t(PhaseKind::Forward)], 4);
    EXPECT_EQ(kinds[size_t(PhaseKind::Backward)], 4);
    EXPECT_EQ(kinds[size_t(PhaseKind::Optimizer)], 4);
    EXPECT_EQ(stepSource(l.trace), StepSource::Inferred);
}

// 40 steps of 600 layers: 390,000 events, past the size at which the search
// for repetition hashes and sorts its windows on every core. Each step must
// still come out whole: one input allocated in each, and every step between
// the first (which creates the optimizer state) and the last (which ends at
// the trace's end) as long as the next.
TEST(Inference, FindsTheStepsOfALongLoopOnEveryCore) {
    constexpr int kSteps = 40;
    Loop l = trainingLoop(kSteps, 600);
    ASSERT_GT(l.trace.events.size(), 300000u);
    const InferenceReport r = inferMissingLabels(l.trace);
    EXPECT_EQ(r.steps, size_t(kSteps));
    std::vector<const Phase*> steps;
    for (const Phase& p : l.trace.phases)
        if (p.kind == PhaseKind::Step) steps.push_back(&p);
    ASSERT_EQ(steps.size(), size_t(kSteps));
    std::sort(steps.begin(), steps.end(),
              [](const Phase* a, const Phase* b) { return a->start < b->start; });
    std::vector<int64_t> inputs;
    for (size_t i = 0; i < l.trace.events.size(); ++i)
        if (l.truth[i] == Category::Input && l.trace.events[i].kind == EventKind::Alloc)
            inputs.push_back(l.trace.events[i].time);
    ASSERT_EQ(inputs.size(), size_t(kSteps));
    for (size_t k = 0; k < steps.size(); ++k) {
        EXPECT_TRUE(steps[k]->inferred);
        const auto in = std::count_if(inputs.begin(), inputs.end(), [&](int64_t t) {
            return t >= steps[k]->start && t < steps[k]->end;
        });
        EXPECT_EQ(in, 1) << "step " << k;
        if (k >= 1 && k + 2 < steps.size()) {
            EXPECT_EQ(steps[k]->end - steps[k]->start, steps[k + 1]->end - steps[k + 1]->start)
                << "step " << k;
        }
    }
}

// Files from strangers may give thousands of frames (one per line number)
// one long function name and file (16 MB here): each string is read once,
// not once per frame (that took minutes on the hostile corpus's 40,000
// frames of 8 MB strings, and over a minute here). The frames still say what
// they do: a few backward frames among them make the trace one step, found
// from its stack frames.
TEST(Inference, FramesSharingLongStringsAreReadOncePerString) {
    Trace t;
    const StringId name = t.internString(std::string(16u << 20, 'n'));
    const StringId file = t.internString(std::string(16u << 20, 'f'));
    const StringId backward = t.internString("backward");
    std::mt19937_64 rng(5);
    for (uint32_t i = 0; i < 30000; ++i) {
        const bool in_backward = i % 3000 == 2999;
        const FrameId f = t.internFrame({in_backward ? backward : name, file, i + 1});
        Event e = event(int64_t(i) * 1000, EventKind::Alloc, 0x1000000 + uint64_t(i) * 4096,
                        512 * (1 + rng() % 64), Category::Unknown);
        e.stack = t.internStack(std::vector<FrameId>{f});
        t.events.push_back(e);
    }
    const auto start = std::chrono::steady_clock::now();
    inferMissingLabels(t);
    EXPECT_LT(std::chrono::steady_clock::now() - start,
              memscope::test::wallGuard(std::chrono::seconds(20)));
    // Ten events of backward frames (at least 8 count) and no repetition.
    const std::string* phases = t.metadata.property("phases");
    ASSERT_NE(phases, nullptr);
    EXPECT_EQ(phases->rfind("inferred from one step's stack frames", 0), 0u) << *phases;
}

TEST(Inference, LabelsTheLoopsAllocationsByTheirLifetimes) {
    Loop l = trainingLoop(3);
    inferMissingLabels(l.trace);
    ASSERT_EQ(l.trace.inferred_categories.size(), l.trace.events.size());
    std::array<std::array<int, kCategoryCount>, kCategoryCount> confusion{};
    int right = 0, allocs = 0;
    for (uint64_t i = 0; i < l.trace.events.size(); ++i) {
        if (l.trace.events[i].kind != EventKind::Alloc) continue;
        // The recorded category stays what was recorded; the inferred one is apart.
        EXPECT_EQ(l.trace.events[i].category, Category::Unknown);
        EXPECT_TRUE(l.trace.categoryInferred(i));
        ++allocs;
        ++confusion[size_t(index(l.truth[i]))][size_t(index(l.trace.categoryOf(i)))];
        right += l.trace.categoryOf(i) == l.truth[i];
    }
    // Every kind of allocation the loop makes is recognized.
    for (Category c : {Category::Parameter, Category::OptimizerState, Category::Activation,
                       Category::Gradient, Category::Temporary, Category::Input})
        EXPECT_GT(confusion[size_t(index(c))][size_t(index(c))], 0) << toString(c);
    EXPECT_GE(double(right) / allocs, 0.9);
}

TEST(Inference, TheTimelineSaysWhichBytesAreInferred) {
    Loop l = trainingLoop(3);
    auto opened = openTrace(std::move(l.trace), "loop");
    ASSERT_TRUE(opened.ok()) << opened.message();
    const DeviceTimeline& tl = opened->timeline->devices().front();
    const CategorySources act = tl.category_sources[size_t(index(Category::Activation))];
    EXPECT_TRUE(act.inferred);
    EXPECT_FALSE(act.recorded);
    EXPECT_GT(tl.peak.by_category[size_t(index(Category::Activation))], 0);
    size_t inferred = 0;
    for (const AllocationInterval& a : tl.intervals) inferred += a.category_inferred;
    EXPECT_EQ(inferred, tl.intervals.size());
    // The inspector's sentence names the rule and the phases.
    const AllocationInterval& big = tl.intervals[tl.peak.live_intervals.front()];
    const std::string why = explainCategory(*opened->trace, tl, big);
    EXPECT_NE(why.find("activation (inferred): born in forward, freed in backward"),
              std::string::npos)
        << why;
    EXPECT_NE(why.find("step "), std::string::npos) << why;
}

TEST(Inference, RecordedCategoriesAndPhasesAreKept) {
    Trace t = testutil::trainingRun("run", "full", 4000, 0, 3);
    const size_t phases = t.phases.size();
    std::vector<Category> recorded;
    for (const Event& e : t.events) recorded.push_back(e.category);
    const InferenceReport r = inferMissingLabels(t);
    EXPECT_EQ(t.phases.size(), phases);  // recorded phases: nothing added
    EXPECT_EQ(r.steps_source, StepSource::Recorded);
    for (uint64_t i = 0; i < t.events.size(); ++i) {
        EXPECT_EQ(t.events[i].category, recorded[i]);
        if (recorded[i] != Category::Unknown) {
            EXPECT_FALSE(t.categoryInferred(i));
            EXPECT_EQ(t.categoryOf(i), recorded[i]);
        }
    }
    auto opened = openTrace(std::move(t), "run");
    ASSERT_TRUE(opened.ok());
    for (const auto& src : opened->timeline->devices().front().category_sources)
        EXPECT_FALSE(src.inferred);
}

TEST(Inference, NoRepetitionNoSteps) {
    Trace t;
    std::mt19937_64 rng(7);
    int64_t time = 1;
    std::vector<uint64_t> live;
    for (int i = 0; i < 4000; ++i) {
        if (live.empty() || rng() % 2) {
            const uint64_t a = 0x1000 + uint64_t(i) * 0x1000;
            t.events.push_back(
                event(time++, EventKind::Alloc, a, 512 * (1 + rng() % 1000), Category::Unknown));
            live.push_back(a);
        } else {
            const size_t k = rng() % live.size();
            t.events.push_back(
                event(time++, EventKind::FreeCompleted, live[k], 0, Category::Unknown));
            live.erase(live.begin() + long(k));
        }
    }
    const InferenceReport r = inferMissingLabels(t);
    EXPECT_EQ(r.steps, 0u);
    EXPECT_EQ(r.steps_source, StepSource::None);
    EXPECT_TRUE(t.phases.empty());
}

TEST(Inference, StackFramesNameTheOptimizerAndBackward) {
    Trace t;
    auto stackOf = [&](const char* fn, const char* file) {
        const FrameId f = t.internFrame({t.internString(fn), t.internString(file), 1});
        return t.internStack(std::span<const FrameId>(&f, 1));
    };
    const StackId adam = stackOf("_multi_tensor_adam", "/usr/lib/python3/torch/optim/adam.py");
    const StackId backward = stackOf("backward", "/usr/lib/python3/torch/_tensor.py");
    const StackId forward = stackOf("forward", "/home/me/model.py");
    auto add = [&](int64_t time, EventKind k, uint64_t a, StackId s) {
        Event e = event(time, k, a, 4096, Category::Unknown);
        e.stack = s;
        t.events.push_back(e);
    };
    add(1, EventKind::Alloc, 0x1000, forward);   // activation: freed in backward
    add(2, EventKind::Alloc, 0x2000, backward);  // gradient: freed by the optimizer
    add(3, EventKind::FreeCompleted, 0x1000, backward);
    add(4, EventKind::Alloc, 0x3000, adam);  // optimizer state: kept
    add(5, EventKind::FreeCompleted, 0x2000, adam);
    inferMissingLabels(t);
    EXPECT_EQ(t.categoryOf(0), Category::Activation);
    EXPECT_EQ(t.categoryOf(1), Category::Gradient);
    EXPECT_EQ(t.categoryOf(3), Category::OptimizerState);
    EXPECT_EQ(t.inferred_categories[3].rule, CategoryRule::OptimizerBornKept);
}

TEST(Inference, ConvertOpensWithoutInferring) {
    Loop l = trainingLoop(3);
    OpenOptions options;
    options.timeline = false;
    auto opened = openTrace(std::move(l.trace), "loop", {}, options);
    ASSERT_TRUE(opened.ok());
    EXPECT_TRUE(opened->trace->phases.empty());
    EXPECT_TRUE(opened->trace->inferred_categories.empty());
}

TEST(Inference, SummaryJsonListsStepsWithTheirSourceAndPhases) {
    Loop l = trainingLoop(3);
    auto opened = openTrace(std::move(l.trace), "loop");
    ASSERT_TRUE(opened.ok());
    FileReport f{"loop",
                 "test",
                 opened->trace.get(),
                 opened->timeline.get(),
                 summarize(*opened->trace, *opened->timeline),
                 {},
                 {}};
    const auto doc = nlohmann::json::parse(summaryToJson(std::span<const FileReport>(&f, 1)));
    const auto& steps = doc["files"][0]["steps"];
    ASSERT_EQ(steps.size(), 3u);
    for (size_t k = 0; k < 3; ++k) {
        EXPECT_EQ(steps[k]["index"], k);
        EXPECT_EQ(steps[k]["source"], "inferred");
        for (const char* phase : {"forward", "backward", "optimizer"}) {
            ASSERT_TRUE(steps[k]["phases"].contains(phase)) << steps[k].dump();
            const auto& span = steps[k]["phases"][phase];
            EXPECT_LE(span[0].get<int64_t>(), span[1].get<int64_t>());
            EXPECT_GE(span[0].get<int64_t>(), steps[k]["start_us"].get<int64_t>());
        }
    }
    EXPECT_EQ(doc["files"][0]["devices"]["0"]["category_sources"]["activation"], "inferred");
}

}  // namespace
}  // namespace memscope
