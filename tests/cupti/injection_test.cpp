// The injection library in a real process, without a GPU: NVTX ranges become
// phases, a killed or terminated process leaves a loadable trace, a forked
// child neither records nor hangs, no driver means one line on stderr, and
// `memscope-cli record` passes the command's exit code through.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "memscope/base/json_text.h"
#include "memscope/format/native_format.h"
#include "process_runner.h"

namespace memscope {
namespace {

namespace fs = std::filesystem;
using test::EnvList;
using test::Process;
using test::ProcessResult;
using namespace std::chrono_literals;

class InjectionTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::string pattern = (fs::temp_directory_path() / "memscope-cupti-test-XXXXXX").string();
        ASSERT_NE(mkdtemp(pattern.data()), nullptr);
        dir_ = pattern;
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }

    EnvList nvtxEnv() const {
        return {{"NVTX_INJECTION64_PATH", MEMSCOPE_CUPTI_LIBRARY},
                {"MEMSCOPE_OUTPUT_DIR", dir_.string()}};
    }

    std::vector<fs::path> traces() const {
        std::vector<fs::path> files;
        for (const auto& entry : fs::directory_iterator(dir_))
            if (entry.path().extension() == ".memscope") files.push_back(entry.path());
        return files;
    }

    Trace loadOnly(NativeReadReport* report = nullptr) const {
        const auto files = traces();
        EXPECT_EQ(files.size(), 1u);
        if (files.empty()) return Trace{};
        auto loaded = readNativeTrace(files.front().string(), {}, report);
        EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.message());
        return loaded.ok() ? std::move(loaded.value()) : Trace{};
    }

    static const Phase* phaseNamed(const Trace& trace, std::string_view name) {
        for (const Phase& p : trace.phases)
            if (trace.string(p.name) == name) return &p;
        return nullptr;
    }

    fs::path dir_;
};

TEST_F(InjectionTest, NvtxRangesBecomePhasesAndMarksAnnotations) {
    Process process({MEMSCOPE_TEST_DRIVER, "phases"}, nvtxEnv());
    const int pid = process.pid();
    const ProcessResult r = process.finish(20s);
    ASSERT_TRUE(WIFEXITED(r.status)) << r.err;
    EXPECT_EQ(WEXITSTATUS(r.status), 0);
    EXPECT_EQ(r.out, "done\n");
    EXPECT_EQ(r.err, "");  // a working tracer is silent

    ASSERT_EQ(traces().size(), 1u);
    EXPECT_EQ(traces().front().filename().string(),
              "memscope-" + std::to_string(pid) + ".memscope");
    const Trace trace = loadOnly();
    EXPECT_EQ(trace.metadata.pid, pid);
    // Named after the program (run_name.h), its command line kept exactly.
    EXPECT_EQ(trace.metadata.name, "memscope_cupti_test_driver");
    std::string argv = "[";
    appendJsonString(argv, MEMSCOPE_TEST_DRIVER);
    argv += ",\"phases\"]";
    ASSERT_NE(trace.metadata.property("argv"), nullptr);
    EXPECT_EQ(*trace.metadata.property("argv"), argv);
    ASSERT_NE(trace.metadata.property("command"), nullptr);
    EXPECT_EQ(*trace.metadata.property("command"), std::string(MEMSCOPE_TEST_DRIVER) + " phases");
    EXPECT_NE(trace.metadata.property("clock.cupti_ns"), nullptr);
    EXPECT_NE(trace.metadata.property("clock.wall_ns"), nullptr);

    const Phase* step = phaseNamed(trace, "step 1");
    const Phase* forward = phaseNamed(trace, "forward");
    const Phase* backward = phaseNamed(trace, "backward");
    const Phase* loading = phaseNamed(trace, "data loading");
    const Phase* step2 = phaseNamed(trace, "step 2");
    const Phase* optimizer = phaseNamed(trace, "optimizer");
    ASSERT_TRUE(step && forward && backward && loading && step2 && optimizer);
    EXPECT_EQ(trace.phases.size(), 6u);
    EXPECT_EQ(step->kind, PhaseKind::Step);
    EXPECT_EQ(step->step, 1);
    EXPECT_EQ(forward->kind, PhaseKind::Forward);
    EXPECT_EQ(backward->kind, PhaseKind::Backward);
    EXPECT_EQ(optimizer->kind, PhaseKind::Optimizer);
    EXPECT_EQ(loading->kind, PhaseKind::Range);
    EXPECT_EQ(step2->step, 2);
    // Nesting: pushed ranges know their parent, started ranges have none.
    EXPECT_EQ(trace.phase(forward->parent), step);
    EXPECT_EQ(trace.phase(backward->parent), step);
    EXPECT_TRUE(step->parent.isNull());
    EXPECT_TRUE(loading->parent.isNull());
    // All ended, in order.
    EXPECT_LE(step->start, forward->start);
    EXPECT_LE(forward->end, backward->start);
    EXPECT_LE(backward->end, step->end);
    EXPECT_GT(step->end, step->start);

    // The checkpoint mark, then the NCCL domain's ranges: annotations only.
    ASSERT_EQ(trace.annotations.size(), 5u);
    EXPECT_EQ(trace.string(trace.annotations[0].name), "checkpoint");
    EXPECT_EQ(trace.annotations[0].stage, AnnotationStage::Instant);
    EXPECT_GE(trace.annotations[0].time, forward->start);
    EXPECT_LE(trace.annotations[0].time, forward->end);
}

