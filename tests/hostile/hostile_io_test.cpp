// Issue 64, class 1: every file memscope reads goes through the one guarded
// open (file_io.h): a FIFO, a device or a folder is refused at once, also one
// swapped in after a folder was listed, and files are read in bounded pieces.
// Each case runs under a deadline: a reader that blocks is unblocked by the
// test (the FIFO opened for writing) and reported, never left hanging.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <thread>
#include <tuple>
#include <vector>

#include "hostile_corpus.h"
#include "memscope/base/file_io.h"
#include "memscope/builtin_plugins.h"
#include "memscope/format/native_format.h"
#include "memscope/open/open_run.h"
#include "memscope/open/plugin_registry.h"
#include "memscope/plugins/kineto.h"
#include "memscope/plugins/pytorch_snapshot.h"
#include "memscope/recording/capture_log.h"
#include "memscope/recording/hook_env.h"
#include "memscope/recording/hook_log.h"
#include "memscope/recording/hook_sidecar.h"
#include "memscope/recording/recording_folder.h"
#include "memscope_test/wall_guard.h"

namespace fs = std::filesystem;
using namespace memscope;

namespace {

constexpr auto kDeadline = std::chrono::seconds(10);

class HostileIo : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("memscope-hostile-io-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string fifo(const std::string& name) {
        const std::string p = (dir_ / name).string();
        fs::create_directories(fs::path(p).parent_path());
        fs::remove(p);
        EXPECT_EQ(::mkfifo(p.c_str(), 0600), 0) << p;
        return p;
    }

    // Runs `read` (which reads `fifo_path`) under the deadline. If it is
    // still blocked then, the FIFO is opened for writing and closed (a
    // blocked open or read returns) and the case fails.
    template <typename F>
    auto bounded(const std::string& fifo_path, F read) {
        auto future = std::async(std::launch::async, read);
        if (future.wait_for(kDeadline) != std::future_status::ready) {
            ADD_FAILURE() << "blocked on " << fifo_path;
            for (int i = 0; i < 50 && future.wait_for(std::chrono::milliseconds(100)) !=
                                          std::future_status::ready;
                 ++i) {
                const int fd = ::open(fifo_path.c_str(), O_RDWR | O_NONBLOCK);
                if (fd >= 0) ::close(fd);
            }
        }
        return future.get();
    }

    fs::path dir_;
};

void write(const fs::path& p, const std::string& bytes) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << bytes;
}

long maxRssMiB() {
    struct rusage u {};
    ::getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss / 1024;
}

const char* kHookJson =
    R"({"format": "memscope-hook", "version": 2, "pid": 4242, "phases": [], "histories": [],
        "log": "log.jsonl", "cpu_events": {"file": "cpu-events.bin"}, "open_phases": []})";

}  // namespace

TEST_F(HostileIo, GuardedOpenRefusesAFifoADeviceAndAFolder) {
    const std::string p = fifo("pipe");
    auto r = bounded(p, [&] { return ReadableFile::open(p, "the hook log"); });
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.message(), p + ": the hook log is a pipe (FIFO), not a regular file; refused");
    auto dev = ReadableFile::open("/dev/zero", "the hook log");
    ASSERT_FALSE(dev.ok());
    EXPECT_NE(dev.message().find("a character device"), std::string::npos) << dev.message();
    auto folder = ReadableFile::open(dir_.string(), "the hook log");
    ASSERT_FALSE(folder.ok());
    EXPECT_NE(folder.message().find("a folder"), std::string::npos) << folder.message();
    // A symlink to a device is what it points at.
    fs::create_symlink("/dev/zero", dir_ / "zero");
    EXPECT_FALSE(readWholeFile((dir_ / "zero").string(), 1 << 20, "the hook file").ok());
}

TEST_F(HostileIo, HookLogAsAFifoIsRefusedNotWaitedOn) {
    const std::string p = fifo("log.jsonl");
    auto r = bounded(p, [&] { return readHookLog(p); });
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.message().find(p), 0u) << r.message();
    EXPECT_NE(r.message().find("pipe"), std::string::npos) << r.message();
}

TEST_F(HostileIo, HookFileAsAFifoIsRefusedNotWaitedOn) {
    const std::string p = fifo("hook.json");
    auto r = bounded(p, [&] { return readHookSidecar(p); });
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.message().find(p + ": the hook file is a pipe"), std::string::npos) << r.message();
}

