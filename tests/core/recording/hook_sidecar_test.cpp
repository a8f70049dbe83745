// parseHookSidecar / readHookSidecar: hook.json as the Python hook writes it
// (profiler/pyhook), and the ways a damaged or foreign file is refused.
#include "memscope/recording/hook_sidecar.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "../scratch_dir_test.h"

namespace memscope {
namespace {

namespace fs = std::filesystem;

// A hook.json as session.py's document() and json.dumps(indent=1) write it,
// with "clock" and "max_entries", which memscope does not read.
const char* const kValid = R"({
 "format": "memscope-hook",
 "version": 1,
 "pid": 4242,
 "rank": 3,
 "local_rank": 1,
 "python": "3.11.2",
 "torch": "2.3.1+cu121",
 "argv": [
  "/work/train.py",
  "--lr",
  "0.1"
 ],
 "orig_argv": [
  "/usr/bin/python3",
  "-u",
  "/work/train.py",
  "--lr",
  "0.1"
 ],
 "cwd": "/work/runs",
 "clock": "CLOCK_REALTIME ns",
 "started_ns": 1733000000000000000,
 "ended_ns": 1733000009000000000,
 "complete": true,
 "exit": "atexit",
 "hooks": {
  "forward": "module forward pre/post hooks",
  "optimizer": "unavailable: no optimizer seen"
 },
 "phases": [
  {"kind": "step", "step": 0, "start_ns": 1733000001000000000, "end_ns": 1733000002000000000},
  {"kind": "forward", "step": 0, "start_ns": 1733000001000000100, "end_ns": 1733000001500000000},
  {"kind": "backward", "step": 0, "start_ns": 1733000001500000000, "end_ns": 1733000001900000000},
  {"kind": "recompute", "step": 0, "start_ns": 1733000001600000000, "end_ns": 1733000001600000000},
  {"kind": "optimizer", "step": 0, "start_ns": 1733000001900000000, "end_ns": 1733000001950000000},
  {"kind": "zero_grad", "step": 1, "start_ns": 1733000001950000000, "end_ns": 1733000001960000000}
 ],
 "histories": [
  {"file": "history-0001.pickle", "cleared_before": false},
  {"file": "history-0002.pickle", "cleared_before": true}
 ],
 "history": {"enabled": true, "api": "2.1+", "max_entries": 100000, "reason": "recording"},
 "cpu_events": {"file": "cpu-events.bin"},
 "profiler": [{"time_ns": 1733000003000000000, "what": "torch.profiler.profile started"}],
 "warnings": ["the optimizer was never seen"]
})";

// Replaces the first `from` in json by `to` (`from` must be there).
void replaceOnce(std::string& json, const std::string& from, const std::string& to) {
    const size_t at = json.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) json.replace(at, from.size(), to);
}

// The valid document with `from` replaced by `to`.
std::string edited(const std::string& from, const std::string& to) {
    std::string json = kValid;
    replaceOnce(json, from, to);
    return json;
}

testing::AssertionResult failsWith(const Result<HookSidecar>& r, const std::string& part) {
    if (r.ok()) return testing::AssertionFailure() << "parsed, expected an error with: " << part;
    if (r.message().find(part) == std::string::npos)
        return testing::AssertionFailure()
               << "message '" << r.message() << "' lacks '" << part << "'";
    return testing::AssertionSuccess();
}

