// recordedTraceName, and finishRecording on folders whose hook parts are
// missing, empty or damaged (the merge itself has tests of its own elsewhere).
#include "memscope/recording/recording_folder.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "../scratch_dir_test.h"
#include "memscope/open/plugin_registry.h"

namespace memscope {
namespace {

namespace fs = std::filesystem;

TEST(RecordedTraceName, NamesThePidAndTheRanksThatAreKnown) {
    EXPECT_EQ(recordedTraceName(1234, -1, -1), "memscope-1234.memscope");
    EXPECT_EQ(recordedTraceName(1234, 0, -1), "memscope-1234-rank0.memscope");
    EXPECT_EQ(recordedTraceName(1234, 3, 1), "memscope-1234-rank3-local1.memscope");
    EXPECT_EQ(recordedTraceName(1234, -1, 2), "memscope-1234-local2.memscope");
    EXPECT_EQ(recordedTraceName(4194304, 127, 7), "memscope-4194304-rank127-local7.memscope");
}

// A recording folder of its own per test, removed at the end.
class FinishRecordingTest : public testutil::ScratchDirTest {
protected:
    fs::path hookFolder(const std::string& pid) {
        const fs::path folder = dir_ / kHookFolderName / pid;
        fs::create_directories(folder);
        return folder;
    }
    void write(const fs::path& path, const std::string& text) {
        std::ofstream(path, std::ios::binary) << text;
    }
    PluginRegistry registry_;  // no importers: these recordings have no history dumps
};

TEST_F(FinishRecordingTest, AFolderWithoutHookPartsGivesNothing) {
    auto done = finishRecording(dir_.string(), registry_);
    EXPECT_TRUE(done.traces.empty());
    EXPECT_TRUE(done.errors.empty());
    auto missing = finishRecording((dir_ / "absent").string(), registry_);
    EXPECT_TRUE(missing.traces.empty());
    EXPECT_TRUE(missing.errors.empty());
}

TEST_F(FinishRecordingTest, AProcessThatRecordedNothingLeavesNoTraceAndNoFolder) {
    const fs::path folder = hookFolder("77");
    write(folder / "hook.json",
          R"({"format": "memscope-hook", "version": 1, "pid": 77, "phases": [],
              "histories": [], "cpu_events": null})");
    auto done = finishRecording(dir_.string(), registry_);
    EXPECT_TRUE(done.errors.empty()) << done.errors.front();
    EXPECT_TRUE(done.traces.empty());
    EXPECT_FALSE(fs::exists(folder));
    EXPECT_FALSE(fs::exists(dir_ / kHookFolderName));  // removed once empty
    EXPECT_FALSE(fs::exists(dir_ / recordedTraceName(77, -1, -1)));
}

TEST_F(FinishRecordingTest, ADamagedHookFileIsAnErrorAndThePartsAreKept) {
    const fs::path bad = hookFolder("88");
    write(bad / "hook.json", R"({"format": "memscope-hook", "version": 1, "phases": [)");
    const fs::path empty = hookFolder("99");
    write(empty / "hook.json", R"({"format": "memscope-hook", "version": 1})");
    fs::create_directories(dir_ / kHookFolderName / "not-a-pid");  // not ours: ignored

    auto done = finishRecording(dir_.string(), registry_);
    ASSERT_EQ(done.errors.size(), 1u);
    const std::string& error = done.errors[0];
    EXPECT_NE(error.find((bad / "hook.json").string() + ": not valid JSON"), std::string::npos)
        << error;
    EXPECT_NE(error.find("its parts are kept in " + bad.string()), std::string::npos) << error;
    EXPECT_TRUE(done.traces.empty());
    EXPECT_TRUE(fs::exists(bad / "hook.json"));
    EXPECT_FALSE(fs::exists(empty));  // the other process's folder still goes
    EXPECT_TRUE(fs::exists(dir_ / kHookFolderName / "not-a-pid"));
}

TEST_F(FinishRecordingTest, AMissingHookFileIsAnErrorNamingIt) {
    const fs::path folder = hookFolder("123");
    write(folder / "cpu-events.bin", "MSCPUEV1");
    auto done = finishRecording(dir_.string(), registry_);
    ASSERT_EQ(done.errors.size(), 1u);
    EXPECT_NE(done.errors[0].find((folder / "hook.json").string() + ": cannot open the hook file"),
              std::string::npos)
        << done.errors[0];
    EXPECT_TRUE(fs::exists(folder / "cpu-events.bin"));
}

TEST(LiveTraceName, IsTheTracesNameMarkedLive) {
    EXPECT_EQ(liveTraceName("memscope-12.memscope"), "memscope-12.live.memscope");
    EXPECT_EQ(liveTraceName("memscope-12-rank3-local1.memscope"),
              "memscope-12-rank3-local1.live.memscope");
}

TEST_F(FinishRecordingTest, ASnapshotMovesNothingAndSkipsWhatHasNothingToShow) {
    const fs::path before_first_step = hookFolder("41");  // no hook.json yet
    write(before_first_step / "cpu-events.bin", "MSCPUEV1");
    const fs::path idle = hookFolder("42");
    write(idle / "hook.json",
          R"({"format": "memscope-hook", "version": 1, "pid": 42, "phases": [],
              "histories": [], "cpu_events": null})");
    EXPECT_TRUE(snapshotRecording(dir_.string(), registry_).empty());
    EXPECT_TRUE(fs::exists(before_first_step / "cpu-events.bin"));
    EXPECT_TRUE(fs::exists(idle / "hook.json"));
    for (const auto& entry : fs::directory_iterator(dir_))
        EXPECT_EQ(entry.path().filename(), kHookFolderName) << entry.path();
}

TEST_F(FinishRecordingTest, TheFinishRemovesEveryLiveSnapshotOfItsProcesses) {
    // Snapshots left by record --live: the finish replaces them by the
    // traces, and removes them too where a process could not be merged.
    const fs::path bad = hookFolder("88");
    write(bad / "hook.json", R"({"format": "memscope-hook", "version": 1, "phases": [)");
    const fs::path idle = hookFolder("77");
    write(idle / "hook.json",
          R"({"format": "memscope-hook", "version": 1, "pid": 77, "phases": [],
              "histories": [], "cpu_events": null})");
    for (const char* name : {"memscope-88.live.memscope", "memscope-88-rank1.live.memscope",
                             "memscope-77.live.memscope", "memscope-880.live.memscope"})
        write(dir_ / name, "partial");
    auto done = finishRecording(dir_.string(), registry_);
    EXPECT_EQ(done.errors.size(), 1u);
    EXPECT_FALSE(fs::exists(dir_ / "memscope-88.live.memscope"));
    EXPECT_FALSE(fs::exists(dir_ / "memscope-88-rank1.live.memscope"));
    EXPECT_FALSE(fs::exists(dir_ / "memscope-77.live.memscope"));
    EXPECT_TRUE(fs::exists(dir_ / "memscope-880.live.memscope"));  // another process's
}

}  // namespace
}  // namespace memscope