TEST_F(InjectionTest, NamedDomainRangesAreAnnotationsNotPhases) {
    const ProcessResult r = test::runProcess({MEMSCOPE_TEST_DRIVER, "phases"}, nvtxEnv(), 20s);
    ASSERT_TRUE(WIFEXITED(r.status)) << r.err;
    EXPECT_EQ(r.err, "");  // also: NVTX got consistent push/pop levels and a range id
    const Trace trace = loadOnly();
    EXPECT_EQ(phaseNamed(trace, "AllReduce"), nullptr);
    EXPECT_EQ(phaseNamed(trace, "NCCL: AllReduce"), nullptr);
    EXPECT_EQ(phaseNamed(trace, "AllGather"), nullptr);
    // The default domain's *Ex push is a phase, and the domain ranges inside
    // it do not take its place.
    const Phase* optimizer = phaseNamed(trace, "optimizer");
    ASSERT_NE(optimizer, nullptr);
    EXPECT_EQ(optimizer->kind, PhaseKind::Optimizer);

    std::vector<std::pair<std::string, AnnotationStage>> seen;
    for (const Annotation& a : trace.annotations) {
        if (a.stage == AnnotationStage::Instant) continue;
        seen.emplace_back(std::string(trace.string(a.name)), a.stage);
        EXPECT_GE(a.time, optimizer->start);
        EXPECT_LE(a.time, optimizer->end);
    }
    const std::vector<std::pair<std::string, AnnotationStage>> expected = {
        {"NCCL: AllReduce", AnnotationStage::Start},
        {"NCCL: AllReduce", AnnotationStage::End},
        {"NCCL: AllGather", AnnotationStage::Start},
        {"NCCL: AllGather", AnnotationStage::End},
    };
    EXPECT_EQ(seen, expected);
}

TEST_F(InjectionTest, RankAndLocalRankAreInTheFileName) {
    EnvList env = nvtxEnv();
    env.push_back({"RANK", "3"});
    env.push_back({"LOCAL_RANK", "1"});
    Process process({MEMSCOPE_TEST_DRIVER, "phases"}, env);
    const int pid = process.pid();
    const ProcessResult r = process.finish(20s);
    ASSERT_TRUE(WIFEXITED(r.status));
    ASSERT_EQ(traces().size(), 1u);
    EXPECT_EQ(traces().front().filename().string(),
              "memscope-" + std::to_string(pid) + "-rank3-local1.memscope");
    const Trace trace = loadOnly();
    EXPECT_EQ(trace.metadata.rank, 3);
    EXPECT_EQ(trace.metadata.name, "memscope_cupti_test_driver rank 3");
}

TEST_F(InjectionTest, KilledMidRunLeavesALoadableTrace) {
    Process process({MEMSCOPE_TEST_DRIVER, "hang"}, nvtxEnv());
    ASSERT_TRUE(process.waitForOutput("ready", 10s));
    // The periodic flush (about every 500 ms) writes what happened without any
    // close; wait for it (generously: CI machines are busy), then kill.
    bool flushed = false;
    for (auto waited = 0ms; !flushed && waited < 10s; waited += 100ms) {
        std::this_thread::sleep_for(100ms);
        const auto files = traces();
        if (files.size() != 1) continue;
        auto partial = readNativeTrace(files.front().string());
        flushed = partial.ok() && phaseNamed(*partial, "forward") && !partial->annotations.empty();
    }
    EXPECT_TRUE(flushed);
    kill(process.pid(), SIGKILL);
    const ProcessResult r = process.finish(10s);
    ASSERT_TRUE(WIFSIGNALED(r.status));

    const Trace trace = loadOnly();
    EXPECT_NE(phaseNamed(trace, "step 1"), nullptr);
    EXPECT_NE(phaseNamed(trace, "forward"), nullptr);
    ASSERT_EQ(trace.annotations.size(), 1u);
    EXPECT_EQ(trace.string(trace.annotations[0].name), "before the kill");
}