TEST_F(HostileIo, CpuLogAsAFifoIsRefusedNotWaitedOn) {
    const std::string p = fifo("cpu-events.bin");
    auto r = bounded(p, [&] { return readCaptureLog(p, {}); });
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.message().find(p + ": the CPU allocation log is a pipe"), std::string::npos)
        << r.message();
}

TEST_F(HostileIo, HookLogLinkedToDevZeroIsRefused) {
    fs::create_symlink("/dev/zero", dir_ / "log.jsonl");
    const std::string p = (dir_ / "log.jsonl").string();
    auto r = bounded(p, [&] { return readHookLog(p); });
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.message().find("a character device"), std::string::npos) << r.message();
}

TEST_F(HostileIo, SparseHookLogIsStreamedInBoundedMemory) {
    // 1 GiB of zeros without a newline, then one good line: streamed, the
    // long line is left out (not kept), the good one is read.
    const fs::path p = dir_ / "log.jsonl";
    {
        const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(::ftruncate(fd, off_t(1) << 30), 0);
        ::close(fd);
        std::ofstream(p, std::ios::app)
            << "\n{\"t\":\"phase\",\"seq\":1,\"kind\":\"step\",\"step\":0,\"start_ns\":1,"
               "\"end_ns\":2}\n";
    }
    const long before = maxRssMiB();
    const auto start = std::chrono::steady_clock::now();
    auto r = readHookLog(p.string());
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(r->damaged_lines, 1u);
    EXPECT_LT(maxRssMiB() - before, 512) << "the log was held whole";
    EXPECT_LT(std::chrono::steady_clock::now() - start,
              memscope::test::wallGuard(std::chrono::seconds(15)));
}

TEST_F(HostileIo, OverlongHookLogLineIsDamageNotKept) {
    std::string log(kMaxHookLogLine + 10, 'x');
    log += "\n";
    log += std::string(kMaxHookLogLine + 1, 'y');  // and a last one, cut
    write(dir_ / "log.jsonl", log);
    auto r = readHookLog((dir_ / "log.jsonl").string());
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(r->damaged_lines, 1u);
    EXPECT_TRUE(r->cut_short);
}

TEST_F(HostileIo, LinesAreSplitAcrossPiecesExactly) {
    std::string text;
    for (int i = 0; i < 20000; ++i) text += std::string(size_t(i % 97), 'a' + char(i % 26)) + "\n";
    text += "tail";
    write(dir_ / "lines", text);
    std::string back;
    uint64_t count = 0;
    bool cut = false;
    auto r = forEachLine((dir_ / "lines").string(), 1 << 20, 1 << 30, "the file",
                         [&](const FileLine& l) -> Result<void> {
                             back.append(l.text);
                             ++count;
                             if (l.cut)
                                 cut = true;
                             else
                                 back += "\n";
                             return {};
                         });
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(back, text);
    EXPECT_EQ(count, 20001u);
    EXPECT_TRUE(cut);
}

TEST_F(HostileIo, WholeFileReadsAreCapped) {
    write(dir_ / "big", std::string(5000, 'x'));
    auto r = readWholeFile((dir_ / "big").string(), 4096, "the hook file");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.message().find("larger than 4096 bytes"), std::string::npos) << r.message();
    auto ok = readWholeFile((dir_ / "big").string(), 5000, "the hook file");
    ASSERT_TRUE(ok.ok());
    EXPECT_EQ(ok->size(), 5000u);
}

TEST_F(HostileIo, SparseCpuLogIsRefusedBeforeItIsRead) {
    const fs::path p = dir_ / "cpu-events.bin";
    const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, kCaptureLogMagic, 8), 8);
    const uint32_t record = kCaptureLogRecordSize;
    ASSERT_EQ(::write(fd, &record, 4), 4);
    ASSERT_EQ(::ftruncate(fd, off_t(kMaxCaptureLogBytes) + 4096), 0);
    ::close(fd);
    const long before = maxRssMiB();
    auto r = readCaptureLog(p.string(), {});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.message().find("larger than 2 GiB"), std::string::npos) << r.message();
    EXPECT_LT(maxRssMiB() - before, 256);
}

