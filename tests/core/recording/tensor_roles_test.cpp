// Tensor roles through the recording: the hook log's "tensor_roles" records
// (profiler/pyhook/memscope_hook/tensor_roles.py), labelTensorRoles on a
// trace's allocations, and the merge, after which the labels are recorded
// categories.
#include "memscope/recording/tensor_roles.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "memscope/recording/hook_log.h"
#include "memscope/recording/recording_merge.h"

namespace memscope {
namespace {

// ------------------------------------------------------------ parsing

TEST(HookLogTensorRoles, ReadsEachRoleAndItsTriples) {
    const HookLog log = parseHookLog(
        R"({"t":"tensor_roles","role":"parameter","time_ns":100,"s":[-1,4096,64,0,8192,512],"seq":1}
{"t":"tensor_roles","role":"gradient","time_ns":200,"s":[-1,16384,64],"seq":2}
{"t":"tensor_roles","role":"optimizer_state","time_ns":300,"s":[1,18446744073709551615,1],"seq":3}
{"t":"tensor_roles","role":"input","time_ns":50,"s":[-1,32768,128],"seq":4}
)");
    EXPECT_EQ(log.damaged_lines, 0u);
    EXPECT_EQ(log.bad_tensor_roles, 0u);
    ASSERT_EQ(log.tensor_roles.size(), 5u);
    const HookTensorRole& first = log.tensor_roles[0];
    EXPECT_EQ(first.time_ns, 100);
    EXPECT_EQ(first.device, -1);
    EXPECT_EQ(first.address, 4096u);
    EXPECT_EQ(first.bytes, 64u);
    EXPECT_EQ(first.role, Category::Parameter);
    EXPECT_EQ(log.tensor_roles[1].device, 0);
    EXPECT_EQ(log.tensor_roles[1].address, 8192u);
    EXPECT_EQ(log.tensor_roles[2].role, Category::Gradient);
    // An address above INT64_MAX is an address.
    EXPECT_EQ(log.tensor_roles[3].role, Category::OptimizerState);
    EXPECT_EQ(log.tensor_roles[3].address, UINT64_MAX);
    EXPECT_EQ(log.tensor_roles[3].device, 1);
    EXPECT_EQ(log.tensor_roles[4].role, Category::Input);
}

TEST(HookLogTensorRoles, ABatchWrittenTwiceIsReadOnce) {
    const std::string line =
        R"({"t":"tensor_roles","role":"gradient","time_ns":1,"s":[-1,64,8],"seq":7})"
        "\n";
    const HookLog log = parseHookLog(line + line);
    EXPECT_EQ(log.tensor_roles.size(), 1u);
    EXPECT_EQ(log.damaged_lines, 0u);
}

TEST(HookLogTensorRoles, BadTriplesAreCountedAndSkipped) {
    const HookLog log = parseHookLog(
        // device -2, device past int16, a negative size, size 0, address 0,
        // a string, a fraction; then one good triple and a group cut short.
        R"({"t":"tensor_roles","role":"parameter","time_ns":5,"s":[-2,64,8, 40000,64,8, -1,64,-8, )"
        R"(-1,64,0, -1,0,8, "x",64,8, -1,64.5,8, 0,128,16, 0,1],"seq":1})"
        "\n");
    EXPECT_EQ(log.damaged_lines, 0u);
    EXPECT_EQ(log.bad_tensor_roles, 8u);  // seven bad triples and the group cut short
    ASSERT_EQ(log.tensor_roles.size(), 1u);
    EXPECT_EQ(log.tensor_roles[0].address, 128u);
    EXPECT_EQ(log.tensor_roles[0].device, 0);
}

TEST(HookLogTensorRoles, RecordsWithoutTheirFieldsAreDamage) {
    // No role, a role that is a number, no time, a negative time, a time
    // that is no integer, "s" not a list, no "s".
    const std::vector<std::string> lines = {
        R"({"t":"tensor_roles","time_ns":5,"s":[-1,64,8],"seq":1})",
        R"({"t":"tensor_roles","role":7,"time_ns":5,"s":[-1,64,8],"seq":1})",
        R"({"t":"tensor_roles","role":"input","s":[-1,64,8],"seq":1})",
        R"({"t":"tensor_roles","role":"input","time_ns":-5,"s":[-1,64,8],"seq":1})",
        R"({"t":"tensor_roles","role":"input","time_ns":1e300,"s":[-1,64,8],"seq":1})",
        R"({"t":"tensor_roles","role":"input","time_ns":5,"s":{"a":1},"seq":1})",
        R"({"t":"tensor_roles","role":"input","time_ns":5,"seq":1})",
    };
    for (const std::string& line : lines) {
        const HookLog log = parseHookLog(line + "\n");
        EXPECT_EQ(log.damaged_lines, 1u) << line;
        EXPECT_TRUE(log.tensor_roles.empty()) << line;
    }
}

TEST(HookLogTensorRoles, ARoleOfANewerHookIsIgnoredSilently) {
    const HookLog log = parseHookLog(
        R"({"t":"tensor_roles","role":"activation","time_ns":5,"s":[-1,64,8],"seq":1}
{"t":"tensor_roles","role":"temporary","time_ns":5,"s":[-1,64,8],"seq":2}
)");
    EXPECT_EQ(log.damaged_lines, 0u);
    EXPECT_EQ(log.bad_tensor_roles, 0u);
    EXPECT_TRUE(log.tensor_roles.empty());
}

TEST(HookLogTensorRoles, AHugeBatchIsReadWhole) {
    std::string line = R"({"t":"tensor_roles","role":"parameter","time_ns":5,"s":[)";
    for (int i = 1; i <= 20000; ++i)
        line += (i > 1 ? "," : "") + std::to_string(-1) + "," + std::to_string(i * 64) + ",64";
    line += R"(],"seq":1})";
    const HookLog log = parseHookLog(line + "\n");
    EXPECT_EQ(log.tensor_roles.size(), 20000u);
    EXPECT_EQ(log.bad_tensor_roles, 0u);
}

// ------------------------------------------------------------ labelling

Event event(EventKind kind, int64_t time, uint64_t address, uint64_t size, int16_t device = -1) {
    Event e;
    e.kind = kind;
    e.time = time;
    e.address = address;
    e.size = size;
    e.device = device;
    return e;
}

HookTensorRole role(Category c, int64_t time, uint64_t address, uint64_t bytes,
                    int16_t device = -1) {
    return {time, address, bytes, device, c};
}

TEST(LabelTensorRoles, TheAllocationAliveThenTakesTheRoleOnItsAllocAndFrees) {
    Trace t;
    t.events = {event(EventKind::Alloc, 10, 0x1000, 256, 0),
                event(EventKind::FreeRequested, 50, 0x1000, 256, 0),
                event(EventKind::FreeCompleted, 60, 0x1000, 256, 0),
                event(EventKind::Alloc, 70, 0x1000, 256, 0)};  // the address again
    const TensorRoleStats s = labelTensorRoles(t, {role(Category::Gradient, 20, 0x1000, 200, 0)});
    EXPECT_EQ(s.labels, 1u);
    EXPECT_EQ(s.allocations, 1u);
    EXPECT_EQ(s.unplaced, 0u);
    EXPECT_EQ(t.events[0].category, Category::Gradient);
    EXPECT_EQ(t.events[1].category, Category::Gradient);
    EXPECT_EQ(t.events[2].category, Category::Gradient);
    EXPECT_EQ(t.events[3].category, Category::Unknown);  // a later allocation at that address
}

TEST(LabelTensorRoles, AnAddressInsideABlockFindsIt) {
    Trace t;
    t.events = {event(EventKind::Alloc, 10, 0x1000, 1024, 0),
                event(EventKind::Alloc, 11, 0x2000, 512, 0)};
    const TensorRoleStats s =
        labelTensorRoles(t, {role(Category::Parameter, 20, 0x1100, 256, 0),
                             role(Category::Parameter, 20, 0x2100, 512, 0)});  // overruns it
    EXPECT_EQ(t.events[0].category, Category::Parameter);
    EXPECT_EQ(t.events[1].category, Category::Unknown);
    EXPECT_EQ(s.allocations, 1u);
    EXPECT_EQ(s.unplaced, 1u);
}

TEST(LabelTensorRoles, DevicesAreKeptApart) {
    Trace t;
    t.events = {event(EventKind::Alloc, 10, 0x1000, 64, -1),
                event(EventKind::Alloc, 10, 0x1000, 64, 1)};
    const TensorRoleStats s = labelTensorRoles(
        t, {role(Category::Input, 20, 0x1000, 64, 1), role(Category::Input, 20, 0x1000, 64, 3)});
    EXPECT_EQ(t.events[0].category, Category::Unknown);
    EXPECT_EQ(t.events[1].category, Category::Input);
    EXPECT_EQ(s.unplaced, 1u);  // device 3 has no allocation
}

TEST(LabelTensorRoles, ALabelBeforeItsAllocationWithinTheSlackFindsIt) {
    Trace t;
    t.events = {event(EventKind::Alloc, 1000 + kTensorRoleSlackNs / 2, 0x1000, 64, 0),
                event(EventKind::Alloc, 3000 + 2 * kTensorRoleSlackNs, 0x4000, 64, 0)};
    const TensorRoleStats s =
        labelTensorRoles(t, {role(Category::OptimizerState, 1000, 0x1000, 64, 0),
                             role(Category::OptimizerState, 3000, 0x4000, 64, 0)});
    EXPECT_EQ(t.events[0].category, Category::OptimizerState);
    EXPECT_EQ(t.events[1].category, Category::Unknown);  // far too late: another allocation
    EXPECT_EQ(s.unplaced, 1u);
}

TEST(LabelTensorRoles, AnAllocationFromBeforeTheTraceIsLabelledOnItsFree) {
    Trace t;
    t.events = {event(EventKind::FreeCompleted, 5 * kTensorRoleSlackNs, 0x1000, 4096, 0)};
    const TensorRoleStats s = labelTensorRoles(t, {role(Category::Parameter, 10, 0x1200, 64, 0)});
    EXPECT_EQ(t.events[0].category, Category::Parameter);
    EXPECT_EQ(s.allocations, 1u);
    EXPECT_EQ(s.unplaced, 0u);
}

TEST(LabelTensorRoles, TheFirstLabelWinsAndRecordedCategoriesStay) {
    Trace t;
    t.events = {event(EventKind::Alloc, 10, 0x1000, 64), event(EventKind::Alloc, 10, 0x2000, 64)};
    t.events[1].category = Category::Activation;  // recorded by its source
    const TensorRoleStats s = labelTensorRoles(
        t, {role(Category::Parameter, 20, 0x1000, 64), role(Category::Gradient, 30, 0x1000, 64),
            role(Category::Parameter, 40, 0x1000, 64), role(Category::Input, 20, 0x2000, 64)});
    EXPECT_EQ(t.events[0].category, Category::Parameter);
    EXPECT_EQ(t.events[1].category, Category::Activation);
    EXPECT_EQ(s.allocations, 1u);
    EXPECT_EQ(s.conflicting, 2u);
}

TEST(LabelTensorRoles, LabelsAfterTheLastEventStillSeeWhatIsAlive) {
    Trace t;
    t.events = {event(EventKind::Alloc, 10, 0x1000, 64)};
    labelTensorRoles(t, {role(Category::OptimizerState, 1'000'000'000, 0x1000, 64)});
    EXPECT_EQ(t.events[0].category, Category::OptimizerState);
}

TEST(LabelTensorRoles, HostileNumbersNeitherCrashNorLabel) {
    Trace t;
    t.events = {event(EventKind::Alloc, 10, UINT64_MAX - 63, 64),
                event(EventKind::Alloc, INT64_MAX, 0x1000, UINT64_MAX),
                event(EventKind::FreeCompleted, INT64_MAX, 0x9000, UINT64_MAX)};
    const TensorRoleStats s =
        labelTensorRoles(t, {role(Category::Parameter, INT64_MAX, UINT64_MAX - 10, UINT64_MAX),
                             role(Category::Parameter, 0, UINT64_MAX, 1),
                             role(Category::Gradient, INT64_MAX - 1, 0x5000, 1),
                             role(Category::Input, 5, 0x1000, UINT64_MAX)});
    EXPECT_EQ(s.labels, 4u);
    // UINT64_MAX - 63 + 64 overflows nothing: [max-63, max] holds the byte at max.
    EXPECT_EQ(t.events[0].category, Category::Parameter);
    EXPECT_EQ(s.allocations + s.unplaced + s.conflicting, 4u);
}

TEST(LabelTensorRoles, NoLabelsChangeNothing) {
    Trace t;
    t.events = {event(EventKind::Alloc, 10, 0x1000, 64)};
    const TensorRoleStats s = labelTensorRoles(t, {});
    EXPECT_EQ(s.labels, 0u);
    EXPECT_EQ(t.events[0].category, Category::Unknown);
}

// ------------------------------------------------------------ the merge

TEST(MergeTensorRoles, TheHooksLabelsBecomeRecordedCategories) {
    RecordingParts parts;
    HookSidecar hook;
    hook.pid = 1;
    hook.phases = {{HookPhaseKind::Step, 0, 1000, 2000}};
    const HookLog log = parseHookLog(
        R"({"t":"tensor_roles","role":"parameter","time_ns":1100,"s":[-1,4096,64],"seq":1}
{"t":"tensor_roles","role":"gradient","time_ns":1500,"s":[-1,8192,64, -1,65536,8],"seq":2}
)");
    hook.tensor_roles = log.tensor_roles;
    parts.hook = hook;
    parts.cpu = {{900, 4096, 64}, {1400, 8192, 64}, {1800, 8192, -64}, {1900, 4096, -64}};
    MergeStats stats;
    auto merged = mergeRecording(std::move(parts), {}, &stats);
    ASSERT_TRUE(merged) << merged.message();
    EXPECT_EQ(stats.tensor_roles.labels, 3u);
    EXPECT_EQ(stats.tensor_roles.allocations, 2u);
    EXPECT_EQ(stats.tensor_roles.unplaced, 1u);
    for (const Event& e : merged->events) {
        if (e.kind != EventKind::Alloc && e.kind != EventKind::FreeCompleted) continue;
        EXPECT_EQ(e.category, e.address == 4096 ? Category::Parameter : Category::Gradient)
            << e.time;
    }
    const std::string* said = merged->metadata.property("tensor_roles");
    ASSERT_NE(said, nullptr);
    EXPECT_NE(said->find("2 allocations labelled from 3 labels"), std::string::npos) << *said;
    EXPECT_NE(said->find("1 found no allocation"), std::string::npos) << *said;
}

TEST(MergeTensorRoles, WithoutLabelsTheMetadataSaysNothing) {
    RecordingParts parts;
    HookSidecar hook;
    hook.pid = 1;
    parts.hook = hook;
    parts.cpu = {{900, 4096, 64}};
    auto merged = mergeRecording(std::move(parts));
    ASSERT_TRUE(merged);
    EXPECT_EQ(merged->metadata.property("tensor_roles"), nullptr);
    EXPECT_EQ(merged->events[0].category, Category::Unknown);
}

}  // namespace
}  // namespace memscope