TEST_F(InjectionTest, SigtermClosesTheTraceAndTheProcessStillDiesOfIt) {
    Process process({MEMSCOPE_TEST_DRIVER, "hang"}, nvtxEnv());
    ASSERT_TRUE(process.waitForOutput("ready", 10s));
    kill(process.pid(), SIGTERM);  // at once: no periodic flush has run yet
    const ProcessResult r = process.finish(10s);
    ASSERT_TRUE(WIFSIGNALED(r.status)) << r.err;
    EXPECT_EQ(WTERMSIG(r.status), SIGTERM);

    NativeReadReport report;
    const Trace trace = loadOnly(&report);
    EXPECT_EQ(report.bytes_lost, 0u) << report.problem;
    EXPECT_NE(phaseNamed(trace, "forward"), nullptr);
    EXPECT_EQ(trace.annotations.size(), 1u);
}

TEST_F(InjectionTest, ForkedChildNeitherRecordsNorHangs) {
    const ProcessResult r = test::runProcess({MEMSCOPE_TEST_DRIVER, "fork"}, nvtxEnv(), 20s);
    ASSERT_TRUE(WIFEXITED(r.status)) << r.err;
    EXPECT_EQ(WEXITSTATUS(r.status), 0);
    EXPECT_EQ(r.out, "child 0\n");
    const Trace trace = loadOnly();  // the parent's only
    EXPECT_NE(phaseNamed(trace, "parent"), nullptr);
    EXPECT_EQ(phaseNamed(trace, "child"), nullptr);
}

TEST_F(InjectionTest, WithoutADriverItSaysSoOnceAndTheProgramRunsOn) {
    const ProcessResult r =
        test::runProcess({MEMSCOPE_TEST_DRIVER, "driver", MEMSCOPE_CUPTI_LIBRARY},
                         {{"MEMSCOPE_OUTPUT_DIR", dir_.string()}}, 20s);
    ASSERT_TRUE(WIFEXITED(r.status)) << r.err;
    EXPECT_EQ(WEXITSTATUS(r.status), 7);
    // 1 even when refused, as NVIDIA's samples: 0 can make cuInit fail.
    EXPECT_EQ(r.out, "still running 1 1\n");
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("memscope: CUPTI is not available"), std::string::npos) << r.err;
    EXPECT_TRUE(traces().empty());
}

TEST_F(InjectionTest, TraceIsClosedBeforeCudasOwnExitTeardown) {
    // NVTX first (the trace is opened), then CUDA's teardown is registered,
    // then cuInit calls InitializeInjection: our exit handler must run first.
    const ProcessResult r = test::runProcess(
        {MEMSCOPE_TEST_DRIVER, "exit-order", MEMSCOPE_CUPTI_LIBRARY}, nvtxEnv(), 20s);
    ASSERT_TRUE(WIFEXITED(r.status)) << r.err;
    EXPECT_EQ(WEXITSTATUS(r.status), 0) << r.err;
    EXPECT_NE(r.out.find("initialized 1\n"), std::string::npos) << r.out;
    const auto at = r.out.find("teardown saw ");
    ASSERT_NE(at, std::string::npos) << r.out;
    const long seen = std::stol(r.out.substr(at + 13));
    ASSERT_EQ(traces().size(), 1u);
    EXPECT_EQ(seen, long(fs::file_size(traces().front())));
    NativeReadReport report;
    const Trace trace = loadOnly(&report);
    EXPECT_EQ(report.bytes_lost, 0u) << report.problem;
    const Phase* phase = phaseNamed(trace, "before cuda");
    ASSERT_NE(phase, nullptr);
    EXPECT_GT(phase->end, phase->start);  // ended and closed
}