// The race: the folder was listed while the file was a regular one; it is a
// FIFO by the time it is opened (made so before the open, deterministically).
TEST_F(HostileIo, RankFileSwappedForAFifoAfterListingIsRefused) {
    PluginRegistry registry;
    registerBuiltinPlugins(registry);
    const std::string p = (dir_ / "rank1.memscope").string();
    ASSERT_TRUE(hostile::writeNativeEvents(p, 10, 1024));
    ASSERT_TRUE(fs::is_regular_file(p));  // what the listing saw
    fs::remove(p);
    ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
    auto probe = bounded(p, [&] { return registry.importerFor(p); });
    ASSERT_FALSE(probe.ok());
    EXPECT_NE(probe.message().find("pipe"), std::string::npos) << probe.message();
    auto loaded = bounded(p, [&] { return registry.load(p, {}); });
    EXPECT_FALSE(loaded.ok());
    auto kineto = bounded(p, [&] { return kineto::importFile(p); });
    EXPECT_FALSE(kineto.ok());
    auto native = bounded(p, [&] { return importNativeTrace(p); });
    EXPECT_FALSE(native.ok());
}

TEST_F(HostileIo, FolderWithAFifoRankLoadsTheOthers) {
    PluginRegistry registry;
    registerBuiltinPlugins(registry);
    ASSERT_TRUE(hostile::writeNativeEvents((dir_ / "rank0.memscope").string(), 10, 1024));
    const std::string p = fifo("rank1.memscope");
    auto run = bounded(p, [&] { return openRun(dir_.string(), registry, {}); });
    (void)run;  // either the rank left out with a warning or an error: never a hang
}

// `record --merge` on a process folder whose parts are FIFOs: an error that
// names the file, the parts kept, and no wait.
TEST_F(HostileIo, MergeOfFifoPartsIsAnErrorNotAHang) {
    PluginRegistry registry;
    registerBuiltinPlugins(registry);
    for (const char* part : {"hook.json", "log.jsonl", "cpu-events.bin"}) {
        fs::remove_all(dir_ / kHookFolderName);
        const fs::path folder = dir_ / kHookFolderName / "4242";
        fs::create_directories(folder);
        if (std::string(part) != "hook.json") write(folder / "hook.json", kHookJson);
        const std::string p = fifo((fs::path(kHookFolderName) / "4242" / part).string());
        auto done = bounded(p, [&] { return finishRecording(dir_.string(), registry); });
        ASSERT_EQ(done.errors.size(), 1u) << part;
        EXPECT_NE(done.errors[0].find(p), std::string::npos) << done.errors[0];
        EXPECT_NE(done.errors[0].find("pipe"), std::string::npos) << done.errors[0];
        EXPECT_TRUE(fs::exists(folder)) << part;  // kept
    }
}

// Class 8: the one table of environment cases, checked here against
// hook_env.h as tests/contracts/hook_env_test.py checks it against the hook.
TEST(HostileEnv, EveryCaseOfTheSharedTableAsTheTableSays) {
    std::ifstream in(MEMSCOPE_HOOK_ENV_CASES, std::ios::binary);
    ASSERT_TRUE(in) << MEMSCOPE_HOOK_ENV_CASES;
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    rapidjson::Document doc;
    doc.Parse(text.c_str());
    ASSERT_FALSE(doc.HasParseError());
    const auto& cases = doc["cases"];
    ASSERT_GT(cases.Size(), 40u);
    for (const auto& c : cases.GetArray()) {
        const std::string name = c["name"].GetString();
        const std::string value(c["value"].GetString(), c["value"].GetStringLength());
        auto got = checkHookVariable(name, value);
        SCOPED_TRACE(name + "=" + value);
        if (c["accept"].GetBool()) {
            ASSERT_TRUE(got.ok()) << got.message();
            EXPECT_EQ(*got, c["parsed"].GetString());
        } else {
            ASSERT_FALSE(got.ok()) << *got;
            // One line, naming the variable and its value.
            EXPECT_EQ(got.message().find(name + "=" + value + ": "), 0u) << got.message();
            EXPECT_EQ(got.message().find('\n'), std::string::npos);
        }
    }
}

// What the hook writes into hook.json for an accepted MEMSCOPE_STEPS, the
// merge reads back; the value of issue 64 is refused on both sides.
TEST(HostileEnv, StepsTheHookAcceptsTheMergeAccepts) {
    for (const char* steps : {"0:2147483647", "5", "0:99999999999999999999999"}) {
        auto parsed = parseHookSteps(steps);
        if (!parsed) {
            EXPECT_STREQ(steps, "0:99999999999999999999999");
            continue;
        }
        const std::string json = R"({"format": "memscope-hook", "version": 2, "pid": 1,
            "phases": [], "histories": [], "capture": {"steps": [)" +
                                 std::to_string(parsed->first) + ", " +
                                 std::to_string(parsed->second) + "]}}";
        auto sidecar = parseHookSidecar(json, "hook.json");
        ASSERT_TRUE(sidecar.ok()) << sidecar.message();
        ASSERT_TRUE(sidecar->capture_steps.has_value());
        EXPECT_EQ(sidecar->capture_steps->first, parsed->first);
        EXPECT_EQ(sidecar->capture_steps->second, parsed->second);
    }
}

// Class 2: nothing under the output folder is written through a symlink, and
// the merge reads and removes only in folders of this user's, and merges
// only a trace that is this run's.
namespace {

std::string readAll(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), {});
}

