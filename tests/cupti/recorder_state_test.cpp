// The tracer's small pieces of state that need no driver: options from the
// environment, the cap on NVTX names, the delivery monitor, and the phase
// index pruning itself without CUPTI buffers.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "delivery_monitor.h"
#include "name_cap.h"
#include "options.h"
#include "phase_index.h"

namespace memscope::cupti {
namespace {

// optionsFromEnvironment takes a plain function: the test's environment is
// this map.
std::map<std::string, std::string> g_env;
const char* fakeLookup(const char* name) {
    const auto it = g_env.find(name);
    return it == g_env.end() ? nullptr : it->second.c_str();
}
TracerOptions optionsWith(std::map<std::string, std::string> env) {
    g_env = std::move(env);
    return optionsFromEnvironment(fakeLookup);
}

TEST(Options, ExpandableSegmentsTurnTheVmmCallbacksOn) {
    TracerOptions o = optionsWith({{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"}});
    EXPECT_TRUE(o.vmm_callbacks);
    EXPECT_TRUE(o.vmm_for_expandable_segments);
    EXPECT_TRUE(o.needsSubscriber());

    o = optionsWith(
        {{"PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:128, expandable_segments : True"}});
    EXPECT_TRUE(o.vmm_callbacks);
    o = optionsWith({{"PYTORCH_ALLOC_CONF", "expandable_segments:True"}});  // the newer name
    EXPECT_TRUE(o.vmm_callbacks);
}

TEST(Options, ExplicitVmmSettingWins) {
    TracerOptions o = optionsWith(
        {{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"}, {"MEMSCOPE_VMM_CALLBACKS", "0"}});
    EXPECT_FALSE(o.vmm_callbacks);
    EXPECT_FALSE(o.vmm_for_expandable_segments);
    o = optionsWith({{"MEMSCOPE_VMM_CALLBACKS", "1"}});
    EXPECT_TRUE(o.vmm_callbacks);
    EXPECT_FALSE(o.vmm_for_expandable_segments);  // asked for, not inferred
}

TEST(Options, NoExpandableSegmentsNoVmm) {
    EXPECT_FALSE(optionsWith({}).vmm_callbacks);
    EXPECT_FALSE(
        optionsWith({{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:False"}}).vmm_callbacks);
    EXPECT_FALSE(
        optionsWith({{"PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync"}}).vmm_callbacks);
    // The last setting wins, as in PyTorch's parser.
    EXPECT_FALSE(expandableSegmentsEnabled("expandable_segments:True,expandable_segments:False"));
    EXPECT_FALSE(expandableSegmentsEnabled("garbage_collection_threshold:0.6"));
    EXPECT_FALSE(expandableSegmentsEnabled(""));
    EXPECT_FALSE(expandableSegmentsEnabled(nullptr));
    EXPECT_FALSE(expandableSegmentsEnabled("xexpandable_segments:True"));
}

TEST(Options, OtherSettings) {
    const TracerOptions o = optionsWith({{"MEMSCOPE_OUTPUT_DIR", "/tmp/x"},
                                         {"PYTORCH_NO_CUDA_MEMORY_CACHING", "1"},
                                         {"MEMSCOPE_STACKS", "off"}});
    EXPECT_EQ(o.output_dir, "/tmp/x");
    EXPECT_TRUE(o.tensor_level);
    EXPECT_FALSE(o.stacks);
    EXPECT_FALSE(o.needsSubscriber());
}

TEST(NameCap, NamesPassUntilTheCapThenTheirClassThenOneName) {
    NameCap cap(3, 2);
    EXPECT_EQ(cap.admit("step 1").name, "step 1");
    EXPECT_EQ(cap.admit("aten::mm, seq = 1").name, "aten::mm, seq = 1");
    EXPECT_EQ(cap.admit("forward").name, "forward");
    EXPECT_EQ(cap.admit("forward").name, "forward");  // known names always pass
    EXPECT_EQ(cap.replaced(), 0u);

    const NameCap::Admitted first = cap.admit("aten::mm, seq = 2");
    EXPECT_EQ(first.name, "aten::mm");
    EXPECT_TRUE(first.replaced);
    EXPECT_TRUE(first.first_cap);
    const NameCap::Admitted second = cap.admit("aten::add(a, b)");
    EXPECT_EQ(second.name, "aten::add");
    EXPECT_FALSE(second.first_cap);
    EXPECT_EQ(cap.admit("aten::mm, seq = 3").name, "aten::mm");                 // a known class
    EXPECT_EQ(cap.admit("aten::bmm, seq = 4").name, NameCap::kCapReachedName);  // classes full
    EXPECT_EQ(cap.admit("step 2").name, NameCap::kCapReachedName);              // no class
    EXPECT_EQ(cap.replaced(), 5u);
}

TEST(NameCap, PrefixClass) {
    EXPECT_EQ(NameCap::prefixClass("aten::mm, seq = 1"), "aten::mm");
    EXPECT_EQ(NameCap::prefixClass("Linear (fc1)"), "Linear");
    EXPECT_EQ(NameCap::prefixClass("step 3"), "");
    EXPECT_EQ(NameCap::prefixClass(", x"), "");
}

TEST(DeliveryMonitor, CallsAfterTheNewestRecordMeanTakenOver) {
    DeliveryMonitor m;
    m.bufferRequested();
    m.allocationCall(100);
    m.allocationCall(200);
    m.recordsDelivered(2, 210);
    m.bufferCompleted();
    DeliveryMonitor::Verdict v = m.verdict();
    EXPECT_FALSE(v.taken_over);
    EXPECT_EQ(v.calls_seen, 2u);
    EXPECT_EQ(v.memory_records, 2u);
    EXPECT_EQ(v.buffers_outstanding, 0u);

    // Another client registered its buffers: calls go on, records do not come.
    m.bufferRequested();
    m.allocationCall(300);
    m.allocationCall(400);
    v = m.verdict();
    EXPECT_TRUE(v.taken_over);
    EXPECT_EQ(v.calls_without_record, 2u);
    EXPECT_EQ(v.buffers_outstanding, 1u);
}

TEST(DeliveryMonitor, NoSubscriberNoVerdict) {
    DeliveryMonitor m;
    m.bufferRequested();
    EXPECT_FALSE(m.verdict().taken_over);  // nothing seen, nothing judged
    EXPECT_EQ(m.verdict().buffers_outstanding, 1u);
}

TEST(PhaseIndex, PrunesAsPhasesOpenWithoutAnyBuffer) {
    PhaseIndex index;
    index.open(PhaseId{1}, 0);  // "train", open all run
    // Ranges 1 ms apart for 300 s: those ended more than the horizon (120 s)
    // before the newest go, although forgetBefore is never called.
    const uint32_t n = 300'000;
    for (uint32_t i = 0; i < n; ++i) {
        const int64_t start = 1'000'000 + int64_t(i) * 1'000'000;
        index.open(PhaseId{i + 2}, start);
        index.close(PhaseId{i + 2}, start + 500'000);
    }
    const size_t horizon_entries = PhaseIndex::kHorizonNs / 1'000'000;
    EXPECT_LE(index.size(), horizon_entries + PhaseIndex::kPruneEvery + 2);
    EXPECT_GE(index.size(), horizon_entries);
    EXPECT_EQ(index.innermostAt(int64_t(n) * 1'000'000 + 100), PhaseId{n + 1});  // the last
    EXPECT_EQ(index.innermostAt(500), PhaseId{1});  // "train", open, is kept
}

TEST(PhaseIndex, SizeIsBoundedEvenWithinTheHorizon) {
    PhaseIndex index;
    const uint32_t n = uint32_t(PhaseIndex::kMaxEntries) + 10'000;
    for (uint32_t i = 0; i < n; ++i) {  // all within one second
        index.open(PhaseId{i + 1}, 1000 + i);
        index.close(PhaseId{i + 1}, 1000 + i + 1);
    }
    EXPECT_LE(index.size(), PhaseIndex::kMaxEntries);
    EXPECT_EQ(index.innermostAt(1000 + n - 1), PhaseId{n});
}

}  // namespace
}  // namespace memscope::cupti