TEST_F(InjectionTest, UniqueRangeNamesAreCappedAndMemoryStaysBounded) {
    constexpr long kRanges = 200'000;
    const ProcessResult r =
        test::runProcess({MEMSCOPE_TEST_DRIVER, "names", std::to_string(kRanges)}, nvtxEnv(), 60s);
    ASSERT_TRUE(WIFEXITED(r.status)) << r.err;
    EXPECT_EQ(WEXITSTATUS(r.status), 0);
    // Said once on stderr.
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    const auto at = r.out.find("rss_growth_kb ");
    ASSERT_NE(at, std::string::npos) << r.out;
    const long growth_kb = std::stol(r.out.substr(at + 14));
    std::printf("RSS growth for %ld unique range names: %ld kB\n", kRanges, growth_kb);
    // Measured: ~82 MB without the cap, ~33 MB with it (what remains is per
    // range and bounded in time: the writer's pending chunk between flushes,
    // the phase index within its horizon). A loose bound, not a benchmark.
    EXPECT_LT(growth_kb, 64 * 1024);

    const Trace trace = loadOnly();
    EXPECT_EQ(trace.phases.size(), size_t(kRanges + 1));  // every range is still a phase
    std::printf("distinct strings in the trace: %zu\n", trace.strings.size());
    // 50,000 names as given, then the 300 "aten::opN" prefix classes.
    EXPECT_LE(trace.strings.size(), 50'000u + 300u + 100u);
    EXPECT_GE(trace.strings.size(), 50'000u);
    EXPECT_NE(trace.metadata.property("recorder.nvtx_names_capped"), nullptr);
    if (const std::string* capped = trace.metadata.property("recorder.nvtx_names_capped")) {
        EXPECT_EQ(*capped, std::to_string(kRanges + 1 - 50'000));
    }
    int cap_markers = 0;
    for (const EventAttribute& a : trace.attributes)
        cap_markers += trace.string(a.key) == "nvtx_name_cap_reached";
    EXPECT_EQ(cap_markers, 1);
    // The last range is named by its class.
    EXPECT_EQ(trace.string(trace.phases.back().name),
              "aten::op" + std::to_string((kRanges - 1) % 300));
}

TEST_F(InjectionTest, RecordPassesTheExitCodeThroughWithANote) {
    const ProcessResult r = test::runProcess(
        {MEMSCOPE_CLI, "record", "-o", dir_.string(), "--", "/bin/sh", "-c", "exit 3"}, {}, 20s);
    ASSERT_TRUE(WIFEXITED(r.status)) << r.err;
    EXPECT_EQ(WEXITSTATUS(r.status), 3);
    const std::string all = r.out + r.err;
    EXPECT_TRUE(all.find("no CUDA activity was recorded") != std::string::npos ||
                all.find("nothing was recorded") != std::string::npos)
        << all;
}

TEST_F(InjectionTest, RecordFindsTheLibraryAndSummarizesTheTrace) {
    const ProcessResult r = test::runProcess(
        {MEMSCOPE_CLI, "record", "-o", dir_.string(), "--", MEMSCOPE_TEST_DRIVER, "phases"}, {},
        30s);
    ASSERT_TRUE(WIFEXITED(r.status)) << r.err;
    EXPECT_EQ(WEXITSTATUS(r.status), 0) << r.err;
    ASSERT_EQ(traces().size(), 1u) << r.out << r.err;
    const std::string all = r.out + r.err;
    EXPECT_NE(all.find(traces().front().filename().string()), std::string::npos) << all;
    EXPECT_NE(all.find("6 phases"), std::string::npos) << all;
    EXPECT_NE(all.find("memscope_cupti_test_driver: pid "), std::string::npos) << all;
}

TEST_F(InjectionTest, RecordForwardsSigtermAndReportsTheSignal) {
    Process record(
        {MEMSCOPE_CLI, "record", "-o", dir_.string(), "--", MEMSCOPE_TEST_DRIVER, "hang"}, {});
    ASSERT_TRUE(record.waitForOutput("ready", 10s));
    kill(record.pid(), SIGTERM);  // as a batch scheduler would: to the recorder only
    const ProcessResult r = record.finish(20s);
    ASSERT_TRUE(WIFEXITED(r.status)) << r.err;
    EXPECT_EQ(WEXITSTATUS(r.status), 128 + SIGTERM);
    // The command closed its trace on the way out and the recorder summarized it.
    EXPECT_NE(r.out.find("2 phases, 1 annotations"), std::string::npos) << r.out << r.err;
    NativeReadReport report;
    loadOnly(&report);
    EXPECT_EQ(report.bytes_lost, 0u) << report.problem;
}

TEST_F(InjectionTest, RecordHelp) {
    const ProcessResult r = test::runProcess({MEMSCOPE_CLI, "record", "--help"}, {}, 10s);
    ASSERT_TRUE(WIFEXITED(r.status));
    EXPECT_EQ(WEXITSTATUS(r.status), 0);
    EXPECT_NE(r.out.find("--tensor-level"), std::string::npos);
}

TEST_F(InjectionTest, RecordWithoutACommandIsAUsageError) {
    const ProcessResult r =
        test::runProcess({MEMSCOPE_CLI, "record", "-o", dir_.string()}, {}, 10s);
    ASSERT_TRUE(WIFEXITED(r.status));
    EXPECT_EQ(WEXITSTATUS(r.status), 1);
}

}  // namespace
}  // namespace memscope
