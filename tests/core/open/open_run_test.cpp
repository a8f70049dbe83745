// openRun: the one way front ends open a file or a folder of per-rank traces,
// with typed warnings and the native reader as a fallback.
#include "memscope/open/open_run.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>

#include "../analysis_test_util.h"
#include "../scratch_dir_test.h"
#include "memscope/builtin_plugins.h"
#include "memscope/format/native_format.h"

namespace memscope {
namespace {

namespace fs = std::filesystem;

// A folder of its own per test, removed at the end.
class OpenRunTest : public testutil::ScratchDirTest {
protected:
    std::string file(const std::string& name) const { return (dir_ / name).string(); }
    void writeTrace(const std::string& name, int32_t rank, uint64_t act) {
        Trace t = testutil::trainingRun(name, "full", act);
        t.metadata.rank = rank;
        ASSERT_TRUE(writeNativeTrace(t, file(name)).ok());
    }
};

TEST_F(OpenRunTest, AFileGivesItsTraceTimelineAndFormat) {
    writeTrace("one.memscope", -1, 5000);
    auto run = openRun(file("one.memscope"), processRegistry());
    ASSERT_TRUE(run.ok()) << run.message();
    EXPECT_FALSE(run->folder);
    EXPECT_EQ(run->name, "one.memscope");  // the trace's own name
    ASSERT_EQ(run->parts.size(), 1u);
    EXPECT_EQ(run->parts[0].format, "native");
    ASSERT_TRUE(run->parts[0].timeline);
    EXPECT_EQ(run->parts[0].timeline->devices().at(0).peak.bytes, 9000);
    EXPECT_TRUE(run->warnings().empty());

    OpenOptions no_timeline;
    no_timeline.timeline = false;
    auto bare = openRun(file("one.memscope"), processRegistry(), {}, no_timeline);
    ASSERT_TRUE(bare.ok());
    EXPECT_FALSE(bare->parts[0].timeline);
}

TEST_F(OpenRunTest, AFolderIsOneRunWithRanksInOrderAndOnlyTraces) {
    writeTrace("b.memscope", 1, 1000);
    writeTrace("a.memscope", 2, 2000);
    writeTrace("c.memscope", 0, 3000);
    writeTrace("z-norank.memscope", -1, 4000);
    std::ofstream(file("notes.txt")) << "not a trace\n";
    std::ofstream(file(".hidden.memscope")) << "MEMSCOPE garbage";
    fs::create_directory(dir_ / "sub");
    auto run = openRun(dir_.string(), processRegistry());
    ASSERT_TRUE(run.ok()) << run.message();
    EXPECT_TRUE(run->folder);
    EXPECT_EQ(run->name, dir_.filename().string());
    ASSERT_EQ(run->parts.size(), 4u);
    EXPECT_EQ(run->parts[0].trace->metadata.rank, 0);
    EXPECT_EQ(run->parts[1].trace->metadata.rank, 1);
    EXPECT_EQ(run->parts[2].trace->metadata.rank, 2);
    EXPECT_EQ(run->parts[3].trace->metadata.rank, -1);  // unranked after the ranks
    EXPECT_EQ(traceFilesIn(dir_.string(), processRegistry()).size(), 4u);
}

TEST_F(OpenRunTest, DamagedTailIsAWarningValueAndNotTextInTheTrace) {
    writeTrace("cut.memscope", -1, 5000);
    const auto size = fs::file_size(file("cut.memscope"));
    fs::resize_file(file("cut.memscope"), size - 5);
    auto run = openRun(file("cut.memscope"), processRegistry());
    ASSERT_TRUE(run.ok()) << run.message();
    const auto warnings = run->warnings();
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_EQ(warnings[0].kind, WarningKind::DamagedTail);
    for (const auto& [key, value] : run->parts[0].trace->metadata.properties)
        EXPECT_EQ(value.find("damaged"), std::string::npos) << key;
}

TEST_F(OpenRunTest, NativeTracesOpenWithoutANativePlugin) {
    writeTrace("n.memscope", -1, 5000);
    PluginRegistry empty;
    auto run = openRun(file("n.memscope"), empty);
    ASSERT_TRUE(run.ok()) << run.message();
    EXPECT_EQ(run->parts[0].format, "native");
    EXPECT_EQ(traceFilesIn(dir_.string(), empty).size(), 1u);
}

TEST_F(OpenRunTest, ErrorsNameWhatCannotBeOpened) {
    auto missing = openRun(file("nope"), processRegistry());
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.message().find("nope"), std::string::npos);
    std::ofstream(file("junk.bin")) << "junk";
    auto junk = openRun(file("junk.bin"), processRegistry());
    ASSERT_FALSE(junk.ok());
    EXPECT_NE(junk.message().find("junk.bin"), std::string::npos);
    fs::create_directory(dir_ / "empty");
    auto empty = openRun((dir_ / "empty").string(), processRegistry());
    ASSERT_FALSE(empty.ok());
    EXPECT_NE(empty.message().find("no trace"), std::string::npos);
}

TEST_F(OpenRunTest, WorkBesideInferenceRunsBeforeTheTimelineWithTheDeviceOrder) {
    // Called once with the path, the trace and each device's events in time
    // order; its work has run when the open returns, and what it throws the
    // open throws.
    Trace t = testutil::trainingRun("beside", "full", 5000);
    const size_t events = t.events.size();
    int calls = 0;
    std::atomic<bool> ran{false};
    size_t ordered = 0;
    OpenOptions options;
    options.beside_inference = [&](const std::string& path, const Trace& trace,
                                   const detail::DeviceOrder& order) -> std::function<void()> {
        ++calls;
        EXPECT_EQ(path, "beside");
        EXPECT_EQ(trace.events.size(), events);
        return [&ran, &ordered, &order] {
            for (const EventIndexList& list : order.events) ordered += list.size();
            ran = true;
        };
    };
    auto opened = openTrace(std::move(t), "beside", {}, options);
    ASSERT_TRUE(opened.ok()) << opened.message();
    EXPECT_EQ(calls, 1);
    EXPECT_TRUE(ran);
    EXPECT_EQ(ordered, events);
    ASSERT_TRUE(opened->timeline);

    // No work: nothing runs. No inference (convert): never called.
    options.beside_inference = [&](const std::string&, const Trace&,
                                   const detail::DeviceOrder&) -> std::function<void()> {
        ++calls;
        return {};
    };
    EXPECT_TRUE(openTrace(testutil::trainingRun("x", "full", 10), "x", {}, options).ok());
    EXPECT_EQ(calls, 2);
    options.infer = false;
    EXPECT_TRUE(openTrace(testutil::trainingRun("x", "full", 10), "x", {}, options).ok());
    EXPECT_EQ(calls, 2);

    options.infer = true;
    options.beside_inference = [](const std::string&, const Trace&,
                                  const detail::DeviceOrder&) -> std::function<void()> {
        return [] { throw std::runtime_error("beside failed"); };
    };
    EXPECT_THROW((void)openTrace(testutil::trainingRun("x", "full", 10), "x", {}, options),
                 std::runtime_error);
}

TEST_F(OpenRunTest, RecordedGapsBecomeWarnings) {
    Trace t = testutil::trainingRun("gaps", "full", 10);
    t.attributes.push_back({0, t.internString("dropped_records"), t.internString("17")});
    auto opened = openTrace(std::move(t), "gaps");
    ASSERT_TRUE(opened.ok());
    ASSERT_EQ(opened->warnings.size(), 1u);
    EXPECT_EQ(opened->warnings[0].kind, WarningKind::DroppedRecords);
    EXPECT_EQ(opened->warnings[0].count, 17u);
}

}  // namespace
}  // namespace memscope
