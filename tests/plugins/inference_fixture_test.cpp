// Inference on the real fixtures: each snapshot's category breakdown at the
// peak and its steps are printed (the test log is the table), and what can be
// known is asserted: recorded markers are used where a snapshot has them,
// repetition gives the steps of a training snapshot, and the kineto trace
// keeps its 5 profiler steps with inferred forward/backward/optimizer phases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "memscope/base/units.h"
#include "memscope/builtin_plugins.h"
#include "memscope/inference/inference.h"
#include "memscope/open/open_run.h"
#include "test_util.h"

namespace memscope {
namespace {

OpenedTrace open(const std::string& file) {
    PluginRegistry registry;
    registerBuiltinPlugins(registry);
    auto t = openTrace(file, registry);
    EXPECT_TRUE(t.ok()) << t.message();
    return t.ok() ? std::move(*t) : OpenedTrace{};
}

size_t steps(const Trace& t) {
    size_t n = 0;
    for (const Phase& p : t.phases) n += p.kind == PhaseKind::Step;
    return n;
}

void printBreakdown(const std::string& name, const OpenedTrace& t) {
    for (const DeviceTimeline& d : t.timeline->devices()) {
        std::string line;
        for (Category c : kAllCategories) {
            const int64_t b = d.peak.by_category[size_t(index(c))];
            if (b <= 0) continue;
            line += " " + std::string(toString(c)) + " " + formatBytes(b);
        }
        std::printf("%-60s device %2d  steps %zu (%s)  peak %s:%s\n", name.c_str(), d.device,
                    steps(*t.trace), std::string(toString(stepSource(*t.trace))).c_str(),
                    formatBytes(d.peak.bytes).c_str(), line.c_str());
    }
}

TEST(InferenceFixtures, EverySnapshotGetsCategoriesAndItsMarkersAreUsed) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    for (const auto& entry : std::filesystem::directory_iterator(test::fixtures() / "snapshots")) {
        const std::string name = entry.path().filename().string();
        if (name == "EXPECTED.json") continue;
        SCOPED_TRACE(name);
        const OpenedTrace t = open(entry.path().string());
        ASSERT_TRUE(t.trace && t.timeline);
        printBreakdown(name, t);
        // Markers the snapshot recorded (external_annotations) are its phases,
        // kept as recorded next to whatever is inferred around them.
        if (!t.trace->annotations.empty()) {
            std::set<StringId> marked;
            for (const Annotation& a : t.trace->annotations) marked.insert(a.name);
            size_t recorded = 0;
            for (const Phase& p : t.trace->phases) {
                if (p.inferred) continue;
                ++recorded;
                EXPECT_TRUE(marked.count(p.name)) << t.trace->string(p.name);
            }
            EXPECT_GT(recorded, 0u);
        }
        // Where the snapshot has a history, some of what was live at the
        // peak gets a category other than unknown; every category is marked
        // inferred (snapshots record none). An end state alone says too
        // little: unknown.
        const bool history = std::any_of(t.trace->events.begin(), t.trace->events.end(),
                                         [](const Event& e) { return e.kind == EventKind::Alloc; });
        for (const DeviceTimeline& d : t.timeline->devices()) {
            if (d.peak.bytes <= 0) continue;
            if (history)
                EXPECT_LT(d.peak.by_category[size_t(index(Category::Unknown))], d.peak.bytes);
            else
                EXPECT_EQ(d.peak.by_category[size_t(index(Category::Unknown))], d.peak.bytes);
            for (const CategorySources& s : d.category_sources) EXPECT_FALSE(s.recorded);
        }
    }
}

// PyTorch >= 2.5's optimizers mark their step and zero_grad: the step they
// close, its forward and backward are inferred around them, and the blocks
// alive from before the trace (assignment 2's AdamW after warm-up: the
// parameters, and the moments it assigns anew each step) are told apart.
TEST(InferenceFixtures, OptimizerMarkersAnchorInferredStepsForwardAndBackward) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    for (const char* name : {"ext_annotations_19k_entries__notHanmin_a2.pickle",
                             "user_metadata_compile_ctx__bcrafton_a2.pickle"}) {
        SCOPED_TRACE(name);
        const OpenedTrace t = open((test::fixtures() / "snapshots" / name).string());
        ASSERT_TRUE(t.trace && t.timeline);
        EXPECT_EQ(steps(*t.trace), 1u);
        EXPECT_EQ(stepSource(*t.trace), StepSource::Inferred);
        size_t forward = 0, backward = 0, optimizer_recorded = 0;
        for (const Phase& p : t.trace->phases) {
            forward += p.kind == PhaseKind::Forward && p.inferred;
            backward += p.kind == PhaseKind::Backward && p.inferred;
            optimizer_recorded += p.kind == PhaseKind::Optimizer && !p.inferred;
        }
        EXPECT_EQ(forward, 1u);
        EXPECT_EQ(backward, 1u);
        EXPECT_GE(optimizer_recorded, 1u);
    }
    const OpenedTrace t =
        open((test::fixtures() / "snapshots" / "ext_annotations_19k_entries__notHanmin_a2.pickle")
                 .string());
    ASSERT_TRUE(t.trace && t.timeline);
    const DeviceTimeline& d = t.timeline->devices().front();
    auto at = [&](Category c) { return double(d.peak.by_category[size_t(index(c))]) / (1 << 30); };
    // 328 parameters (3.72 GiB), their two moments each, 327 gradients.
    EXPECT_NEAR(at(Category::Parameter), 3.72, 0.05);
    EXPECT_NEAR(at(Category::OptimizerState), 7.43, 0.05);
    EXPECT_NEAR(at(Category::Gradient), 3.62, 0.05);
    EXPECT_LT(at(Category::Unknown), 0.1);
}

