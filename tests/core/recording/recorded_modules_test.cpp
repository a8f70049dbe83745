// Module scopes through the recording: the hook log's "module" and
// "module_scopes" records (profiler/pyhook/memscope_hook/modules.py),
// hook.json's open scopes, the merge into Trace::modules and the cut of
// `record --steps`.
#include "memscope/recording/recorded_modules.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "memscope/model/module_attribution.h"
#include "memscope/recording/hook_log.h"
#include "memscope/recording/hook_sidecar.h"
#include "memscope/recording/recorded_range.h"
#include "memscope/recording/recording_merge.h"

namespace memscope {
namespace {

// As the hook writes them: a model "Net" with blocks.0 (and its child) and
// blocks.1; one batch of scopes for a step's forward, then one with block 1's
// recompute.
const char* const kLog = R"(
{"t":"module","id":1,"root":"Net","path":"","class":"Net","seq":1}
{"t":"module","id":2,"root":"Net","path":"blocks.0","class":"Block","seq":2}
{"t":"module","id":3,"root":"Net","path":"blocks.0.fc","class":"Linear","seq":3}
{"t":"module","id":4,"root":"Net","path":"blocks.1","class":"Block","seq":4}
{"t":"module_scopes","base_ns":1000,"s":[10,5,3,0, 0,20,2,0, 20,30,4,0, 0,100,1,0],"seq":5}
{"t":"phase","kind":"forward","step":0,"start_ns":1000,"end_ns":1100,"seq":6}
{"t":"module_scopes","base_ns":1200,"s":[0,50,4,1],"seq":7}
)";

TEST(HookLogModules, ReadsModulesAndScopeBatches) {
    const HookLog log = parseHookLog(kLog);
    EXPECT_EQ(log.damaged_lines, 0u);
    EXPECT_EQ(log.bad_module_scopes, 0u);
    ASSERT_EQ(log.modules.size(), 4u);
    EXPECT_EQ(log.modules[2].id, 3u);
    EXPECT_EQ(log.modules[2].root, "Net");
    EXPECT_EQ(log.modules[2].path, "blocks.0.fc");
    EXPECT_EQ(log.modules[2].type, "Linear");
    ASSERT_EQ(log.module_scopes.size(), 5u);
    EXPECT_EQ(log.module_scopes[0].start_ns, 1010);
    EXPECT_EQ(log.module_scopes[0].end_ns, 1015);
    EXPECT_EQ(log.module_scopes[0].module, 3u);
    EXPECT_EQ(log.module_scopes[4].kind, ModuleScopeKind::Recompute);
    EXPECT_EQ(log.module_scopes[4].start_ns, 1200);
    EXPECT_EQ(log.module_scopes[4].end_ns, 1250);
    EXPECT_EQ(log.phases.size(), 1u);  // the phases are read as before
}

TEST(HookLogModules, MalformedScopesAreCountedAndSkipped) {
    const HookLog log = parseHookLog(
        // kind 9, module 0, a negative duration, a string, an overflowing
        // start, then one good scope and a group cut short (2 numbers).
        R"({"t":"module_scopes","base_ns":100,"s":[0,1,1,9, 0,1,0,0, 5,-3,1,0, "x",1,1,0, )"
        R"(9223372036854775800,1,1,0, 0,7,1,2, 1,2],"seq":1})"
        "\n"
        // Not a batch at all: no base, "s" not a list, a negative base.
        R"({"t":"module_scopes","s":[0,1,1,0],"seq":2})"
        "\n"
        R"({"t":"module_scopes","base_ns":1,"s":{},"seq":3})"
        "\n"
        R"({"t":"module_scopes","base_ns":-5,"s":[0,1,1,0],"seq":4})"
        "\n"
        // Modules without a usable id.
        R"({"t":"module","id":0,"path":"a"})"
        "\n"
        R"({"t":"module","path":"b"})"
        "\n");
    ASSERT_EQ(log.module_scopes.size(), 1u);
    EXPECT_EQ(log.module_scopes[0].kind, ModuleScopeKind::Backward);
    EXPECT_EQ(log.module_scopes[0].end_ns, 107);
    EXPECT_EQ(log.bad_module_scopes, 6u);
    EXPECT_EQ(log.damaged_lines, 5u);
    EXPECT_TRUE(log.modules.empty());
}

TEST(HookLogModules, ARecordWrittenTwiceIsReadOnce) {
    // A signal handler's flush can write lines the main thread writes again:
    // the same batch (seq) and the same module (id) count once; the first
    // record of an id wins.
    const HookLog log =
        parseHookLog(R"({"t":"module","id":1,"root":"Net","path":"","class":"Net","seq":1})"
                     "\n"
                     R"({"t":"module","id":1,"root":"Other","path":"x","class":"X","seq":1})"
                     "\n"
                     R"({"t":"module_scopes","base_ns":10,"s":[0,5,1,0],"seq":2})"
                     "\n"
                     R"({"t":"module_scopes","base_ns":10,"s":[0,5,1,0],"seq":2})"
                     "\n");
    ASSERT_EQ(log.modules.size(), 1u);
    EXPECT_EQ(log.modules[0].root, "Net");
    EXPECT_EQ(log.module_scopes.size(), 1u);
}

TEST(HookLogModules, ALastLineCutShortLosesOnlyItsScopes) {
    std::string text = kLog;
    text += R"({"t":"module_scopes","base_ns":1300,"s":[0,5,)";  // killed mid-write
    const HookLog log = parseHookLog(text);
    EXPECT_TRUE(log.cut_short);
    EXPECT_EQ(log.module_scopes.size(), 5u);
}

TEST(RecordedModules, ModulesAreInternedAndScopesSortedOuterFirst) {
    const HookLog log = parseHookLog(kLog);
    Trace trace;
    const RecordedModulesStats stats = addRecordedModules(trace, log.modules, log.module_scopes);
    EXPECT_EQ(trace.modules.source, ModuleSource::Recorded);
    // "blocks" is made as the parent of blocks.0 and blocks.1.
    EXPECT_EQ(stats.modules, 5u);
    EXPECT_EQ(stats.scopes, 5u);
    EXPECT_EQ(stats.unknown_module, 0u);
    ASSERT_EQ(trace.modules.scopes.size(), 5u);
    EXPECT_EQ(modulePath(trace, trace.modules.scopes[0].module), "Net");  // [1000, 1100)
    EXPECT_EQ(modulePath(trace, trace.modules.scopes[1].module), "blocks.0");
    EXPECT_EQ(modulePath(trace, trace.modules.scopes[2].module), "blocks.0.fc");
    EXPECT_EQ(modulePath(trace, trace.modules.scopes[3].module), "blocks.1");
    EXPECT_EQ(trace.modules.scopes[4].kind, ModuleScopeKind::Recompute);
    const ModuleId fc = trace.modules.scopes[2].module;
    EXPECT_EQ(trace.string(trace.modules.module(fc)->type), "Linear");
    EXPECT_EQ(modulePath(trace, trace.modules.module(fc)->parent), "blocks.0");

    // The innermost scope at each time, by the one shared rule.
    const ModuleAttribution attribution(trace);
    EXPECT_EQ(modulePath(trace, attribution.at(1012)->module), "blocks.0.fc");
    EXPECT_EQ(modulePath(trace, attribution.at(1016)->module), "blocks.0");
    EXPECT_EQ(modulePath(trace, attribution.at(1030)->module), "blocks.1");
    EXPECT_EQ(modulePath(trace, attribution.at(1060)->module), "Net");
    EXPECT_EQ(attribution.at(1210)->kind, ModuleScopeKind::Recompute);
    EXPECT_FALSE(attribution.at(1100).has_value());
}

TEST(RecordedModules, TheSameModuleTwiceInOneStepIsTwoScopesOfOneModule) {
    Trace trace;
    addRecordedModules(trace, {{1, "Net", "", "Net"}, {2, "Net", "shared", "Linear"}},
                       {{0, 100, 1, ModuleScopeKind::Forward},
                        {10, 20, 2, ModuleScopeKind::Forward},
                        {30, 40, 2, ModuleScopeKind::Forward},
                        {10, 20, 2, ModuleScopeKind::Forward}});  // an exact duplicate
    EXPECT_EQ(trace.modules.modules.size(), 2u);
    ASSERT_EQ(trace.modules.scopes.size(), 3u);
    EXPECT_EQ(trace.modules.scopes[1].module, trace.modules.scopes[2].module);
}

TEST(RecordedModules, SeveralRootsKeepTheirLabels) {
    Trace trace;
    addRecordedModules(
        trace,
        {{1, "Generator", "", "Generator"},
         {2, "Generator", "main.0", "Linear"},
         {3, "Discriminator", "", "Discriminator"},
         {4, "Discriminator", "main.0", "Linear"}},
        {{0, 10, 2, ModuleScopeKind::Forward}, {20, 30, 4, ModuleScopeKind::Forward}});
    EXPECT_TRUE(hasSeveralRoots(trace));
    EXPECT_EQ(modulePath(trace, trace.modules.scopes[0].module), "Generator/main.0");
    EXPECT_EQ(modulePath(trace, trace.modules.scopes[1].module), "Discriminator/main.0");
}

TEST(RecordedModules, ScopesOfUnknownModulesAreLeftOutAndCounted) {
    Trace trace;
    const auto stats = addRecordedModules(
        trace, {{1, "Net", "", "Net"}},
        {{0, 10, 1, ModuleScopeKind::Forward}, {0, 10, 7, ModuleScopeKind::Forward}});
    EXPECT_EQ(stats.unknown_module, 1u);
    EXPECT_EQ(trace.modules.scopes.size(), 1u);

    Trace none;
    const auto nothing = addRecordedModules(none, {}, {{0, 10, 1, ModuleScopeKind::Forward}});
    EXPECT_EQ(nothing.unknown_module, 1u);
    EXPECT_EQ(none.modules.source, ModuleSource::None);
}

TEST(RecordedModules, AHostilePathIsBounded) {
    Trace trace;
    const std::string huge(1 << 20, 'x');
    addRecordedModules(trace, {{1, "Net", huge, "X"}}, {{0, 10, 1, ModuleScopeKind::Forward}});
    const Module* m = trace.modules.module(trace.modules.scopes[0].module);
    ASSERT_NE(m, nullptr);
    EXPECT_LE(trace.string(m->path).size(), kMaxModulePathBytes);
}

TEST(HookSidecarModules, ReadsHowModulesWereRecordedAndTheOpenScopes) {
    auto hook = parseHookSidecar(R"({"format": "memscope-hook", "version": 2, "pid": 7,
        "log": "log.jsonl", "modules": {"depth": 4, "compile": "seen: may be missing",
        "dropped_modules": 3, "dropped_roots": 0},
        "open_module_scopes": [[100, 200, 1, 0], [150, 180, 2, 1], [5, 1, 1, 0], [1, 2, 3],
                               "x", [1, 2, 0, 0]]})",
                                 "hook.json");
    ASSERT_TRUE(hook) << hook.message();
    EXPECT_EQ(hook->module_info.depth, 4);
    EXPECT_EQ(hook->module_info.compile, "seen: may be missing");
    EXPECT_EQ(hook->module_info.dropped_modules, 3u);
    ASSERT_EQ(hook->open_module_scopes.size(), 2u);
    EXPECT_EQ(hook->open_module_scopes[1].kind, ModuleScopeKind::Recompute);
    ASSERT_EQ(hook->warnings.size(), 1u);
    EXPECT_NE(hook->warnings[0].find("4 open module scopes"), std::string::npos);

    // An older hook says nothing about modules.
    auto old =
        parseHookSidecar(R"({"format": "memscope-hook", "version": 2, "pid": 7})", "hook.json");
    ASSERT_TRUE(old);
    EXPECT_EQ(old->module_info.depth, -1);
    EXPECT_TRUE(old->open_module_scopes.empty());
}