TEST(HookSidecar, ReadsEveryFieldThePythonHookWrites) {
    auto r = parseHookSidecar(kValid, "hook.json");
    ASSERT_TRUE(r.ok()) << r.message();
    const HookSidecar& s = *r;
    EXPECT_EQ(s.pid, 4242);
    EXPECT_EQ(s.rank, 3);
    EXPECT_EQ(s.local_rank, 1);
    EXPECT_EQ(s.python, "3.11.2");
    EXPECT_EQ(s.torch, "2.3.1+cu121");
    EXPECT_EQ(s.argv, (std::vector<std::string>{"/work/train.py", "--lr", "0.1"}));
    EXPECT_EQ(s.orig_argv, (std::vector<std::string>{"/usr/bin/python3", "-u", "/work/train.py",
                                                     "--lr", "0.1"}));
    EXPECT_EQ(s.cwd, "/work/runs");
    EXPECT_EQ(s.started_ns, 1733000000000000000);
    EXPECT_EQ(s.ended_ns, 1733000009000000000);
    EXPECT_TRUE(s.complete);
    EXPECT_EQ(s.exit, "atexit");
    ASSERT_EQ(s.hooks.size(), 2u);
    EXPECT_EQ(s.hooks[0],
              (std::pair<std::string, std::string>{"forward", "module forward pre/post hooks"}));
    EXPECT_EQ(s.hooks[1].first, "optimizer");
    EXPECT_EQ(s.hooks[1].second, "unavailable: no optimizer seen");

    ASSERT_EQ(s.phases.size(), 6u);
    const HookPhaseKind kinds[] = {HookPhaseKind::Step,      HookPhaseKind::Forward,
                                   HookPhaseKind::Backward,  HookPhaseKind::Recompute,
                                   HookPhaseKind::Optimizer, HookPhaseKind::ZeroGrad};
    for (size_t i = 0; i < 6; ++i) EXPECT_EQ(s.phases[i].kind, kinds[i]) << i;
    EXPECT_EQ(s.phases[0].step, 0);
    EXPECT_EQ(s.phases[0].start_ns, 1733000001000000000);
    EXPECT_EQ(s.phases[0].end_ns, 1733000002000000000);
    EXPECT_EQ(s.phases[3].start_ns, s.phases[3].end_ns);  // an empty phase is kept
    EXPECT_EQ(s.phases[5].step, 1);

    ASSERT_EQ(s.histories.size(), 2u);
    EXPECT_EQ(s.histories[0].file, "history-0001.pickle");
    EXPECT_FALSE(s.histories[0].cleared_before);
    EXPECT_EQ(s.histories[1].file, "history-0002.pickle");
    EXPECT_TRUE(s.histories[1].cleared_before);
    EXPECT_TRUE(s.history_enabled);
    EXPECT_EQ(s.history_api, "2.1+");
    EXPECT_EQ(s.history_reason, "recording");
    ASSERT_TRUE(s.cpu_events_file.has_value());
    EXPECT_EQ(*s.cpu_events_file, "cpu-events.bin");
    ASSERT_EQ(s.profiler_sessions.size(), 1u);
    EXPECT_EQ(s.profiler_sessions[0].time_ns, 1733000003000000000);
    EXPECT_EQ(s.profiler_sessions[0].what, "torch.profiler.profile started");
    EXPECT_EQ(s.warnings, std::vector<std::string>{"the optimizer was never seen"});
    EXPECT_TRUE(s.recordedAnything());
}

TEST(HookSidecar, PhaseKindNamesAreTheOnesTheHookWrites) {
    EXPECT_EQ(toString(HookPhaseKind::Step), "step");
    EXPECT_EQ(toString(HookPhaseKind::Forward), "forward");
    EXPECT_EQ(toString(HookPhaseKind::Backward), "backward");
    EXPECT_EQ(toString(HookPhaseKind::Recompute), "recompute");
    EXPECT_EQ(toString(HookPhaseKind::Optimizer), "optimizer");
    EXPECT_EQ(toString(HookPhaseKind::ZeroGrad), "zero_grad");
}