TEST(InferenceFixtures, ATrainingSnapshotWithoutMarkersGetsStepsFromItsRepetition) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    const OpenedTrace t = open(
        (test::fixtures() / "snapshots" / "time_us_no_settings_snapshot_actions__EoR_NN.pickle")
            .string());
    ASSERT_TRUE(t.trace);
    EXPECT_GE(steps(*t.trace), 2u);
    EXPECT_EQ(stepSource(*t.trace), StepSource::Inferred);
    // Each inferred step holds a forward and a backward.
    size_t forward = 0, backward = 0;
    for (const Phase& p : t.trace->phases) {
        EXPECT_TRUE(p.inferred);
        forward += p.kind == PhaseKind::Forward;
        backward += p.kind == PhaseKind::Backward;
    }
    EXPECT_EQ(forward, steps(*t.trace));
    EXPECT_EQ(backward, steps(*t.trace));
}

TEST(InferenceFixtures, KinetoKeepsItsProfilerStepsAndMarksDerivedPhasesInferred) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    const OpenedTrace t = open(
        (test::fixtures() / "profiler" / "hta_kineto_trace_with_memory_events.json.gz").string());
    ASSERT_TRUE(t.trace);
    printBreakdown("hta_kineto_trace_with_memory_events.json.gz", t);
    EXPECT_EQ(steps(*t.trace), 5u);
    EXPECT_EQ(stepSource(*t.trace), StepSource::Recorded);
    size_t derived = 0;
    for (const Phase& p : t.trace->phases) {
        if (p.kind == PhaseKind::Step) {
            EXPECT_FALSE(p.inferred);
        } else if (p.kind == PhaseKind::Forward || p.kind == PhaseKind::Backward ||
                   p.kind == PhaseKind::Optimizer) {
            EXPECT_TRUE(p.inferred);
            ++derived;
        }
    }
    EXPECT_GE(derived, 15u);
    const DeviceTimeline* gpu = t.timeline->device(1);
    ASSERT_NE(gpu, nullptr);
    EXPECT_FALSE(gpu->reserved.empty());
    EXPECT_TRUE(gpu->category_sources[size_t(index(Category::Activation))].inferred);
}

}  // namespace
}  // namespace memscope
