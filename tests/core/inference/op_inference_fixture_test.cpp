// Ops inferred from a real snapshot's C++ frames (recorded with
// _record_memory_history(stacks="all")): most allocations get an op, and
// the ops are aten names as PyTorch spells them. Skips without the shared
// fixtures.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <map>
#include <string>

#include "memscope/builtin_plugins.h"
#include "memscope/model/op_attribution.h"
#include "memscope/open/open_run.h"

namespace memscope {
namespace {

namespace fs = std::filesystem;

bool plausibleAtenName(std::string_view name) {
    if (name.substr(0, 6) != "aten::" || name.size() == 6) return false;
    for (char c : name.substr(6))
        if (!(std::islower(static_cast<unsigned char>(c)) ||
              std::isdigit(static_cast<unsigned char>(c)) || c == '_'))
            return false;  // an overload left on ("add_Tensor") has upper case
    return true;
}

TEST(OpInferenceFixture, CppFramesOfARealSnapshotGiveAtenOps) {
    const fs::path file = fs::path(MEMSCOPE_FIXTURES_DIR) / "snapshots" /
                          "expandable_map_unmap_oom_3dev_cpp_frames__code_location.pickle";
    if (!fs::exists(file)) GTEST_SKIP() << "fixture missing: " << file.string();
    auto opened = openTrace(file.string(), processRegistry());
    ASSERT_TRUE(opened.ok()) << opened.message();
    const Trace& trace = *opened->trace;
    ASSERT_EQ(trace.ops.source, OpSource::Inferred);
    ASSERT_EQ(trace.ops.event_ops.size(), trace.events.size());
    const OpAttribution ops(trace);
    size_t allocs = 0, with_op = 0;
    std::map<std::string, size_t> count;
    for (uint64_t i = 0; i < trace.events.size(); ++i) {
        const Event& e = trace.events[i];
        if (e.kind != EventKind::Alloc) {
            EXPECT_FALSE(ops.ofEvent(i, e.time)) << "event " << i;
            continue;
        }
        ++allocs;
        const auto op = ops.ofEvent(i, e.time);
        if (!op) continue;
        ++with_op;
        const std::string name(trace.string(op->name));
        EXPECT_TRUE(plausibleAtenName(name)) << name;
        ++count[name];
    }
    // 2695 of its 3025 allocations have op frames (the rest: module.to()
    // and other Python-only stacks).
    ASSERT_GT(allocs, 3000u);
    EXPECT_GT(double(with_op), 0.85 * double(allocs)) << with_op << " of " << allocs;
    // Its model's ops, each the op that made the memory (helpers looked
    // through: aten::empty only where Python called it).
    for (const char* op : {"aten::mm", "aten::mul", "aten::add", "aten::_softmax", "aten::cat"})
        EXPECT_GT(count[op], 0u) << op;
    EXPECT_LT(count["aten::empty"], with_op / 10);
}

}  // namespace
}  // namespace memscope