HookSidecar hookWithModules() {
    HookSidecar hook;
    hook.pid = 42;
    hook.complete = true;
    hook.exit = "atexit";
    hook.phases = {{HookPhaseKind::Step, 0, 1000, 2000}, {HookPhaseKind::Forward, 0, 1000, 1400}};
    hook.modules = {{1, "Net", "", "Net"}, {2, "Net", "blocks.0", "Block"}};
    hook.module_scopes = {{1000, 1400, 1, ModuleScopeKind::Forward},
                          {1100, 1300, 2, ModuleScopeKind::Forward}};
    // Killed mid-forward of step 1: hook.json's final write closes it.
    hook.open_module_scopes = {{2100, 2200, 2, ModuleScopeKind::Forward}};
    hook.module_info.depth = 6;
    return hook;
}

TEST(RecordedModules, TheMergePutsThemInTheTraceOnThePhasesClock) {
    RecordingParts parts;
    HookSidecar hook = hookWithModules();
    hook.module_info.compile = "seen: scopes may be missing";
    parts.hook = hook;
    parts.cpu = {{1150, 0x1000, 64}, {1900, 0x1000, -64}};
    auto merged = mergeRecording(std::move(parts));
    ASSERT_TRUE(merged) << merged.message();
    EXPECT_EQ(merged->modules.source, ModuleSource::Recorded);
    ASSERT_EQ(merged->modules.scopes.size(), 3u);
    EXPECT_EQ(merged->modules.scopes[2].start, 2100);
    const ModuleAttribution attribution(*merged);
    EXPECT_EQ(modulePath(*merged, attribution.at(merged->events[0].time)->module), "blocks.0");
    ASSERT_NE(merged->metadata.property("modules"), nullptr);
    EXPECT_NE(merged->metadata.property("modules")->find("6 levels"), std::string::npos);
    ASSERT_NE(merged->metadata.property("modules.compile"), nullptr);
}