// Every message a merge gave: its errors and its traces' warnings.
std::string messagesOf(const RecordingFinish& done) {
    std::string all;
    for (const std::string& e : done.errors) all += e + "\n";
    for (const FinishedTrace& t : done.traces)
        for (const LoadWarning& w : t.warnings) all += w.message + "\n";
    return all;
}

bool writeTracerTrace(const fs::path& p, int64_t pid, int64_t wall_ns) {
    Trace t;
    t.metadata.source_format = "memscope-cupti";
    t.metadata.pid = pid;
    t.metadata.setProperty("clock.wall_ns", std::to_string(wall_ns));
    t.events.resize(2);
    t.events[0] = {};
    t.events[0].time = 1000;
    t.events[0].address = 0x7f0000000000ull;
    t.events[0].size = 512;
    t.events[0].kind = EventKind::Alloc;
    t.events[1] = t.events[0];
    t.events[1].time = 2000;
    t.events[1].kind = EventKind::FreeCompleted;
    return writeNativeTrace(t, p.string()).ok();
}

const char* kLoggedHookJson =
    R"({"format": "memscope-hook", "version": 2, "pid": 4242, "phases": [], "histories": [],
        "log": "log.jsonl", "open_phases": []})";

}  // namespace

TEST_F(HostileIo, OwnFoldersAreMadeOrCheckedNeverFollowed) {
    const fs::path mine = dir_ / "mine";
    ASSERT_TRUE(makeOwnFolder(mine.string()).ok());
    EXPECT_TRUE(makeOwnFolder(mine.string()).ok());  // again: it is ours
    struct stat st {};
    ASSERT_EQ(::stat(mine.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    fs::create_directories(dir_ / "elsewhere");
    fs::create_directory_symlink(dir_ / "elsewhere", dir_ / "link");
    auto linked = makeOwnFolder((dir_ / "link").string());
    ASSERT_FALSE(linked.ok());
    EXPECT_NE(linked.message().find("is a symlink"), std::string::npos) << linked.message();
    write(dir_ / "file", "x");
    EXPECT_FALSE(checkOwnFolder((dir_ / "file").string()).ok());
}

TEST_F(HostileIo, ExclusiveCreateNeverWritesThroughASymlink) {
    write(dir_ / "victim", "precious");
    fs::create_symlink(dir_ / "victim", dir_ / "hook.json.tmp");
    auto fd = createExclusive((dir_ / "hook.json.tmp").string());
    ASSERT_FALSE(fd.ok());
    EXPECT_NE(fd.message().find("not written through"), std::string::npos) << fd.message();
    EXPECT_EQ(readAll(dir_ / "victim"), "precious");
    // A dangling symlink neither: the file it names is not created.
    fs::create_symlink(dir_ / "new-victim", dir_ / "log.jsonl");
    EXPECT_FALSE(createExclusive((dir_ / "log.jsonl").string()).ok());
    EXPECT_FALSE(fs::exists(dir_ / "new-victim"));
}

TEST_F(HostileIo, TraceWriterDoesNotFollowAPlantedSymlink) {
    write(dir_ / "victim", "precious");
    fs::create_symlink(dir_ / "victim", dir_ / "memscope-4242.memscope");
    // Written beside and renamed over the link (the link replaced), or
    // refused: never through it.
    (void)hostile::writeNativeEvents((dir_ / "memscope-4242.memscope").string(), 10, 1024);
    EXPECT_EQ(readAll(dir_ / "victim"), "precious");
    // The streaming writer the tracer uses (no temporary): refused at the link.
    fs::create_symlink(dir_ / "victim", dir_ / "memscope-4243.memscope");
    auto direct = NativeTraceWriter::create((dir_ / "memscope-4243.memscope").string(), {});
    ASSERT_FALSE(direct.ok());
    EXPECT_EQ(readAll(dir_ / "victim"), "precious");
}

TEST_F(HostileIo, MergeDoesNotFollowASymlinkedHookFolderNorRemoveThere) {
    PluginRegistry registry;
    const fs::path elsewhere = dir_ / "elsewhere";
    write(elsewhere / "4242" / "hook.json", kHookJson);
    write(elsewhere / "4242" / "data", "someone else's");
    fs::create_directories(dir_ / "out");
    fs::create_directory_symlink(elsewhere, dir_ / "out" / kHookFolderName);
    auto done = finishRecording((dir_ / "out").string(), registry);
    ASSERT_EQ(done.errors.size(), 1u) << messagesOf(done);
    EXPECT_NE(done.errors[0].find("is a symlink"), std::string::npos) << done.errors[0];
    EXPECT_EQ(done.errors[0].find('\n'), std::string::npos);
    EXPECT_TRUE(fs::exists(elsewhere / "4242" / "data"));
    EXPECT_TRUE(fs::exists(elsewhere / "4242" / "hook.json"));
    EXPECT_TRUE(unmergedProcesses((dir_ / "out").string()).empty());
}

TEST_F(HostileIo, MergeDoesNotFollowASymlinkedProcessFolder) {
    PluginRegistry registry;
    const fs::path elsewhere = dir_ / "elsewhere";
    write(elsewhere / "hook.json", kHookJson);
    fs::create_directories(dir_ / "out" / kHookFolderName);
    fs::create_directory_symlink(elsewhere, dir_ / "out" / kHookFolderName / "4242");
    auto done = finishRecording((dir_ / "out").string(), registry);
    EXPECT_TRUE(done.traces.empty());
    EXPECT_TRUE(fs::exists(elsewhere / "hook.json"));
}

TEST_F(HostileIo, PlantedTracerSymlinkIsNotMergedAsThisRunsTrace) {
    PluginRegistry registry;
    registerBuiltinPlugins(registry);
    const fs::path out = dir_ / "out";
    write(out / kHookFolderName / "4242" / "hook.json", kLoggedHookJson);
    write(out / kHookFolderName / "4242" / "log.jsonl", "");
    ASSERT_TRUE(writeTracerTrace(dir_ / "other-run.memscope", 4242, 1));
    const std::string before = readAll(dir_ / "other-run.memscope");
    fs::create_symlink(dir_ / "other-run.memscope", out / "memscope-4242.memscope");
    auto done = finishRecording(out.string(), registry);
    const std::string all = messagesOf(done);
    EXPECT_NE(all.find("memscope-4242.memscope was not merged as process 4242's trace: it is a "
                       "symlink"),
              std::string::npos)
        << all;
    EXPECT_EQ(readAll(dir_ / "other-run.memscope"), before);  // nothing written there
}

TEST_F(HostileIo, HardLinkedTracerTraceIsNotMerged) {
    PluginRegistry registry;
    registerBuiltinPlugins(registry);
    const fs::path out = dir_ / "out";
    write(out / kHookFolderName / "4242" / "hook.json", kLoggedHookJson);
    write(out / kHookFolderName / "4242" / "log.jsonl", "");
    ASSERT_TRUE(writeTracerTrace(dir_ / "other-run.memscope", 4242, 1));
    fs::create_hard_link(dir_ / "other-run.memscope", out / "memscope-4242.memscope");
    auto done = finishRecording(out.string(), registry);
    const std::string all = messagesOf(done);
    EXPECT_NE(all.find("it is a hard link"), std::string::npos) << all;
}

TEST_F(HostileIo, TraceOfAnotherPidOrAnEarlierRunIsNotMerged) {
    PluginRegistry registry;
    registerBuiltinPlugins(registry);
    const fs::path out = dir_ / "out";
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    for (const auto& [pid_in_trace, wall, want] :
         std::vector<std::tuple<int64_t, int64_t, std::string>>{
             {999, now, "it is process 999's"},
             {4242, now - int64_t(3600) * 1'000'000'000, "begun before this recording started"}}) {
        fs::remove_all(out);
        write(out / kHookFolderName / "4242" / "hook.json", kLoggedHookJson);
        write(out / kHookFolderName / "4242" / "log.jsonl", "");
        ASSERT_TRUE(writeTracerTrace(out / "memscope-4242.memscope", pid_in_trace, wall));
        auto done = finishRecording(out.string(), registry, {}, now);
        const std::string all = messagesOf(done);
        EXPECT_NE(all.find(want), std::string::npos) << all;
    }
}