TEST(HookSidecar, AProcessThatRecordedNothingSaysSo) {
    // What a running process writes before anything happened: nulls where
    // the hook has nothing (no capture library, no history API).
    const char* json = R"({"format": "memscope-hook", "version": 1, "pid": 7, "rank": -1,
        "local_rank": -1, "complete": false, "exit": "running", "hooks": {}, "phases": [],
        "histories": [], "history": {"enabled": false, "api": null, "max_entries": 0,
        "reason": "torch too old"}, "cpu_events": null, "profiler": [], "warnings": []})";
    auto r = parseHookSidecar(json, "hook.json");
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(r->pid, 7);
    EXPECT_EQ(r->rank, -1);
    EXPECT_FALSE(r->complete);
    EXPECT_EQ(r->exit, "running");
    EXPECT_FALSE(r->history_enabled);
    EXPECT_EQ(r->history_api, "");
    EXPECT_EQ(r->history_reason, "torch too old");
    EXPECT_FALSE(r->cpu_events_file.has_value());
    EXPECT_TRUE(r->warnings.empty());
    EXPECT_FALSE(r->recordedAnything());

    // Any one part is enough to count as recorded.
    auto cpu_only = parseHookSidecar(R"({"format": "memscope-hook", "version": 1,
        "cpu_events": {"file": "cpu-events.bin"}})",
                                     "hook.json");
    ASSERT_TRUE(cpu_only.ok()) << cpu_only.message();
    EXPECT_TRUE(cpu_only->recordedAnything());
    EXPECT_EQ(cpu_only->pid, -1);  // absent fields keep their defaults
    EXPECT_EQ(cpu_only->local_rank, -1);
}

TEST(HookSidecar, TruncatedJsonIsAnErrorNamingThePathAndTheByte) {
    const std::string valid = kValid;
    for (size_t cut : {size_t(0), size_t(1), valid.size() / 2, valid.size() - 1}) {
        SCOPED_TRACE(cut);
        auto r = parseHookSidecar(std::string_view(valid).substr(0, cut), "/run/x/hook.json");
        EXPECT_TRUE(failsWith(r, "/run/x/hook.json: not valid JSON at byte "));
    }
    auto garbage = parseHookSidecar("{\"format\": \"memscope-hook\", \"version\": 1,, }", "h");
    EXPECT_TRUE(
        failsWith(garbage, "h: not valid JSON at byte 41 (Missing a name for object member.)"));
}

TEST(HookSidecar, AnythingButAMemscopeHookObjectIsRefused) {
    const std::string not_ours = "not a memscope hook file (no \"format\": \"memscope-hook\")";
    EXPECT_TRUE(failsWith(parseHookSidecar("[]", "a.json"), "a.json: " + not_ours));
    EXPECT_TRUE(failsWith(parseHookSidecar("\"memscope-hook\"", "a.json"), not_ours));
    EXPECT_TRUE(failsWith(parseHookSidecar("{}", "a.json"), not_ours));
    EXPECT_TRUE(failsWith(parseHookSidecar(R"({"format": "chrome-trace", "version": 1})", "a.json"),
                          not_ours));
    EXPECT_TRUE(failsWith(
        parseHookSidecar(edited("\"format\": \"memscope-hook\"", "\"format\": 1"), "a.json"),
        not_ours));
}

TEST(HookSidecar, OtherVersionsAreRefusedNamingTheVersion) {
    EXPECT_TRUE(failsWith(
        parseHookSidecar(edited("\"version\": 1", "\"version\": 3"), "v.json"),
        "v.json: hook file version 3 is not supported (this memscope reads versions 1 and 2)"));
    EXPECT_TRUE(failsWith(parseHookSidecar(R"({"format": "memscope-hook"})", "v.json"),
                          "hook file version 0 is not supported"));
    // A version that is not an integer is no version this memscope reads.
    EXPECT_TRUE(
        failsWith(parseHookSidecar(edited("\"version\": 1", "\"version\": \"1\""), "v.json"),
                  "is not supported"));
    EXPECT_TRUE(failsWith(parseHookSidecar(edited("\"version\": 1", "\"version\": 1.5"), "v.json"),
                          "is not supported"));
}

