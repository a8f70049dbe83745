// The leak finder (memscope/analysis/leak_finder.h) on runs built here: a
// script that keeps every step's logits (2 MiB a step, in `head`) and a hook
// that stores the last block's output (0.5 MiB a step, in `blocks.3`) grow by
// what they keep, named by module and site; the same run with the leaks fixed,
// with a warm-up workspace, optimizer state born in the first step and a
// cache that reaches a plateau, does not grow.
#include "memscope/analysis/leak_finder.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "../analysis_test_util.h"
#include "memscope/inference/inference.h"
#include "memscope/open/open_run.h"

namespace memscope {
namespace {

constexpr uint64_t MiB = 1 << 20;
using testutil::leakyRun;

DeviceGrowth growthOf(const Trace& t) {
    auto tl = Timeline::build(t);
    EXPECT_TRUE(tl.ok());
    const LeakReport r = findLeaks(t, **tl, ModuleAttribution(t));
    EXPECT_EQ(r.devices.size(), 1u);
    return r.devices.at(0);
}

TEST(LeakFinder, KeptLogitsAndAStoringHookGrowByWhatTheyKeep) {
    const DeviceGrowth g =
        growthOf(leakyRun({.keep_logits = true, .hook_stores = true, .plateau_cache = false}));
    ASSERT_EQ(g.step_ends.size(), 10u);
    EXPECT_EQ(g.steady_from, 2);  // the minimal warm-up: nothing else settles
    ASSERT_TRUE(g.fitted_bytes_per_step);
    EXPECT_TRUE(g.grows);
    const double truth = 2.5 * MiB;
    EXPECT_NEAR(g.growth_bytes_per_step, truth, 0.1 * truth) << g.growth_bytes_per_step;
    ASSERT_EQ(g.groups.size(), 2u);
    EXPECT_EQ(g.groups[0].module, "head");
    EXPECT_EQ(g.groups[0].site, "forward  (/home/me/model.py:50)");
    EXPECT_EQ(g.groups[0].frames, (std::vector<std::string>{"train  (/home/me/train.py:80)",
                                                            "forward  (/home/me/model.py:50)"}));
    EXPECT_NEAR(g.groups[0].bytes_per_step, 2.0 * MiB, 0.1 * 2.0 * MiB);
    EXPECT_DOUBLE_EQ(g.groups[0].count_per_step, 1.0);
    EXPECT_EQ(g.groups[0].first_step, 0);
    EXPECT_EQ(g.groups[0].count, 10u);
    EXPECT_EQ(g.groups[0].intervals.size(), size_t(g.groups[0].count));
    EXPECT_TRUE(std::is_sorted(g.groups[0].intervals.begin(), g.groups[0].intervals.end()));
    EXPECT_EQ(g.groups[1].module, "blocks.3");
    EXPECT_EQ(g.groups[1].site, "save_output  (/home/me/train.py:20)");
    EXPECT_NEAR(g.groups[1].bytes_per_step, 0.5 * MiB, 0.1 * 0.5 * MiB);
    EXPECT_EQ(growthText(g), "grows 2.50 MiB per step: head 2.00 MiB, blocks.3 512 KiB");

    // With a cache that fills in the first four steps beside them: the fit
    // over steps 2-9 still within 10%, the cache no group.
    const DeviceGrowth cached = growthOf(leakyRun({.keep_logits = true, .hook_stores = true}));
    EXPECT_TRUE(cached.grows);
    EXPECT_EQ(cached.steady_from, 3);  // the cache's last entry came in step 3
    EXPECT_NEAR(cached.growth_bytes_per_step, truth, 0.1 * truth) << cached.growth_bytes_per_step;
    EXPECT_EQ(cached.groups.size(), 2u);
}

TEST(LeakFinder, AGroupsIntervalsAreItsSurvivors) {
    const Trace t = leakyRun({.keep_logits = true, .hook_stores = true, .plateau_cache = false});
    auto tl = Timeline::build(t);
    ASSERT_TRUE(tl.ok());
    const DeviceGrowth g = deviceGrowth(t, (*tl)->devices().at(0), ModuleAttribution(t));
    const DeviceTimeline& d = (*tl)->devices().at(0);
    ASSERT_FALSE(g.groups.empty());
    for (const LeakGroup& lg : g.groups) {
        ASSERT_EQ(lg.intervals.size(), size_t(lg.count)) << lg.module;
        int64_t bytes = 0;
        for (uint32_t i : lg.intervals) {
            ASSERT_LT(i, d.intervals.size());
            bytes += int64_t(d.intervals[i].size);
            // Alive at the end of the last step: never freed, or freed after it.
            EXPECT_TRUE(d.intervals[i].free_event == kNoEvent ||
                        d.intervals[i].end > g.step_ends.back().time)
                << i;
        }
        EXPECT_EQ(bytes, lg.bytes) << lg.module;
    }
}

TEST(LeakFinder, EachLeakAloneIsFoundWithinTenPercent) {
    const DeviceGrowth logits = growthOf(leakyRun({.keep_logits = true}));
    EXPECT_TRUE(logits.grows);
    EXPECT_NEAR(logits.growth_bytes_per_step, 2.0 * MiB, 0.1 * 2.0 * MiB);
    ASSERT_EQ(logits.groups.size(), 1u);
    EXPECT_EQ(logits.groups[0].module, "head");

    const DeviceGrowth hook = growthOf(leakyRun({.hook_stores = true}));
    EXPECT_TRUE(hook.grows);
    EXPECT_NEAR(hook.growth_bytes_per_step, 0.5 * MiB, 0.1 * 0.5 * MiB);
    ASSERT_EQ(hook.groups.size(), 1u);
    EXPECT_EQ(hook.groups[0].module, "blocks.3");
    EXPECT_EQ(hook.groups[0].site, "save_output  (/home/me/train.py:20)");

    // Five steps: one warm-up step, the fit over four.
    const DeviceGrowth few =
        growthOf(leakyRun({.keep_logits = true, .plateau_cache = false, .steps = 5}));
    EXPECT_EQ(few.steady_from, 1);
    EXPECT_TRUE(few.grows);
    EXPECT_NEAR(few.growth_bytes_per_step, 2.0 * MiB, 0.1 * 2.0 * MiB);

    // Without modules the group is named by its site alone.
    const DeviceGrowth bare = growthOf(leakyRun({.keep_logits = true, .modules = false}));
    ASSERT_EQ(bare.groups.size(), 1u);
    EXPECT_EQ(bare.groups[0].module, "");
    EXPECT_EQ(growthText(bare),
              "grows 2.00 MiB per step: forward  (/home/me/model.py:50) 2.00 MiB");
}

TEST(LeakFinder, WarmUpOptimizerStateAndAPlateauingCacheAreNoGrowth) {
    const DeviceGrowth fixed = growthOf(leakyRun({}));
    ASSERT_TRUE(fixed.fitted_bytes_per_step);
    EXPECT_FALSE(fixed.grows) << *fixed.fitted_bytes_per_step;
    EXPECT_EQ(fixed.growth_bytes_per_step, 0.0);
    EXPECT_TRUE(fixed.groups.empty());
    EXPECT_EQ(growthText(fixed), "no growth");
    // The live bytes at each step's end: the first steps rise (optimizer
    // state, workspace, cache), then stay.
    EXPECT_LT(fixed.step_ends[0].live_bytes, fixed.step_ends[3].live_bytes);
    EXPECT_EQ(fixed.step_ends[4].live_bytes, fixed.step_ends[9].live_bytes);

    const DeviceGrowth no_cache = growthOf(leakyRun({.plateau_cache = false}));
    EXPECT_FALSE(no_cache.grows);
    EXPECT_NEAR(*no_cache.fitted_bytes_per_step, 0.0, 1.0);
}

TEST(LeakFinder, TooFewStepsSaySo) {
    const DeviceGrowth two = growthOf(leakyRun({.keep_logits = true, .steps = 2}));
    EXPECT_FALSE(two.fitted_bytes_per_step);
    EXPECT_FALSE(two.grows);
    EXPECT_EQ(two.note,
              "2 steps: growth per step needs 4 or more (a warm-up step and three steady ones)");
    EXPECT_EQ(growthText(two), two.note);
    // No steps at all.
    Trace t;
    t.events.push_back(testutil::ev(1, EventKind::Alloc, 0x10, 100));
    const DeviceGrowth none = growthOf(t);
    EXPECT_EQ(none.note,
              "0 steps: growth per step needs 4 or more (a warm-up step and three steady ones)");
}

// Repetition finds "steps" in one forward pass of identical layers (as in a
// snapshot cut before backward): each keeps its activations, so the live
// bytes climb layer by layer. That is not a leak; a loop of inference passes
// that keeps one tensor each time is.
Trace repeatedLayers(bool one_pass) {
    Trace t;
    const StackId layer = t.internStack(std::vector<FrameId>{
        t.internFrame({t.internString("forward"), t.internString("/home/me/model.py"), 40})});
    int64_t time = 1'000'000;
    uint64_t address = 0x10000000;
    auto alloc = [&](uint64_t size) {
        t.events.push_back(
            testutil::makeEvent(time += 1000, EventKind::Alloc, address += 0x1000000, size)
                .stack(layer));
        return address;
    };
    auto release = [&](uint64_t a, uint64_t size) {
        t.events.push_back(
            testutil::makeEvent(time += 1000, EventKind::FreeCompleted, a, size).stack(layer));
    };
    for (int k = 0; k < 10; ++k) {
        const uint64_t activation = alloc(8 * MiB);
        for (uint64_t w = 1; w <= 10; ++w) {  // the layer's workspaces
            const uint64_t temporary = alloc(w * MiB / 4);
            release(temporary, w * MiB / 4);
        }
        if (one_pass) continue;  // kept for a backward the trace never reaches
        alloc(MiB);              // an inference loop that keeps each output
        release(activation, 8 * MiB);
    }
    return t;
}

TEST(LeakFinder, OnePassesLayersFoundAsStepsAreNotALeak) {
    auto layers = openTrace(repeatedLayers(true), "one pass");
    ASSERT_TRUE(layers.ok()) << layers.message();
    ASSERT_EQ(stepSource(*layers->trace), StepSource::Inferred);
    const LeakReport r =
        findLeaks(*layers->trace, *layers->timeline, ModuleAttribution(*layers->trace));
    ASSERT_EQ(r.devices.size(), 1u);
    EXPECT_FALSE(r.devices[0].grows);
    EXPECT_NE(r.devices[0].note.find("look like the layers of one pass"), std::string::npos)
        << r.devices[0].note;

    auto loop = openTrace(repeatedLayers(false), "loop");
    ASSERT_TRUE(loop.ok()) << loop.message();
    const LeakReport l = findLeaks(*loop->trace, *loop->timeline, ModuleAttribution(*loop->trace));
    ASSERT_EQ(l.devices.size(), 1u);
    EXPECT_TRUE(l.devices[0].grows) << l.devices[0].note;
    EXPECT_NEAR(l.devices[0].growth_bytes_per_step, double(MiB), 0.1 * double(MiB));
}

}  // namespace
}  // namespace memscope
