// The run metrics record: means without the warm-up step, and its round trip
// through the native format.
#include "memscope/model/run_metrics.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "memscope/format/native_format.h"
#include "memscope/model/trace.h"

namespace memscope {
namespace {

TEST(RunMetrics, MeansLeaveOutTheWarmUpStep) {
    RunMetrics m;
    EXPECT_FALSE(m.meanStepSeconds());
    m.step_ns = {5'000'000'000};
    EXPECT_DOUBLE_EQ(*m.meanStepSeconds(), 5.0);  // one step: it is the mean
    m.step_ns = {9'000'000'000, 1'000'000'000, 3'000'000'000};
    m.recompute_ns = {0, 500'000'000, 500'000'000};
    EXPECT_DOUBLE_EQ(*m.meanStepSeconds(), 2.0);
    EXPECT_DOUBLE_EQ(*m.recomputeFraction(), 0.25);
    m.recompute_ns.pop_back();  // lists that do not match say nothing
    EXPECT_FALSE(m.recomputeFraction());
}

TEST(RunMetrics, PersistedByTheNativeFormat) {
    const auto path = std::filesystem::temp_directory_path() /
                      ("memscope-metrics-" + std::to_string(::getpid()) + ".memscope");
    Trace t;
    t.metadata.name = "block";
    RunMetrics m;
    m.policy = "block";
    m.model = ModelShape{"gpt", "h=256, a=4, s=128", "float32", 2, 256, 4, 128, 2, 1000, 0.1};
    m.step_ns = {1200, -5, INT64_MAX};
    m.recompute_ns = {0, 300, 400};
    m.losses = {6.9, 6.5, 6.25};
    t.metrics = m;
    ASSERT_TRUE(writeNativeTrace(t, path.string()).ok());
    auto back = readNativeTrace(path.string());
    ASSERT_TRUE(back.ok()) << back.message();
    ASSERT_TRUE(back->metrics);
    EXPECT_EQ(*back->metrics, m);

    // A trace without metrics reads back without them.
    Trace plain;
    ASSERT_TRUE(writeNativeTrace(plain, path.string()).ok());
    auto none = readNativeTrace(path.string());
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none->metrics);
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace memscope