TEST(HookSidecar, MalformedPhasesAreLeftOutWithAWarning) {
    const std::string phases = R"("phases": [
  {"kind": "step", "step": 0, "start_ns": 100, "end_ns": 200},
  {"kind": "nap", "step": 0, "start_ns": 100, "end_ns": 200},
  {"kind": "forward", "step": 0, "start_ns": "100", "end_ns": 200},
  {"kind": "backward", "step": 0, "start_ns": 300, "end_ns": 250},
  {"kind": 3, "step": 0, "start_ns": 100, "end_ns": 200},
  {"kind": "forward", "step": 0, "start_ns": -5, "end_ns": 200},
  "step",
  {"kind": "optimizer", "start_ns": 400, "end_ns": 500}
 ],)";
    const std::string json = kValid;
    const size_t from = json.find("\"phases\": [");
    const size_t to = json.find("\"histories\"");
    ASSERT_NE(from, std::string::npos);
    ASSERT_NE(to, std::string::npos);
    const std::string doc = json.substr(0, from) + phases + "\n " + json.substr(to);
    auto r = parseHookSidecar(doc, "hook.json");
    ASSERT_TRUE(r.ok()) << r.message();
    ASSERT_EQ(r->phases.size(), 2u);
    EXPECT_EQ(r->phases[0].kind, HookPhaseKind::Step);
    EXPECT_EQ(r->phases[0].start_ns, 100);
    EXPECT_EQ(r->phases[1].kind, HookPhaseKind::Optimizer);
    EXPECT_EQ(r->phases[1].step, -1);  // no step: not tied to one
    ASSERT_EQ(r->warnings.size(), 2u);
    EXPECT_EQ(r->warnings[0], "6 phases in the hook file were malformed and left out");
    EXPECT_EQ(r->warnings[1], "the optimizer was never seen");
}

// The "argv" and "orig_argv" lists of kValid, as one piece to replace.
std::string commandLineOf(const std::string& json) {
    const size_t from = json.find(" \"argv\": [");
    const size_t to = json.find(" \"clock\"");
    EXPECT_NE(from, std::string::npos);
    EXPECT_NE(to, std::string::npos);
    return json.substr(from, to - from);
}

TEST(HookSidecar, CommandLineMissingIsEmpty) {
    // An older hook wrote no command line: no name from it, and no complaint.
    auto r = parseHookSidecar(edited(commandLineOf(kValid), ""), "hook.json");
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_TRUE(r->argv.empty());
    EXPECT_TRUE(r->orig_argv.empty());
    EXPECT_EQ(r->warnings, std::vector<std::string>{"the optimizer was never seen"});
    // One without the other, and empty lists.
    auto only = parseHookSidecar(edited(commandLineOf(kValid), " \"argv\": [\"-c\"],\n"), "h");
    ASSERT_TRUE(only.ok()) << only.message();
    EXPECT_EQ(only->argv, std::vector<std::string>{"-c"});
    EXPECT_TRUE(only->orig_argv.empty());
    auto empty = parseHookSidecar(
        edited(commandLineOf(kValid), " \"argv\": [], \"orig_argv\": [\"\"],\n"), "h");
    ASSERT_TRUE(empty.ok()) << empty.message();
    EXPECT_TRUE(empty->argv.empty());
    EXPECT_EQ(empty->orig_argv, std::vector<std::string>{""});
}

TEST(HookSidecar, MistypedCommandLineIsNamedInAWarningAndLeftOut) {
    // The rest of the file still reads (a name is not worth the recording),
    // and the warning says which field is wrong and how.
    const struct {
        const char* lists;
        const char* message;
    } cases[] = {
        {R"( "argv": "train.py", "orig_argv": ["python3", "train.py"],)",
         "/r/hook.json: \"argv\" is not a list of strings; the run is not named after its "
         "command"},
        {R"( "argv": ["train.py", 3], "orig_argv": ["python3", "train.py"],)",
         "/r/hook.json: \"argv\" is not a list of strings (item 1 is not a string); the run is "
         "not named after its command"},
        {R"( "argv": ["train.py"], "orig_argv": {"0": "python3"},)",
         "/r/hook.json: \"orig_argv\" is not a list of strings"},
        {R"( "argv": ["train.py"], "orig_argv": [null],)",
         "/r/hook.json: \"orig_argv\" is not a list of strings (item 0 is not a string)"},
        {R"( "argv": ["train.py"], "orig_argv": [["python3"]],)", "(item 0 is not a string)"},
    };
    for (const auto& c : cases) {
        auto r = parseHookSidecar(edited(commandLineOf(kValid), std::string(c.lists) + "\n"),
                                  "/r/hook.json");
        ASSERT_TRUE(r.ok()) << r.message();
        EXPECT_TRUE(r->argv.empty()) << c.lists;
        EXPECT_TRUE(r->orig_argv.empty()) << c.lists;
        EXPECT_EQ(r->phases.size(), 6u);
        ASSERT_EQ(r->warnings.size(), 2u) << c.lists;
        EXPECT_NE(r->warnings[0].find(c.message), std::string::npos)
            << r->warnings[0] << "\n lacks: " << c.message;
    }
}