TEST(RecordedModules, ModuleDepthZeroSaysSo) {
    RecordingParts parts;
    HookSidecar hook;
    hook.pid = 1;
    hook.phases = {{HookPhaseKind::Step, 0, 1000, 2000}};
    hook.module_info.depth = 0;
    parts.hook = hook;
    auto merged = mergeRecording(std::move(parts));
    ASSERT_TRUE(merged);
    EXPECT_TRUE(merged->modules.empty());
    ASSERT_NE(merged->metadata.property("modules"), nullptr);
    EXPECT_NE(merged->metadata.property("modules")->find("--module-depth 0"), std::string::npos);
}

TEST(RecordedModules, ARecordedRangeKeepsTheScopesInsideClipped) {
    Trace trace;
    Phase step;
    step.kind = PhaseKind::Step;
    step.name = trace.internString("step 1");
    step.step = 1;
    step.start = 1000;
    step.end = 2000;
    trace.addPhase(step);
    Event e;
    e.kind = EventKind::Alloc;
    e.device = -1;
    e.size = 8;
    for (int64_t t : {500, 1500, 2000, 2500}) {
        e.time = t;
        e.address = uint64_t(t);
        trace.events.push_back(e);
    }
    addRecordedModules(trace, {{1, "Net", "", "Net"}, {2, "Net", "a", "A"}},
                       {{100, 900, 1, ModuleScopeKind::Forward},      // before: dropped
                        {800, 1000, 2, ModuleScopeKind::Forward},     // touches the start: dropped
                        {900, 1200, 2, ModuleScopeKind::Forward},     // crosses the start
                        {1300, 1400, 1, ModuleScopeKind::Forward},    // inside
                        {1900, 2600, 2, ModuleScopeKind::Recompute},  // crosses the end
                        {2100, 2300, 1, ModuleScopeKind::Forward}});  // after: dropped
    RecordedRangeSpec spec;
    spec.steps = std::pair{1, 1};
    auto cut = applyRecordedRange(trace, spec);
    ASSERT_TRUE(cut) << cut.message();
    const auto& s = trace.modules.scopes;
    ASSERT_EQ(s.size(), 3u);
    EXPECT_EQ(s[0].start, 1000);
    EXPECT_EQ(s[0].end, 1200);
    EXPECT_EQ(s[1].start, 1300);
    EXPECT_EQ(s[1].end, 1400);
    EXPECT_EQ(s[2].start, 1900);
    EXPECT_EQ(s[2].kind, ModuleScopeKind::Recompute);
    // The event at the range's end stays, and in its scope.
    const ModuleAttribution attribution(trace);
    ASSERT_TRUE(attribution.at(2000).has_value());
    EXPECT_EQ(modulePath(trace, attribution.at(2000)->module), "a");
    EXPECT_EQ(trace.modules.modules.size(), 2u);  // the modules all stay
}

}  // namespace
}  // namespace memscope
