// Drives the real memscope-cli binary on traces the test writes.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "memscope/native_format.h"

using namespace memscope;

namespace {

struct CliRun {
    int exit_code = -1;
    std::string out;
    std::string err;
};

CliRun runCli(const std::string& args) {
    const auto errPath = std::filesystem::temp_directory_path() / "memscope_cli_test.err";
    const std::string cmd = std::string(MEMSCOPE_CLI) + " " + args + " 2>" + errPath.string();
    CliRun r;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return r;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    const int status = pclose(p);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream e(errPath);
    r.err.assign(std::istreambuf_iterator<char>(e), {});
    return r;
}

std::string writeSampleTrace() {
    Trace t;
    t.metadata.name = "sample";
    const int64_t t0 = 1'700'000'000'000'000'000;
    auto ev = [&](int64_t dt, EventKind k, uint64_t addr, uint64_t size, Category c) {
        t.events.push_back(Event{t0 + dt, addr, size, {}, {}, 0, 0, k, c});
    };
    ev(0, EventKind::SegmentAlloc, 0x1000, 1 << 20, Category::Unknown);
    ev(1000, EventKind::Alloc, 0x1000, 100, Category::Parameter);
    ev(2000, EventKind::Alloc, 0x2000, 300, Category::Activation);  // the peak: 400
    ev(3000, EventKind::FreeRequested, 0x2000, 300, Category::Activation);
    ev(4000, EventKind::FreeCompleted, 0x2000, 300, Category::Activation);
    ev(5000, EventKind::Alloc, 0x3000, 50, Category::Gradient);
    const auto path = (std::filesystem::temp_directory_path() / "memscope_cli_sample.memscope").string();
    auto r = writeNativeTrace(t, path);
    EXPECT_TRUE(r.ok()) << r.message();
    return path;
}

}  // namespace

TEST(CliSummary, JsonOfANativeTraceWrittenByTheTest) {
    const std::string path = writeSampleTrace();
    const CliRun r = runCli("summary --json " + path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j["files"].size(), 1u);
    const auto& f = j["files"][0];
    EXPECT_EQ(f["path"], path);
    EXPECT_EQ(f["format"], "native");
    const auto& d = f["devices"]["0"];
    EXPECT_EQ(d["peak_active_bytes"], 400);
    EXPECT_EQ(d["peak_event_index"], 2);
    EXPECT_EQ(d["peak_time_us"], 1'700'000'000'000'000 + 2);
    EXPECT_EQ(d["final_active_bytes"], 150);
    EXPECT_EQ(d["reserved_bytes"], 1 << 20);
    EXPECT_TRUE(d["segments"].is_null());  // a native trace without end state
    EXPECT_EQ(d["trace_entries"], 6);
    EXPECT_EQ(d["alloc_count"], 3);
    EXPECT_EQ(d["free_completed_count"], 1);
    EXPECT_EQ(d["segment_alloc_count"], 1);
    EXPECT_EQ(d["oom_count"], 0);
    EXPECT_EQ(d["first_time_us"], 1'700'000'000'000'000);
    EXPECT_EQ(d["last_time_us"], 1'700'000'000'000'000 + 5);
    EXPECT_EQ(d["categories_at_peak"]["parameter"], 100);
    EXPECT_EQ(d["categories_at_peak"]["activation"], 300);
    EXPECT_EQ(d["categories_at_peak"]["gradient"], 0);
}

TEST(CliSummary, BadFileIsNamedAndTheOthersStillSummarized) {
    const std::string good = writeSampleTrace();
    const auto bad = (std::filesystem::temp_directory_path() / "memscope_cli_bad.bin").string();
    std::ofstream(bad) << "this is not a trace";
    const CliRun r = runCli("summary --json " + bad + " " + good + " /nonexistent/x.pickle");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("/nonexistent/x.pickle"), std::string::npos) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j["files"].size(), 1u);
    EXPECT_EQ(j["files"][0]["path"], good);
}

TEST(CliSummary, TableHelpAndUsageErrors) {
    const std::string path = writeSampleTrace();
    const CliRun table = runCli("summary " + path);
    EXPECT_EQ(table.exit_code, 0);
    EXPECT_NE(table.out.find("peak active"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("400 B"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("activation"), std::string::npos);
    EXPECT_EQ(runCli("summary --help").exit_code, 0);
    EXPECT_EQ(runCli("--help").exit_code, 0);
    EXPECT_EQ(runCli("summary").exit_code, 1);
    EXPECT_EQ(runCli("summary --frobnicate x").exit_code, 1);
    EXPECT_EQ(runCli("no-such-command").exit_code, 1);
}