TEST(HookSidecar, MistypedOptionalFieldsFallBackToTheirDefaults) {
    // Unknown or mistyped fields are not errors: a newer hook may change them.
    std::string json = edited("\"pid\": 4242", "\"pid\": \"4242\"");
    replaceOnce(json, "\"complete\": true", "\"complete\": \"yes\"");
    replaceOnce(json, "\"python\": \"3.11.2\"", "\"python\": 3.11");
    replaceOnce(json, "\"histories\": [", "\"old_histories\": [");
    replaceOnce(json, "\"cpu_events\": {\"file\": \"cpu-events.bin\"}",
                "\"cpu_events\": \"cpu-events.bin\"");
    replaceOnce(json, "\"warnings\": [\"the optimizer was never seen\"]",
                "\"warnings\": [1, \"kept\", null]");
    auto r = parseHookSidecar(json, "hook.json");
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(r->pid, -1);
    EXPECT_FALSE(r->complete);
    EXPECT_EQ(r->python, "");
    EXPECT_TRUE(r->histories.empty());
    EXPECT_FALSE(r->cpu_events_file.has_value());
    EXPECT_EQ(r->warnings, std::vector<std::string>{"kept"});
    EXPECT_EQ(r->phases.size(), 6u);  // the rest is read as usual
    EXPECT_EQ(r->rank, 3);
}

TEST(HookSidecar, FileNamesThatLeaveTheHookFolderAreRefused) {
    for (const char* bad :
         {"../history-0001.pickle", "/tmp/history-0001.pickle", "..", ".", "sub/history.pickle"}) {
        SCOPED_TRACE(bad);
        auto r = parseHookSidecar(
            edited("\"file\": \"history-0001.pickle\"", std::string("\"file\": \"") + bad + "\""),
            "p/hook.json");
        EXPECT_TRUE(failsWith(
            r, std::string("p/hook.json: history file name '") + bad + "' is not a plain name"));
    }
    auto cpu = parseHookSidecar(edited("\"file\": \"cpu-events.bin\"", "\"file\": \"../../etc/x\""),
                                "p/hook.json");
    EXPECT_TRUE(
        failsWith(cpu, "p/hook.json: CPU events file name '../../etc/x' is not a plain name"));

    // An empty name is no dump at all, not an error.
    auto empty = parseHookSidecar(edited("\"file\": \"history-0001.pickle\"", "\"file\": \"\""),
                                  "p/hook.json");
    ASSERT_TRUE(empty.ok()) << empty.message();
    ASSERT_EQ(empty->histories.size(), 1u);
    EXPECT_EQ(empty->histories[0].file, "history-0002.pickle");
}

// A folder of its own per test, removed at the end.
class HookSidecarFileTest : public testutil::ScratchDirTest {};

TEST_F(HookSidecarFileTest, ReadsAFile) {
    auto r = readHookSidecar(write("hook.json", kValid));
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(r->pid, 4242);
    EXPECT_EQ(r->phases.size(), 6u);
}

TEST_F(HookSidecarFileTest, AMissingFileIsAnErrorNamingIt) {
    const std::string path = (dir_ / "4242" / "hook.json").string();
    EXPECT_TRUE(failsWith(readHookSidecar(path), path + ": cannot open the hook file"));
}

