// Op scopes through the recording: the hook log's "op" and "op_scopes"
// records (profiler/pyhook/memscope_hook/ops.py, --ops dispatch), the capture
// log's ops (--ops auto), the merge into Trace::ops and the attribution of
// the allocations, and the native round trip of the merged trace.
#include "memscope/recording/recorded_ops.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "memscope/format/native_format.h"
#include "memscope/model/op_attribution.h"
#include "memscope/recording/hook_log.h"
#include "memscope/recording/recording_merge.h"

namespace memscope {
namespace {

std::string warningAbout(const std::vector<LoadWarning>& warnings, std::string_view text) {
    for (const LoadWarning& w : warnings)
        if (w.message.find(text) != std::string::npos) return w.message;
    return {};
}

// As the hook writes them: two names, then a batch (addmm with an empty
// nested in it, then a softmax), written twice by a signal handler's flush.
const char* const kLog = R"(
{"t":"op","id":1,"name":"aten::addmm","seq":1}
{"t":"op","id":2,"name":"aten::empty","seq":2}
{"t":"op","id":3,"name":"aten::_softmax","seq":3}
{"t":"op_scopes","base_ns":1000,"s":[0,100,1,0, 10,5,2,1, 200,50,3,0],"seq":4}
{"t":"op_scopes","base_ns":1000,"s":[0,100,1,0, 10,5,2,1, 200,50,3,0],"seq":4}
)";

TEST(HookLogOps, ReadsNamesAndScopeBatchesOnce) {
    const HookLog log = parseHookLog(kLog);
    EXPECT_EQ(log.damaged_lines, 0u);
    EXPECT_EQ(log.ops.bad, 0u);
    ASSERT_EQ(log.ops.names.size(), 3u);
    EXPECT_EQ(log.ops.names.at(3), "aten::_softmax");
    ASSERT_EQ(log.ops.scopes.size(), 3u);
    EXPECT_EQ(log.ops.scopes[1].start, 1010);
    EXPECT_EQ(log.ops.scopes[1].end, 1015);
    EXPECT_EQ(log.ops.scopes[1].depth, 1);
    EXPECT_EQ(log.ops.scopes[2].name, 3u);
}

TEST(HookLogOps, MalformedOpRecordsAreCountedAndSkipped) {
    const HookLog log = parseHookLog(
        // id 0, a negative duration, a negative depth, a string, an
        // overflowing start, then one good scope (depth clamped) and a group
        // cut short.
        R"({"t":"op_scopes","base_ns":100,"s":[0,1,0,0, 5,-3,1,0, 0,1,1,-2, "x",1,1,0, )"
        R"(9223372036854775800,1,1,0, 0,7,1,5000, 1,2],"seq":1})"
        "\n"
        R"({"t":"op_scopes","s":[0,1,1,0],"seq":2})"
        "\n"
        R"({"t":"op","id":0,"name":"aten::mm"})"
        "\n"
        R"({"t":"op","id":4})"
        "\n");
    ASSERT_EQ(log.ops.scopes.size(), 1u);
    EXPECT_EQ(log.ops.scopes[0].end, 107);
    EXPECT_EQ(log.ops.scopes[0].depth, kMaxOpDepth);
    EXPECT_EQ(log.ops.bad, 6u);
    EXPECT_EQ(log.damaged_lines, 3u);
    EXPECT_TRUE(log.ops.names.empty());
}

TEST(RecordedOps, TheMergeAttributesAllocationsToTheOpsThatMadeThem) {
    RecordingParts parts;
    HookSidecar hook;
    hook.pid = 7;
    hook.phases = {{HookPhaseKind::Step, 0, 900, 2000}};
    hook.ops = parseHookLog(kLog).ops;
    hook.ops.scopes.push_back({1500, 1600, 99, 0});  // names no op: left out
    parts.hook = hook;
    // The addmm's output (made inside its aten::empty), the softmax's, one
    // outside every op.
    parts.cpu = {{1012, 0x1000, 4096}, {1220, 0x2000, 4096}, {1800, 0x3000, 8}};
    std::vector<LoadWarning> warnings;
    auto merged = mergeRecording(std::move(parts), TaskContext{{}, nullptr, &warnings});
    ASSERT_TRUE(merged) << merged.message();
    EXPECT_EQ(merged->ops.source, OpSource::Recorded);
    ASSERT_EQ(merged->ops.scopes.size(), 3u);
    EXPECT_NE(warningAbout(warnings, "1 op scopes"), "");
    ASSERT_NE(merged->metadata.property("ops"), nullptr);
    EXPECT_NE(merged->metadata.property("ops")->find("TorchDispatchMode"), std::string::npos);

    const OpAttribution ops(*merged);
    std::vector<std::string> made;
    for (uint64_t i = 0; i < merged->events.size(); ++i) {
        const auto hit = ops.ofEvent(i, merged->events[i].time);
        made.push_back(hit ? std::string(merged->string(hit->name)) : "");
    }
    EXPECT_EQ(made, (std::vector<std::string>{"aten::addmm", "aten::_softmax", ""}));

    // Written and read back, the ops stay recorded ones.
    const std::string path =
        (std::filesystem::temp_directory_path() / ("memscope-ops-" + std::to_string(getpid())))
            .string();
    ASSERT_TRUE(writeNativeTrace(*merged, path));
    auto read = readNativeTrace(path);
    std::filesystem::remove(path);
    ASSERT_TRUE(read) << read.message();
    EXPECT_EQ(read->ops.source, OpSource::Recorded);
    ASSERT_EQ(read->ops.scopes.size(), 3u);
    EXPECT_EQ(read->string(read->ops.scopes[2].name), "aten::_softmax");
}

TEST(RecordedOps, TheCaptureLibrarysOpsAreMergedAsRecorded) {
    RecordingParts parts;
    parts.cpu = {{150, 0x1000, 64}};
    parts.capture_ops.names = {{1, "aten::bmm"}};
    parts.capture_ops.scopes = {{100, 200, 1, 0}, {100, 200, 1, 0}};  // exact duplicates: one
    parts.capture_ops.bad = 2;
    std::vector<LoadWarning> warnings;
    auto merged = mergeRecording(std::move(parts), TaskContext{{}, nullptr, &warnings});
    ASSERT_TRUE(merged) << merged.message();
    ASSERT_EQ(merged->ops.scopes.size(), 1u);
    EXPECT_EQ(merged->ops.source, OpSource::Recorded);
    ASSERT_NE(merged->metadata.property("ops"), nullptr);
    EXPECT_NE(merged->metadata.property("ops")->find("RecordFunction"), std::string::npos);
    EXPECT_NE(warningAbout(warnings, "2 op records"), "");
    const OpAttribution ops(*merged);
    ASSERT_TRUE(ops.ofEvent(0, 150).has_value());
    EXPECT_EQ(merged->string(ops.ofEvent(0, 150)->name), "aten::bmm");
}

TEST(RecordedOps, NoScopesLeaveTheTraceWithoutOps) {
    Trace trace;
    CapturedOps none;
    none.names = {{1, "aten::mm"}};
    const RecordedOpsStats stats = addRecordedOps(trace, none);
    EXPECT_EQ(stats.scopes, 0u);
    EXPECT_EQ(trace.ops.source, OpSource::None);
    EXPECT_TRUE(trace.ops.empty());
}

}  // namespace
}  // namespace memscope