TEST_F(HookSidecarFileTest, ATruncatedOrEmptyFileIsAnErrorNamingIt) {
    const std::string valid = kValid;
    const std::string cut = write("cut.json", valid.substr(0, valid.size() / 3));
    EXPECT_TRUE(failsWith(readHookSidecar(cut), cut + ": not valid JSON at byte"));
    const std::string empty = write("empty.json", "");
    EXPECT_TRUE(failsWith(readHookSidecar(empty), empty + ": not valid JSON at byte 0"));
    const std::string binary = write("binary.json", std::string("\x80\x00\xff{", 4));
    EXPECT_TRUE(failsWith(readHookSidecar(binary), binary + ": not valid JSON"));
}

TEST_F(HookSidecarFileTest, AFolderIsAnErrorNotACrash) {
    fs::create_directory(dir_ / "hook.json");
    const std::string path = (dir_ / "hook.json").string();
    auto r = readHookSidecar(path);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.message().find(path), std::string::npos) << r.message();
}

}  // namespace
}  // namespace memscope

namespace memscope {
namespace {

// Issue 64, class 5: a rank outside int32 is refused, never narrowed
// (RANK=4294967301 was written as rank 5).
TEST(HookSidecar, ARankOutOfRangeIsRefusedNotNarrowed) {
    for (const char* field : {"rank", "local_rank"})
        for (const char* value : {"4294967301", "2147483648", "-2", "-4294967291"}) {
            const std::string json = std::string(R"({"format": "memscope-hook", "version": 1,
                "pid": 7, ")") + field +
                                     "\": " + value + "}";
            auto r = parseHookSidecar(json, "/run/x/hook.json");
            ASSERT_FALSE(r.ok()) << field << " " << value;
            EXPECT_EQ(r.message(), std::string("/run/x/hook.json: \"") + field + "\" " + value +
                                       " is not a rank (0 to 2147483647)");
        }
    auto edge = parseHookSidecar(R"({"format": "memscope-hook", "version": 1, "pid": 7,
        "rank": 2147483647, "local_rank": 0})",
                                 "hook.json");
    ASSERT_TRUE(edge.ok()) << edge.message();
    EXPECT_EQ(edge->rank, 2147483647);
    EXPECT_EQ(edge->local_rank, 0);
}

}  // namespace
}  // namespace memscope

namespace memscope {
namespace {

TEST(HookSidecar, ReadsWhatBecameOfAnAppliedPolicy) {
    auto r = parseHookSidecar(R"({"format": "memscope-hook", "version": 2,
        "apply": {"policy": "save:matmul@0-3", "applied": true, "refused": null,
                  "save_lists": "memscope-dispatch-cache", "optimizer_in_backward": null,
                  "checkpointed": ["Net:blocks.0", "Net:blocks.1", 7], "sequential": null}})",
                              "hook.json");
    ASSERT_TRUE(r.ok()) << r.message();
    ASSERT_TRUE(r->apply.has_value());
    EXPECT_EQ(r->apply->policy, "save:matmul@0-3");
    EXPECT_TRUE(r->apply->applied);
    EXPECT_EQ(r->apply->refused, "");
    EXPECT_EQ(r->apply->save_lists, "memscope-dispatch-cache");
    EXPECT_EQ(r->apply->checkpointed, (std::vector<std::string>{"Net:blocks.0", "Net:blocks.1"}));
}

TEST(HookSidecar, ARefusedPolicyIsNeverReadAsApplied) {
    auto r = parseHookSidecar(R"({"format": "memscope-hook", "version": 2,
        "apply": {"policy": "layers:9", "applied": true, "refused": "no module h.9"}})",
                              "hook.json");
    ASSERT_TRUE(r.ok()) << r.message();
    ASSERT_TRUE(r->apply.has_value());
    EXPECT_FALSE(r->apply->applied);
    EXPECT_EQ(r->apply->refused, "no module h.9");
    // No "apply" (a run without --apply, or a mistyped one): none.
    auto plain =
        parseHookSidecar(R"({"format": "memscope-hook", "version": 2, "apply": 3})", "hook.json");
    ASSERT_TRUE(plain.ok()) << plain.message();
    EXPECT_FALSE(plain->apply.has_value());
}

}  // namespace
}  // namespace memscope
