// Drives the real memscope-cli binary on traces the test writes, each test in
// a folder of its own (tests run in parallel).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../core/analysis_test_util.h"
#include "cli_test_util.h"
#include "memscope/analysis/compare_table.h"
#include "memscope/format/native_format.h"
#include "memscope/open/open_run.h"
#include "memscope/recording/recording_merge.h"
#include "memscope/report/compare_report.h"
#include "memscope_test/event_builder.h"

using namespace memscope;
using memscope::testsupport::makeEvent;

namespace {

namespace fs = std::filesystem;

using clitest::CliRun;

class Cli : public clitest::ScratchFolderTest {
protected:
    Cli() : ScratchFolderTest("memscope-cli-test") {}

    CliRun run(const std::string& args) const {
        return clitest::runCommand(std::string(MEMSCOPE_CLI) + " " + args, file("stderr.txt"));
    }

    std::string writeSampleTrace() const {
        Trace t;
        t.metadata.name = "sample";
        const int64_t t0 = 1'700'000'000'000'000'000;
        auto ev = [&](int64_t dt, EventKind k, uint64_t addr, uint64_t size, Category c) {
            t.events.push_back(makeEvent(t0 + dt, k, addr, size, c));
        };
        ev(0, EventKind::SegmentAlloc, 0x1000, 1 << 20, Category::Unknown);
        ev(1000, EventKind::Alloc, 0x1000, 100, Category::Parameter);
        ev(2000, EventKind::Alloc, 0x2000, 300, Category::Activation);  // the peak: 400
        ev(3000, EventKind::FreeRequested, 0x2000, 300, Category::Activation);
        ev(4000, EventKind::FreeCompleted, 0x2000, 300, Category::Activation);
        ev(5000, EventKind::Alloc, 0x3000, 50, Category::Gradient);
        const std::string path = file("sample.memscope");
        auto r = writeNativeTrace(t, path);
        EXPECT_TRUE(r.ok()) << r.message();
        return path;
    }

    // Four policy runs with phases and recorded metrics, as the trainer writes them.
    std::vector<std::string> writePolicyRuns() const {
        std::vector<std::string> paths;
        const struct {
            const char* policy;
            uint64_t act, recompute;
        } runs[] = {{"full", 5000, 0},
                    {"block", 1000, 3000},
                    {"selective", 3000, 500},
                    {"opt-in-bwd", 5000, 0}};
        for (const auto& r : runs) {
            Trace t = testutil::trainingRun(std::string("mlp-") + r.policy, r.policy, r.act,
                                            r.recompute, 3, std::string(r.policy) == "opt-in-bwd");
            paths.push_back(file(std::string("mlp-") + r.policy + ".memscope"));
            EXPECT_TRUE(writeNativeTrace(t, paths.back()).ok());
        }
        return paths;
    }

    // One process as `record` merges it: the hook's command line (sys.argv
    // and sys.orig_argv) and CUPTI's records; the merge names the run.
    std::string writeRecordedRun(const std::string& name, int64_t pid, int rank,
                                 std::vector<std::string> orig_argv, uint64_t peak) const {
        const int64_t t0 = 1'700'000'000'000'000'000;
        HookSidecar hook;
        hook.pid = pid;
        hook.rank = rank;
        hook.orig_argv = orig_argv;
        hook.argv.assign(orig_argv.begin() + 1, orig_argv.end());
        hook.phases.push_back({HookPhaseKind::Step, 0, t0, t0 + 10'000});
        Trace cupti;
        cupti.metadata.source_format = "memscope-cupti";
        cupti.metadata.pid = pid;
        cupti.metadata.rank = rank;
        cupti.events.push_back(makeEvent(t0 + 1000, EventKind::Alloc, 0x1000, peak));
        cupti.events.push_back(makeEvent(t0 + 2000, EventKind::FreeCompleted, 0x1000, peak));
        RecordingParts parts;
        parts.hook = std::move(hook);
        parts.cupti = std::move(cupti);
        auto merged = mergeRecording(std::move(parts));
        EXPECT_TRUE(merged.ok()) << merged.message();
        const std::string path = file(name);
        if (merged.ok()) {
            EXPECT_TRUE(writeNativeTrace(*merged, path).ok());
        }
        return path;
    }
};

std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += " " + x;
    return s;
}

}  // namespace

TEST_F(Cli, SummaryJsonOfANativeTraceWrittenByTheTest) {
    const std::string path = writeSampleTrace();
    const CliRun r = run("summary --json " + path);
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

TEST_F(Cli, SummaryTimingsNameEveryStageOnStderrAndLeaveTheJsonAlone) {
    const std::string path = writeSampleTrace();
    const CliRun plain = run("summary --json " + path);
    const CliRun timed = run("summary --json --timings " + path);
    ASSERT_EQ(timed.exit_code, 0) << timed.err;
    EXPECT_EQ(timed.out, plain.out);
    EXPECT_EQ(plain.err.find("timings:"), std::string::npos) << plain.err;
    const size_t at = timed.err.find("timings: ");
    ASSERT_NE(at, std::string::npos) << timed.err;
    // The allocator model is replayed beside inference (its own line, before
    // inference ends) and completed after the summary.
    EXPECT_NE(timed.err.find("allocator model (beside inference) ", at), std::string::npos)
        << timed.err;
    size_t last = at;
    for (const char* stage : {"import ", "inference ", "timeline ", "summary ", "allocator model ",
                              "report ", "wall "}) {
        const size_t found = timed.err.find(stage, last);
        ASSERT_NE(found, std::string::npos) << stage << " in order in " << timed.err;
        last = found;
    }
}

TEST_F(Cli, SummaryOfTheSameFileTwiceGivesEachItsOwnAllocatorModel) {
    // Each open replays its own allocator model beside inference: the same
    // file named twice is two opens, and both reports carry the whole model.
    const std::string path = writeSampleTrace();
    const CliRun r = run("summary --json " + path + " " + path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j["files"].size(), 2u);
    const auto& a = j["files"][0]["devices"]["0"];
    const auto& b = j["files"][1]["devices"]["0"];
    ASSERT_TRUE(a.contains("allocator_model")) << a.dump();
    EXPECT_EQ(a["allocator_model"], b["allocator_model"]);
    EXPECT_EQ(a["allocator_model"]["reserved_peak_bytes"], 2 << 20);  // one 2 MiB small segment
}

TEST_F(Cli, SummaryBadFileIsNamedAndTheOthersStillSummarized) {
    const std::string good = writeSampleTrace();
    const std::string bad = file("bad.bin");
    std::ofstream(bad) << "this is not a trace";
    const CliRun r = run("summary --json " + bad + " " + good + " /nonexistent/x.pickle");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("/nonexistent/x.pickle"), std::string::npos) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j["files"].size(), 1u);
    EXPECT_EQ(j["files"][0]["path"], good);
}

TEST_F(Cli, SummaryTableHelpAndUsageErrors) {
    const std::string path = writeSampleTrace();
    const CliRun table = run("summary " + path);
    EXPECT_EQ(table.exit_code, 0);
    EXPECT_NE(table.out.find("peak active"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("400 B"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("activation"), std::string::npos);
    EXPECT_EQ(run("summary --help").exit_code, 0);
    EXPECT_EQ(run("--help").exit_code, 0);
    EXPECT_EQ(run("summary").exit_code, 1);
    EXPECT_EQ(run("summary --frobnicate x").exit_code, 1);
    EXPECT_EQ(run("no-such-command").exit_code, 1);
}

// A 1000-byte segment with two 300-byte holes between 400 live bytes, then an
// OOM asking for 500 bytes with 64 bytes free on the device: fragmentation.
static std::string writeOomTrace(const std::string& path) {
    Trace t;
    const int64_t t0 = 1'700'000'000'000'000'000;
    auto ev = [&](int64_t dt, EventKind k, uint64_t addr, uint64_t size, Category c) {
        t.events.push_back(makeEvent(t0 + dt, k, addr, size, c));
    };
    ev(0, EventKind::SegmentAlloc, 0x10000, 1000, Category::Unknown);
    ev(1000, EventKind::Alloc, 0x10000, 300, Category::Temporary);
    ev(2000, EventKind::Alloc, 0x10000 + 300, 100, Category::Parameter);
    ev(3000, EventKind::Alloc, 0x10000 + 400, 300, Category::Temporary);
    ev(4000, EventKind::Alloc, 0x10000 + 700, 300, Category::Activation);
    ev(5000, EventKind::FreeCompleted, 0x10000, 300, Category::Temporary);
    ev(6000, EventKind::FreeCompleted, 0x10000 + 400, 300, Category::Temporary);
    ev(2'000'000, EventKind::Oom, 0, 500, Category::Unknown);
    t.attributes.push_back(EventAttribute{7, t.internString("device_free"), t.internString("64")});
    auto r = writeNativeTrace(t, path);
    EXPECT_TRUE(r.ok()) << r.message();
    return path;
}

TEST_F(Cli, SummaryExplainsAnOutOfMemoryInWordsAndJson) {
    const std::string path = writeOomTrace(file("oom.memscope"));
    const CliRun table = run("summary " + path);
    ASSERT_EQ(table.exit_code, 0) << table.err;
    for (const char* text :
         {"out of memory on device 0 at 0.002 s (event 7)", "asked for          500 B",
          "device free        64 B", "reserved           1000 B, 600 B of it free in the cache",
          "active             400 B", "largest free block 300 B",
          "verdict            fragmentation: the cache held 600 B free", "alive by category",
          "parameter        100 B", "activation       300 B"})
        EXPECT_NE(table.out.find(text), std::string::npos) << text << "\n" << table.out;

    const CliRun r = run("summary --json " + path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto d = nlohmann::json::parse(r.out)["files"][0]["devices"]["0"];
    EXPECT_EQ(d["oom_count"], 1);
    ASSERT_EQ(d["ooms"].size(), 1u);
    const auto& o = d["ooms"][0];
    EXPECT_EQ(o["event_index"], 7);
    EXPECT_EQ(o["time_us"], 1'700'000'000'000'000 + 2000);
    EXPECT_EQ(o["since_start_us"], 2000);
    EXPECT_EQ(o["requested_bytes"], 500);
    EXPECT_EQ(o["device_free_bytes"], 64);
    EXPECT_EQ(o["reserved_bytes"], 1000);
    EXPECT_EQ(o["cached_free_bytes"], 600);
    EXPECT_EQ(o["active_bytes"], 400);
    EXPECT_EQ(o["largest_free_block_bytes"], 300);
    EXPECT_EQ(o["verdict"], "fragmentation");
    EXPECT_EQ(o["by_category"]["parameter"], 100);
    EXPECT_EQ(o["by_category"]["activation"], 300);
    EXPECT_EQ(o["category_sources"]["activation"], "recorded");
    EXPECT_TRUE(o["phase"].is_null());
    EXPECT_FALSE(d.contains("end_state"));
}

TEST_F(Cli, SummaryOfTheRealOomSnapshot) {
    const fs::path snap = fs::path(MEMSCOPE_FIXTURES_DIR) / "snapshots" /
                          "expandable_map_unmap_oom_3dev_cpp_frames__code_location.pickle";
    if (!fs::exists(snap)) GTEST_SKIP() << "fixtures folder missing: " << MEMSCOPE_FIXTURES_DIR;
    const CliRun table = run("summary " + snap.string());
    ASSERT_EQ(table.exit_code, 0) << table.err;
    for (const char* text : {"out of memory on device 1 at 1.451 s", "asked for          4.94 GiB",
                             "device free        91.2 MiB", "active             78.3 GiB",
                             "verdict            memory full"})
        EXPECT_NE(table.out.find(text), std::string::npos) << text << "\n" << table.out;
    const auto devices =
        nlohmann::json::parse(run("summary --json " + snap.string()).out)["files"][0]["devices"];
    EXPECT_TRUE(devices["0"]["ooms"].empty());
    ASSERT_EQ(devices["1"]["ooms"].size(), 1u);
    EXPECT_EQ(devices["1"]["ooms"][0]["requested_bytes"], 5308694528);
    EXPECT_EQ(devices["1"]["ooms"][0]["device_free_bytes"], 95682560);
    EXPECT_EQ(devices["1"]["ooms"][0]["verdict"], "memory full");

    const fs::path legacy = fs::path(MEMSCOPE_FIXTURES_DIR) / "snapshots" /
                            "legacy_block_history_oom__LLM-inference.pickle";
    const auto end = nlohmann::json::parse(
        run("summary --json " + legacy.string()).out)["files"][0]["devices"]["0"];
    EXPECT_TRUE(end["ooms"].empty());
    EXPECT_EQ(end["end_state"]["reserved_bytes"], 11844714496);
    EXPECT_EQ(end["end_state"]["largest_free_block_bytes"], 2080768);
    EXPECT_TRUE(end["end_state"]["requested_bytes"].is_null());
}

TEST_F(Cli, SummaryJsonHasPeaksByPhaseAndStep) {
    const auto paths = writePolicyRuns();
    const CliRun r = run("summary --json" + join(paths));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j["files"].size(), 4u);
    for (const auto& f : j["files"]) {
        const auto& d = f["devices"]["0"];
        const auto& phases = d["peaks_by_phase"];
        ASSERT_TRUE(phases.contains("forward")) << f["path"];
        ASSERT_TRUE(phases.contains("backward"));
        int64_t highest = 0;
        for (const auto& [name, p] : phases.items()) {
            highest = std::max(highest, p["bytes"].get<int64_t>());
            EXPECT_EQ(p["increase_bytes"].get<int64_t>(),
                      p["bytes"].get<int64_t>() - p["start_bytes"].get<int64_t>());
            EXPECT_TRUE(p["time_us"].is_number());
        }
        // The largest phase peak is the device's peak.
        EXPECT_EQ(highest, d["peak_active_bytes"].get<int64_t>()) << f["path"];
        ASSERT_EQ(d["peaks_by_step"].size(), 3u);
        EXPECT_EQ(d["peaks_by_step"][0]["index"], 0);
        EXPECT_LT(d["peaks_by_step"][0]["start_us"].get<int64_t>(),
                  d["peaks_by_step"][0]["end_us"].get<int64_t>());
    }
    // The optimizer fused into backward has no optimizer phase of its own.
    EXPECT_FALSE(j["files"][3]["devices"]["0"]["peaks_by_phase"].contains("optimizer"));
}

TEST_F(Cli, CompareJsonDeltasAgainstTheBaseline) {
    const auto paths = writePolicyRuns();
    const CliRun r = run("compare --json" + join(paths));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j["runs"].size(), 4u);
    EXPECT_EQ(j["baseline"], paths[0]);  // the full policy
    const int64_t base = j["runs"][0]["peak_bytes"].get<int64_t>();
    EXPECT_EQ(j["runs"][0]["delta_peak_bytes"], 0);
    for (const auto& row : j["runs"]) {
        EXPECT_EQ(row["delta_peak_bytes"].get<int64_t>(), row["peak_bytes"].get<int64_t>() - base);
        EXPECT_TRUE(row["step_time_ms"].is_number());
        EXPECT_TRUE(row["recompute_overhead"].is_number());
        EXPECT_TRUE(row.contains("peaks_by_phase"));
        EXPECT_TRUE(row.contains("categories_at_peak"));
    }
    // Another baseline, by position or path; a phase scope; CSV and text.
    const auto b2 = nlohmann::json::parse(run("compare --json --baseline 2" + join(paths)).out);
    EXPECT_EQ(b2["baseline"], paths[1]);
    EXPECT_EQ(b2["runs"][1]["delta_peak_bytes"], 0);
    const auto fwd =
        nlohmann::json::parse(run("compare --json --phase forward --align step" + join(paths)).out);
    EXPECT_EQ(fwd["phase"], "forward");
    EXPECT_EQ(fwd["runs"][1]["peak_bytes"], fwd["runs"][1]["peaks_by_phase"]["forward"]["bytes"]);
    const CliRun csv = run("compare --csv --baseline " + paths[2] + join(paths));
    ASSERT_EQ(csv.exit_code, 0) << csv.err;
    EXPECT_EQ(csv.out.rfind("path,run,peak_bytes,delta_peak_bytes,", 0), 0u) << csv.out;
    EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 5);
    const CliRun text = run("compare" + join(paths));
    EXPECT_NE(text.out.find("mlp-full (baseline)"), std::string::npos) << text.out;
    // Bad input: unknown baseline, unknown align, an unreadable run.
    EXPECT_EQ(run("compare --baseline 9" + join(paths)).exit_code, 1);
    EXPECT_EQ(run("compare --align sideways" + join(paths)).exit_code, 1);
    EXPECT_EQ(run("compare --json --csv" + join(paths)).exit_code, 1);
    const CliRun missing = run("compare " + paths[0] + " " + file("gone.memscope"));
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_NE(missing.err.find("gone.memscope"), std::string::npos);
}

// Recorded runs are named after their script and rank, the same in summary
// and compare; two runs of one script are told apart by their pids.
TEST_F(Cli, SummaryAndCompareNameRunsAfterTheirScriptAndRank) {
    const std::string rank0 = writeRecordedRun("memscope-30337-rank0.memscope", 30337, 0,
                                               {"/usr/bin/python3", "-u", "train.py"}, 400);
    const std::string rank1 = writeRecordedRun("memscope-30338-rank1.memscope", 30338, 1,
                                               {"/usr/bin/python3", "-u", "train.py"}, 500);
    const std::string once = writeRecordedRun("memscope-41000.memscope", 41000, -1,
                                              {"python3", "bench/train.py", "--lr", "1"}, 300);
    const std::string again = writeRecordedRun("memscope-42000.memscope", 42000, -1,
                                               {"python3.11", "-X", "dev", "train.py"}, 200);

    const CliRun table = run("summary " + rank0 + " " + rank1);
    ASSERT_EQ(table.exit_code, 0) << table.err;
    EXPECT_NE(table.out.find("train.py rank 0: " + rank0 + "  (native, from memscope-record)"),
              std::string::npos)
        << table.out;
    EXPECT_NE(table.out.find("train.py rank 1: " + rank1), std::string::npos) << table.out;
    EXPECT_EQ(table.out.find("pid 3033"), std::string::npos) << table.out;
    const auto j = nlohmann::json::parse(run("summary --json " + rank0 + " " + rank1).out);
    EXPECT_EQ(j["files"][0]["name"], "train.py rank 0");
    EXPECT_EQ(j["files"][1]["name"], "train.py rank 1");

    // Two runs of one script (no rank): their pids tell them apart.
    const std::string all = " " + rank0 + " " + rank1 + " " + once + " " + again;
    const CliRun text = run("compare" + all);
    ASSERT_EQ(text.exit_code, 0) << text.err;
    for (const char* name : {"train.py rank 0 (baseline)", "train.py rank 1",
                             "train.py (pid 41000)", "train.py (pid 42000)"})
        EXPECT_NE(text.out.find(name), std::string::npos) << name << "\n" << text.out;
    const auto cj = nlohmann::json::parse(run("compare --json" + all).out);
    ASSERT_EQ(cj["runs"].size(), 4u);
    EXPECT_EQ(cj["runs"][0]["name"], "train.py rank 0");
    EXPECT_EQ(cj["runs"][1]["name"], "train.py rank 1");
    EXPECT_EQ(cj["runs"][2]["name"], "train.py (pid 41000)");
    EXPECT_EQ(cj["runs"][3]["name"], "train.py (pid 42000)");
    EXPECT_EQ(cj["runs"][2]["path"], once);
    // summary tells them apart the same way.
    const auto sj = nlohmann::json::parse(run("summary --json " + once + " " + again).out);
    EXPECT_EQ(sj["files"][0]["name"], "train.py (pid 41000)");
    EXPECT_EQ(sj["files"][1]["name"], "train.py (pid 42000)");

    // One file given twice: by position.
    const auto twice = nlohmann::json::parse(run("compare --json " + once + " " + once).out);
    EXPECT_EQ(twice["runs"][0]["name"], "train.py");
    EXPECT_EQ(twice["runs"][1]["name"], "train.py (2)");
}

// A run whose activations are made in blocks.0..3: `scale` bytes per block.
Trace runWithModules(uint64_t scale) {
    Trace t;
    t.metadata.name = "layers-" + std::to_string(scale);
    ModuleInterner in(t);
    t.modules.source = ModuleSource::Recorded;
    t.events.push_back(testutil::ev(1, EventKind::Alloc, 0x10, 4096, Category::Parameter));
    for (int k = 0; k < 4; ++k) {
        const int64_t start = 100 + 100 * k;
        t.modules.scopes.push_back({start, start + 90,
                                    in.intern("Net", "blocks." + std::to_string(k), "Block"),
                                    ModuleScopeKind::Forward});
        t.events.push_back(testutil::ev(start + 10, EventKind::Alloc, 0x1000 + 0x100 * uint64_t(k),
                                        scale * uint64_t(k + 1)));
    }
    for (int k = 0; k < 4; ++k)
        t.events.push_back(testutil::ev(1000 + k, EventKind::FreeCompleted,
                                        0x1000 + 0x100 * uint64_t(k), scale * uint64_t(k + 1)));
    return t;
}

TEST_F(Cli, SummaryAndCompareNameTheLayersThatHoldThePeak) {
    const std::string full = file("full.memscope"), small = file("small.memscope");
    ASSERT_TRUE(writeNativeTrace(runWithModules(1 << 20), full));
    ASSERT_TRUE(writeNativeTrace(runWithModules(1 << 10), small));

    const auto j = nlohmann::json::parse(run("summary --json " + full).out);
    const auto& dev = j["files"][0]["devices"]["0"];
    EXPECT_EQ(dev["modules_source"], "recorded");
    int64_t sum = 0;
    for (const auto& row : dev["modules_at_peak"]) sum += row["bytes"].get<int64_t>();
    EXPECT_EQ(sum, dev["peak_active_bytes"].get<int64_t>());
    EXPECT_EQ(dev["modules_at_peak"][0]["path"], "blocks.3");
    EXPECT_EQ(dev["modules_at_peak"][0]["bytes"], 4 << 20);
    EXPECT_EQ(dev["modules_at_peak"][0]["by_category"]["activation"], 4 << 20);
    EXPECT_EQ(dev["modules_at_peak"][0]["source"], "recorded");

    const CliRun text = run("summary " + full);
    EXPECT_NE(text.out.find("top layers at the peak  (modules recorded)"), std::string::npos)
        << text.out;
    EXPECT_NE(text.out.find("blocks.3"), std::string::npos) << text.out;

    // A trace without modules says so.
    const std::string plain = file("plain.memscope");
    Trace none = runWithModules(1);
    none.modules = ModuleTable();
    ASSERT_TRUE(writeNativeTrace(none, plain));
    EXPECT_NE(run("summary " + plain).out.find("modules          none in this trace"),
              std::string::npos);
    EXPECT_EQ(nlohmann::json::parse(
                  run("summary --json " + plain).out)["files"][0]["devices"]["0"]["modules_source"],
              "none");

    const CliRun cmp = run("compare " + full + " " + small);
    ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
    EXPECT_NE(cmp.out.find("  blocks.0\u2013blocks.3: \u2212"), std::string::npos) << cmp.out;
    const auto cj = nlohmann::json::parse(run("compare --json " + full + " " + small).out);
    const auto& deltas = cj["runs"][1]["module_deltas"];
    ASSERT_FALSE(deltas.empty());
    EXPECT_EQ(deltas[0]["path"], "blocks.3");
    EXPECT_EQ(deltas[0]["delta_bytes"], (4 << 10) - (4 << 20));
}

TEST_F(Cli, SummaryModelsTheAllocatorAndSaysWhatWouldHaveFitAnOom) {
    const std::string oom = file("fragmented.memscope");
    ASSERT_TRUE(writeNativeTrace(testutil::fragmentedOom(), oom));
    const CliRun json = run("summary --json " + oom);
    ASSERT_EQ(json.exit_code, 0) << json.err;
    const auto d = nlohmann::json::parse(json.out)["files"][0]["devices"]["0"];
    const auto& model = d["allocator_model"];
    EXPECT_EQ(model["segment_allocs"], 1);
    EXPECT_EQ(model["recorded"]["segment_allocs"], 1);
    EXPECT_EQ(model["reserved_peak_bytes"], 270 << 20);
    EXPECT_EQ(model["reserved_peak_difference_percent"], 0.0);
    const auto& fit = d["ooms"][0]["what_would_have_fit"];
    EXPECT_EQ(fit["device_capacity_bytes"], 300 << 20);
    bool split = false;
    for (const auto& a : fit["alternatives"])
        split |= a["name"] == "max_split_size_mb:256" && a["served"] == true;
    EXPECT_TRUE(split) << fit.dump();

    const CliRun text = run("summary " + oom);
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("model            allocator model (defaults): reserved peak 270 MiB"),
              std::string::npos)
        << text.out;
    EXPECT_NE(text.out.find("expandable_segments:True: would have served it, with 20.0 MiB"),
              std::string::npos)
        << text.out;
}

TEST_F(Cli, WhatIfPredictsPoliciesAndWritesTracesThatCompareOpens) {
    const std::string full = file("gpt-full.memscope");
    ASSERT_TRUE(writeNativeTrace(testutil::layeredFullSaveRun(), full));

    const CliRun help = run("whatif --help");
    EXPECT_EQ(help.exit_code, 0);
    EXPECT_NE(help.out.find("layers:LIST"), std::string::npos) << help.out;
    for (const char* name : {"sequential:K", "every:N", "uniform:N", "first:N", "module:CLASS",
                             "checkpoint_sequential", "selective_ac_option", "--recompute-method"})
        EXPECT_NE(help.out.find(name), std::string::npos) << name << "\n" << help.out;

    const std::string out = file("predicted");
    const CliRun json = run(
        "whatif " + full + " --policy block --policy layers:0,2 --budget 1GiB --json --out " + out);
    ASSERT_EQ(json.exit_code, 0) << json.err;
    const auto j = nlohmann::json::parse(json.out);
    EXPECT_EQ(j["measured_policy"], "full");
    EXPECT_EQ(j["layers"]["count"], 4);
    EXPECT_EQ(j["layers"]["source"], "recorded");
    EXPECT_EQ(j["layers"]["names"][3], "h.3");
    ASSERT_EQ(j["predictions"].size(), 2u);
    const auto& block = j["predictions"][0];
    EXPECT_EQ(block["policy"], "block");
    EXPECT_LT(block["peak_bytes"].get<int64_t>(), j["measured"]["peak_bytes"].get<int64_t>());
    EXPECT_EQ(block["recompute_us"], 3);  // 4 layers x 800 ns, in whole µs
    EXPECT_GT(block["step_time_ratio"].get<double>(), 1.0);
    EXPECT_FALSE(block["assumptions"].empty());
    EXPECT_EQ(j["predictions"][1]["policy"], "layers:0,2");
    EXPECT_TRUE(j["budget"]["policy"].is_string());
    // A CUDA device's run: reserved memory is the allocator model's, and the
    // budget is judged by it.
    EXPECT_EQ(j["budget"]["judged_by"], "reserved");
    EXPECT_GE(block["reserved_peak_bytes"].get<int64_t>(), block["peak_bytes"].get<int64_t>());
    EXPECT_EQ(j["measured"]["allocator_model"]["settings_source"], "defaults");
    const std::string written = block["trace"];
    ASSERT_TRUE(fs::exists(written)) << written;

    // compare opens the predicted run like any run, under its predicted name.
    const CliRun cmp = run("compare --json " + full + " " + written);
    ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
    EXPECT_EQ(nlohmann::json::parse(cmp.out)["runs"][1]["name"], "block (predicted)") << cmp.out;
    // Beside a measured run of the same policy, compare gives the prediction's check.
    const std::string block_run = file("gpt-block.memscope");
    ASSERT_TRUE(writeNativeTrace(testutil::layeredFullSaveRun(2, "block"), block_run));
    const CliRun check = run("compare --json " + full + " " + written + " " + block_run);
    ASSERT_EQ(check.exit_code, 0) << check.err;
    const auto c = nlohmann::json::parse(check.out);
    ASSERT_TRUE(c["runs"][1].contains("vs_measured")) << check.out;
    EXPECT_EQ(c["runs"][1]["vs_measured"]["run"], block_run);
    EXPECT_EQ(
        c["runs"][1]["vs_measured"]["delta_bytes"].get<int64_t>(),
        c["runs"][1]["peak_bytes"].get<int64_t>() - c["runs"][2]["peak_bytes"].get<int64_t>());
    EXPECT_FALSE(c["runs"][2].contains("vs_measured"));
    const CliRun check_text = run("compare " + full + " " + written + " " + block_run);
    EXPECT_NE(check_text.out.find("block (predicted) vs measured"), std::string::npos)
        << check_text.out;

    // Allocator settings as what-ifs, with a device capacity; bad ones are usage errors.
    const CliRun expandable = run("whatif " + full +
                                  " --policy block --allocator expandable_segments:True "
                                  "--device-memory 1GiB --json");
    ASSERT_EQ(expandable.exit_code, 0) << expandable.err;
    const auto e = nlohmann::json::parse(expandable.out);
    EXPECT_EQ(e["measured"]["allocator_model"]["settings"], "expandable_segments:True");
    EXPECT_EQ(e["measured"]["allocator_model"]["settings_source"], "asked for");
    EXPECT_EQ(e["measured"]["allocator_model"]["device_memory_bytes"], int64_t(1) << 30);
    EXPECT_TRUE(e["predictions"][0]["allocator_model"]["first_failure"].is_null());
    const CliRun tiny = run("whatif " + full + " --policy block --device-memory 1MiB");
    ASSERT_EQ(tiny.exit_code, 0) << tiny.err;
    EXPECT_NE(tiny.out.find("the allocator would fail a request of"), std::string::npos)
        << tiny.out;
    const CliRun bad = run("whatif " + full + " --allocator max_split_size_mb:3");
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.err.find("max_split_size_mb:3"), std::string::npos) << bad.err;

    const CliRun text = run("whatif " + full);
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("block+opt-in-bwd (predicted)"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("assumptions:"), std::string::npos);

    // Usage errors exit 1, unreadable runs 2; a trace without layers still
    // predicts opt-in-bwd and refuses the rest with the reason.
    EXPECT_EQ(run("whatif " + full + " --policy layers:x").exit_code, 1);
    const CliRun zero = run("whatif " + full + " --policy every:0");
    EXPECT_EQ(zero.exit_code, 1);
    EXPECT_NE(zero.err.find("every N-th layer"), std::string::npos) << zero.err;
    const auto named = nlohmann::json::parse(
        run("whatif --json " + full + " --policy every:2,uniform:3+opt-in-bwd,module:Nope").out);
    ASSERT_EQ(named["predictions"].size(), 3u);
    EXPECT_EQ(named["predictions"][0]["policy"], "every:2");
    EXPECT_TRUE(named["predictions"][0].contains("peak_bytes"));
    EXPECT_EQ(named["predictions"][1]["policy"], "uniform:3+opt-in-bwd");
    EXPECT_NE(named["predictions"][2]["refused"].get<std::string>().find("Block (4)"),
              std::string::npos);
    EXPECT_EQ(run("whatif " + file("missing.memscope")).exit_code, 2);
    Trace bare = testutil::layeredFullSaveRun();
    bare.modules = ModuleTable{};
    const std::string plain = file("plain.memscope");
    ASSERT_TRUE(writeNativeTrace(bare, plain));
    const auto pj =
        nlohmann::json::parse(run("whatif --json " + plain + " --policy block,opt-in-bwd").out);
    EXPECT_EQ(pj["layers"]["count"], 0);
    EXPECT_TRUE(pj["predictions"][0].contains("refused"));
    EXPECT_TRUE(pj["predictions"][1].contains("peak_bytes"));
}

TEST_F(Cli, WhatIfAdvisesAMixWritesItAsCodeAndListsTheFrontier) {
    const std::string full = file("gpt-full.memscope");
    ASSERT_TRUE(writeNativeTrace(testutil::layeredFullSaveRun(), full));

    const CliRun json = run("whatif " + full + " --policy block --budget 1GiB --json");
    ASSERT_EQ(json.exit_code, 0) << json.err;
    const auto j = nlohmann::json::parse(json.out);
    const auto& advisor = j["advisor"];
    ASSERT_TRUE(advisor["choice"].is_object()) << advisor.dump();
    // The budget names the advisor's answer, which fits it.
    EXPECT_EQ(j["budget"]["policy"], advisor["choice"]["policy"]);
    EXPECT_LE(advisor["choice"]["judged_bytes"].get<int64_t>(), int64_t(1) << 30);
    EXPECT_EQ(advisor["judged_by"], "reserved");
    EXPECT_GT(advisor["simulations"].get<int>(), 4);
    EXPECT_TRUE(advisor["best_uniform"].is_object());
    EXPECT_FALSE(advisor["frontier"].empty());

    // 1 GiB holds the run as it is: nothing to apply.
    const CliRun text = run("whatif " + full + " --budget 1GiB");
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("advisor (predicted;"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("the run fits as it is"), std::string::npos) << text.out;
    EXPECT_EQ(text.out.find("apply it:"), std::string::npos) << text.out;
    // On the host (no allocator's 2 MiB segments to round to), block's peak
    // needs checkpointing: the answer comes with the commands that apply it.
    Trace host = testutil::layeredFullSaveRun();
    for (Event& e : host.events) e.device = -1;
    const std::string host_run = file("host-full.memscope");
    ASSERT_TRUE(writeNativeTrace(host, host_run));
    const auto block = nlohmann::json::parse(
        run("whatif --json " + host_run + " --policy block").out)["predictions"][0];
    const CliRun tight = run("whatif " + host_run + " --budget " +
                             std::to_string(block["peak_bytes"].get<int64_t>()));
    ASSERT_EQ(tight.exit_code, 0) << tight.err;
    EXPECT_NE(tight.out.find("apply it:      memscope-cli record --apply"), std::string::npos)
        << tight.out;
    EXPECT_NE(tight.out.find("--emit pytorch"), std::string::npos);

    const CliRun frontier = run("whatif " + full + " --frontier");
    ASSERT_EQ(frontier.exit_code, 0) << frontier.err;
    EXPECT_NE(frontier.out.find("the memory/time frontier"), std::string::npos) << frontier.out;
    EXPECT_EQ(run("whatif " + full + " --frontier --budget 1GiB").exit_code, 1);

    const CliRun code = run("whatif " + full + " --emit pytorch layers:0,2+opt-in-bwd");
    ASSERT_EQ(code.exit_code, 0) << code.err;
    EXPECT_NE(code.out.find("for path in [\"h.0\", \"h.2\"]:"), std::string::npos) << code.out;
    EXPECT_NE(code.out.find("register_post_accumulate_grad_hook"), std::string::npos);
    // A policy no module covers is refused with the reason; bad usage exits 1.
    const CliRun sqrt = run("whatif " + full + " --emit pytorch sqrt");
    EXPECT_EQ(sqrt.exit_code, 2);
    EXPECT_NE(sqrt.err.find("as one region"), std::string::npos) << sqrt.err;
    EXPECT_EQ(run("whatif " + full + " --emit cobol block").exit_code, 1);
    EXPECT_EQ(run("whatif " + full + " --emit pytorch layers:x").exit_code, 1);
}

TEST_F(Cli, CompareTableAgreesWithCore) {
    // The GUI's model displays core's table; the CLI prints it: same numbers.
    const auto paths = writePolicyRuns();
    std::vector<OpenedRun> opened;
    std::vector<CompareInput> inputs;
    for (const auto& p : paths) opened.push_back(*openRun(p, PluginRegistry()));
    for (const auto& o : opened)
        inputs.push_back({o.path, o.name,
                          RunRef{o.parts[0].trace.get(), &o.parts[0].timeline->devices().at(0)}});
    const CompareTable table = buildCompareTable(inputs, defaultBaseline(inputs), AlignMode::Time);
    EXPECT_EQ(run("compare --csv" + join(paths)).out, toCsv(table));
}

TEST_F(Cli, CheckExitsOneJustUnderThePeakAndZeroAtIt) {
    const auto paths = writePolicyRuns();
    const auto j = nlohmann::json::parse(run("summary --json " + paths[0]).out);
    const int64_t peak = j["files"][0]["devices"]["0"]["peak_active_bytes"].get<int64_t>();
    const CliRun at = run("check " + paths[0] + " --max-peak " + std::to_string(peak));
    EXPECT_EQ(at.exit_code, 0) << at.out << at.err;
    const CliRun under = run("check " + paths[0] + " --max-peak " + std::to_string(peak - 1));
    EXPECT_EQ(under.exit_code, 1) << under.out << under.err;
    EXPECT_NE(under.out.find(paths[0]), std::string::npos) << under.out;
    EXPECT_NE(under.out.find("device 0"), std::string::npos) << under.out;
    EXPECT_NE(under.out.find("1 B"), std::string::npos) << under.out;
    // Units, a phase, a device.
    EXPECT_EQ(run("check " + paths[0] + " --max-peak 1GiB").exit_code, 0);
    EXPECT_EQ(run("check " + paths[0] + " --max-peak 1KB").exit_code, 1);
    const int64_t fwd =
        j["files"][0]["devices"]["0"]["peaks_by_phase"]["forward"]["bytes"].get<int64_t>();
    EXPECT_EQ(
        run("check " + paths[0] + " --phase forward --max-peak " + std::to_string(fwd)).exit_code,
        0);
    const CliRun fwdOver = run("check " + paths[0] + " --phase forward --device 0 --max-peak " +
                               std::to_string(fwd - 1));
    EXPECT_EQ(fwdOver.exit_code, 1);
    EXPECT_NE(fwdOver.out.find("forward"), std::string::npos) << fwdOver.out;
    // Growth against a baseline: block is smaller than full, full is not within 0% of block.
    EXPECT_EQ(run("check --baseline " + paths[0] + " --max-growth 0 " + paths[1]).exit_code, 0);
    EXPECT_EQ(run("check --baseline " + paths[1] + " --max-growth 0 " + paths[0]).exit_code, 1);
    EXPECT_EQ(run("check --baseline " + paths[1] + " --max-growth 1000 " + paths[0]).exit_code, 0);
    // Unusable input is 2: an unreadable file, a missing device or phase, bad usage.
    EXPECT_EQ(run("check " + file("gone") + " --max-peak 1GiB").exit_code, 2);
    EXPECT_EQ(run("check " + paths[0] + " --device 5 --max-peak 1GiB").exit_code, 2);
    EXPECT_EQ(run("check " + paths[3] + " --phase optimizer --max-peak 1GiB").exit_code, 2);
    EXPECT_EQ(run("check " + paths[0]).exit_code, 2);
    EXPECT_EQ(run("check " + paths[0] + " --max-peak lots").exit_code, 2);
    EXPECT_EQ(run("check --help").exit_code, 0);
}

// Issue 64, class 4: `digest T -o T` would replace the trace by its digest,
// by any path to the same file; and a digest whose figures contradict its
// events is refused alike by summary and check, naming the file and figure.
TEST_F(Cli, DigestRefusesItsOwnInputAndForgedDigestsAreRefusedAlike) {
    const auto paths = writePolicyRuns();
    const std::string& trace = paths[0];
    const auto size = fs::file_size(trace);
    fs::create_symlink(trace, file("link.memscope"));
    const std::string dot =
        (fs::path(trace).parent_path() / "." / fs::path(trace).filename()).string();
    for (const std::string& out : {trace, dot, file("link.memscope")}) {
        const CliRun same = run("digest " + trace + " -o " + out);
        EXPECT_EQ(same.exit_code, 1) << out << same.out << same.err;
        EXPECT_NE(same.err.find("same file"), std::string::npos) << same.err;
        EXPECT_EQ(fs::file_size(trace), size);
    }
    auto still = readNativeTrace(trace);
    ASSERT_TRUE(still.ok()) << still.message();
    EXPECT_FALSE(still->digest.has_value());

    fs::create_directory(file("ranks"));
    const CliRun made = run("digest " + trace + " -o " + file("ranks/r0.memscope"));
    ASSERT_EQ(made.exit_code, 0) << made.out << made.err;
    auto good = readNativeTrace(file("ranks/r0.memscope"));
    ASSERT_TRUE(good.ok() && good->digest) << good.message();
    Trace forged = *good;
    forged.digest->peak_bytes = -5;
    forged.metadata.rank = 1;
    const std::string bad = file("ranks/r1.memscope");
    ASSERT_TRUE(writeNativeTrace(forged, bad).ok());
    for (const std::string& args :
         {"summary " + bad, "check " + bad + " --max-peak 1GiB", "summary " + file("ranks"),
          "check " + file("ranks") + " --max-peak 1GiB"}) {
        const CliRun r = run(args);
        const std::string all = r.out + r.err;
        EXPECT_NE(r.exit_code, 0) << args << all;
        EXPECT_NE(all.find("r1.memscope"), std::string::npos) << args << all;
        EXPECT_NE(all.find("damaged digest"), std::string::npos) << args << all;
        EXPECT_NE(all.find("peak of -5 bytes"), std::string::npos) << args << all;
        EXPECT_EQ(all.find("-5 B "), std::string::npos) << args << all;
    }
}

TEST_F(Cli, ConvertWritesNoWarningIntoItsOutput) {
    const auto paths = writePolicyRuns();
    const std::string cut = file("cut.memscope");
    fs::copy_file(paths[0], cut);
    fs::resize_file(cut, fs::file_size(cut) - 7);
    const std::string out = file("out.memscope");
    const CliRun r = run("convert " + cut + " " + out);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("warning"), std::string::npos) << r.err;
    auto back = openRun(out, PluginRegistry());
    ASSERT_TRUE(back.ok()) << back.message();
    EXPECT_TRUE(back->warnings().empty());
    for (const auto& [key, value] : back->parts[0].trace->metadata.properties)
        EXPECT_EQ(value.find("damaged"), std::string::npos) << key;
    EXPECT_EQ(run("convert " + dir_.string() + " " + file("x.memscope")).exit_code, 1);  // a folder
}

namespace {

// A run whose live allocations carry stacks: two user stacks and one none.
Trace stackedRun() {
    Trace t;
    t.metadata.name = "stacked";
    const int64_t t0 = 1'700'000'000'000'000'000;
    auto frame = [&](const char* fn, const char* file, uint32_t line) {
        return t.internFrame({t.internString(fn), t.internString(file), line});
    };
    const FrameId train = frame("train", "/home/me/train.py", 40);
    const FrameId fwd = frame("forward", "/home/me/model.py", 12);
    const FrameId head = frame("head", "/home/me/model.py", 30);
    const FrameId s1[] = {fwd, train}, s2[] = {head, train};
    const StackId a = t.internStack(s1), b = t.internStack(s2);
    auto alloc = [&](int64_t dt, uint64_t address, uint64_t size, StackId s) {
        Event e = makeEvent(t0 + dt, EventKind::Alloc, address, size, Category::Activation);
        e.stack = s;
        t.events.push_back(e);
    };
    alloc(1000, 0x1000, 1 << 20, a);
    alloc(2000, 0x2000, 3 << 20, b);
    alloc(3000, 0x3000, 4096, {});
    t.events.push_back(
        makeEvent(t0 + 4000, EventKind::FreeCompleted, 0x2000, 3 << 20, Category::Activation));
    return t;
}

}  // namespace

TEST_F(Cli, StacksFoldedAddUpToTheLiveBytesAtTheMoment) {
    const std::string path = file("stacked.memscope");
    ASSERT_TRUE(writeNativeTrace(stackedRun(), path));
    auto folded_sum = [](const std::string& text, size_t& lines) {
        int64_t sum = 0;
        std::istringstream in(text);
        std::string line;
        lines = 0;
        while (std::getline(in, line)) {
            const size_t space = line.rfind(' ');
            EXPECT_NE(space, std::string::npos) << line;
            sum += std::stoll(line.substr(space + 1));
            ++lines;
        }
        return sum;
    };
    const CliRun peak = run("stacks " + path + " --folded");
    ASSERT_EQ(peak.exit_code, 0) << peak.err;
    size_t lines = 0;
    EXPECT_EQ(folded_sum(peak.out, lines), (1 << 20) + (3 << 20) + 4096);
    EXPECT_EQ(lines, 3u);
    EXPECT_NE(peak.out.find("train  (/home/me/train.py:40);head  (/home/me/model.py:30) 3145728\n"),
              std::string::npos)
        << peak.out;
    EXPECT_NE(peak.out.find("(no stack) 4096\n"), std::string::npos) << peak.out;
    // 3 µs after the first event, its last: the head's allocation is freed.
    const CliRun later = run("stacks " + path + " --folded --at 3us --device 0");
    ASSERT_EQ(later.exit_code, 0) << later.err;
    EXPECT_EQ(folded_sum(later.out, lines), (1 << 20) + 4096);
    EXPECT_EQ(lines, 2u);
    const CliRun text = run("stacks " + path);
    EXPECT_NE(text.out.find("device 0 at the peak: 4.00 MiB live in 3 stacks"), std::string::npos)
        << text.out;
    // Bad input: a clear error.
    EXPECT_EQ(run("stacks " + path + " --at soon").exit_code, 1);
    const CliRun no_device = run("stacks " + path + " --device 5");
    EXPECT_EQ(no_device.exit_code, 2);
    EXPECT_NE(no_device.err.find("the trace has no device 5"), std::string::npos) << no_device.err;
    EXPECT_EQ(run("stacks " + path + " --at 9s").exit_code, 2);
    EXPECT_NE(run("stacks --help").out.find("flamegraph.pl"), std::string::npos);
}

TEST_F(Cli, LeaksSummaryAndCheckSayWhatGrowsPerStep) {
    const std::string leaky = file("leaky.memscope"), fixed = file("fixed.memscope"),
                      short_run = file("short.memscope");
    ASSERT_TRUE(writeNativeTrace(
        testutil::leakyRun({.keep_logits = true, .hook_stores = true, .plateau_cache = false}),
        leaky));
    ASSERT_TRUE(writeNativeTrace(testutil::leakyRun({}), fixed));
    ASSERT_TRUE(writeNativeTrace(testutil::leakyRun({.keep_logits = true, .steps = 2}), short_run));

    const CliRun text = run("leaks " + leaky);
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("device 0: grows 2.50 MiB per step: head 2.00 MiB, blocks.3 512 KiB"),
              std::string::npos)
        << text.out;
    const auto j = nlohmann::json::parse(run("leaks --json " + leaky).out);
    const auto& dev = j["devices"]["0"];
    const double truth = 2.5 * (1 << 20);
    EXPECT_NEAR(dev["growth_bytes_per_step"].get<double>(), truth, 0.1 * truth);
    ASSERT_EQ(dev["groups"].size(), 2u);
    EXPECT_EQ(dev["groups"][0]["module"], "head");
    EXPECT_EQ(dev["groups"][0]["site"], "forward  (/home/me/model.py:50)");
    EXPECT_EQ(dev["groups"][0]["bytes_per_step"], 2 << 20);
    EXPECT_EQ(dev["groups"][0]["count_per_step"], 1.0);
    EXPECT_EQ(dev["groups"][0]["first_step"], 0);
    EXPECT_EQ(dev["groups"][0]["frames"].back(), "forward  (/home/me/model.py:50)");
    EXPECT_EQ(dev["groups"][1]["module"], "blocks.3");

    const CliRun none = run("leaks " + fixed);
    EXPECT_NE(none.out.find("device 0: no growth"), std::string::npos) << none.out;
    EXPECT_EQ(nlohmann::json::parse(run("leaks --json " + fixed).out)["devices"]["0"]["grows"],
              false);

    // summary says it in one line, only when the run grows.
    EXPECT_NE(run("summary " + leaky).out.find("    grows 2.50 MiB per step: head 2.00 MiB"),
              std::string::npos);
    EXPECT_EQ(run("summary " + fixed).out.find("grows"), std::string::npos);

    // check gates it.
    const CliRun over = run("check " + leaky + " --max-growth-per-step 1MiB");
    EXPECT_EQ(over.exit_code, 1) << over.out << over.err;
    EXPECT_NE(over.out.find("OVER  " + leaky + ": device 0: grows 2.50 MiB per step"),
              std::string::npos)
        << over.out;
    const CliRun ok = run("check " + fixed + " --max-growth-per-step 1MiB --max-peak 1GiB");
    EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
    EXPECT_NE(ok.out.find("device 0: no growth (limit 1.00 MiB per step)"), std::string::npos)
        << ok.out;
    const CliRun too_short = run("check " + short_run + " --max-growth-per-step 1MiB");
    EXPECT_EQ(too_short.exit_code, 2);
    EXPECT_NE(too_short.err.find("2 steps: growth per step needs 4 or more"), std::string::npos)
        << too_short.err;
    EXPECT_EQ(run("check " + leaky + " --max-growth-per-step lots").exit_code, 2);
    EXPECT_NE(run("leaks " + short_run).out.find("2 steps: growth per step needs 4"),
              std::string::npos);
    EXPECT_EQ(run("leaks " + file("missing.memscope")).exit_code, 2);
    EXPECT_NE(run("leaks --help").out.find("no growth"), std::string::npos);
    EXPECT_NE(run("check --help").out.find("--max-growth-per-step"), std::string::npos);
}

TEST_F(Cli, CompareAllocationsSplitsOnlyABothOnlyBAndAddsUp) {
    const std::string a = file("a.memscope"), b = file("b.memscope");
    ASSERT_TRUE(writeNativeTrace(testutil::leakyRun({.keep_logits = true}), a));
    ASSERT_TRUE(writeNativeTrace(testutil::leakyRun({}), b));
    const CliRun json = run("compare --allocations --json " + a + " " + b);
    ASSERT_EQ(json.exit_code, 0) << json.err;
    const auto j = nlohmann::json::parse(json.out);
    EXPECT_EQ(j["moment"], "the peak");
    EXPECT_EQ(j["only_a_bytes"].get<int64_t>() - j["only_b_bytes"].get<int64_t>(),
              j["a"]["live_bytes"].get<int64_t>() - j["b"]["live_bytes"].get<int64_t>());
    int64_t sum = 0;
    for (const auto& g : j["groups"])
        sum += g["only_a_bytes"].get<int64_t>() - g["only_b_bytes"].get<int64_t>();
    EXPECT_EQ(sum, j["a"]["live_bytes"].get<int64_t>() - j["b"]["live_bytes"].get<int64_t>());
    EXPECT_EQ(j["groups"][0]["site"], "forward  (model.py:50)");
    EXPECT_GT(j["groups"][0]["only_a_count"].get<int>(), 0);
    for (const char* k : {"frames", "both_bytes", "only_b_count"})
        EXPECT_TRUE(j["groups"][0].contains(k)) << k;

    const CliRun step = run("compare --allocations --at step:3:forward " + a + " " + b);
    ASSERT_EQ(step.exit_code, 0) << step.err;
    EXPECT_NE(step.out.find("device 0 at step 3 forward"), std::string::npos) << step.out;
    EXPECT_EQ(run("compare --allocations --at step:30 " + a + " " + b).exit_code, 2);
    EXPECT_EQ(run("compare --allocations --at later " + a + " " + b).exit_code, 1);
    EXPECT_EQ(run("compare --allocations " + a).exit_code, 1);
    EXPECT_EQ(run("compare --at step:1 " + a + " " + b).exit_code, 1);
    EXPECT_NE(run("compare --help").out.find("--allocations"), std::string::npos);
}

TEST_F(Cli, CompareByLinePutsTheRunsLinesSideBySideAddingUpToEachPeak) {
    const std::string a = file("a.memscope"), b = file("b.memscope");
    ASSERT_TRUE(writeNativeTrace(
        testutil::leakyRun({.keep_logits = true, .hook_stores = true, .plateau_cache = false}), a));
    ASSERT_TRUE(writeNativeTrace(
        testutil::leakyRun({.keep_logits = false, .hook_stores = true, .plateau_cache = false}),
        b));
    const CliRun json = run("compare --by-line --json " + a + " " + b);
    ASSERT_EQ(json.exit_code, 0) << json.err;
    const auto j = nlohmann::json::parse(json.out);
    ASSERT_EQ(j["runs"].size(), 2u);
    EXPECT_EQ(j["runs"][0]["path"], a);
    for (size_t k = 0; k < 2; ++k) {
        int64_t sum = 0;
        for (const auto& l : j["lines"]) sum += l["bytes"][k].get<int64_t>();
        EXPECT_EQ(sum, j["runs"][k]["peak_bytes"].get<int64_t>()) << "run " << k;
    }
    // The kept logits: A only, matched by file name; the hook's line in both.
    EXPECT_EQ(j["lines"][0]["label"], "forward  (model.py:50)");
    EXPECT_EQ(j["lines"][0]["module"], "head");
    EXPECT_GT(j["lines"][0]["bytes"][0].get<int64_t>(), 0);
    EXPECT_EQ(j["lines"][0]["bytes"][1].get<int64_t>(), 0);
    bool hook = false;
    for (const auto& l : j["lines"])
        if (l["label"] == "save_output  (train.py:20)")
            hook = l["bytes"][0].get<int64_t>() > 0 && l["bytes"][1].get<int64_t>() > 0;
    EXPECT_TRUE(hook) << json.out;

    const CliRun text = run("compare --by-line " + a + " " + b);
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("forward  (model.py:50)  [head]"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("run 2: " + b), std::string::npos) << text.out;
    EXPECT_EQ(run("compare --by-line --allocations " + a + " " + b).exit_code, 1);
    EXPECT_EQ(run("compare --by-line --baseline 1 " + a + " " + b).exit_code, 1);
    EXPECT_EQ(run("compare --by-line " + a + " " + file("missing.memscope")).exit_code, 2);
    EXPECT_NE(run("compare --help").out.find("--by-line"), std::string::npos);
}

TEST_F(Cli, SummaryByLineListsTheUsersLinesAtThePeak) {
    const std::string path = file("leaky.memscope");
    ASSERT_TRUE(
        writeNativeTrace(testutil::leakyRun({.keep_logits = true, .hook_stores = true}), path));
    const CliRun text = run("summary --by-line " + path);
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("source lines at the peak  (the innermost user frame)"),
              std::string::npos)
        << text.out;
    EXPECT_NE(text.out.find("head             forward  (/home/me/model.py:50)"), std::string::npos)
        << text.out;
    EXPECT_EQ(run("summary " + path).out.find("source lines at the peak"), std::string::npos);
    const auto j = nlohmann::json::parse(run("summary --json --by-line " + path).out);
    const auto& dev = j["files"][0]["devices"]["0"];
    int64_t sum = dev["lines_rest_bytes"].get<int64_t>();
    for (const auto& r : dev["lines_at_peak"]) sum += r["bytes"].get<int64_t>();
    EXPECT_EQ(sum, dev["peak_active_bytes"].get<int64_t>());
    EXPECT_EQ(dev["lines_at_peak"][0]["module"], "head");
    EXPECT_EQ(dev["lines_at_peak"][0]["line"], 50);
    EXPECT_EQ(dev["lines_at_peak"][0]["file"], "/home/me/model.py");
    EXPECT_FALSE(
        nlohmann::json::parse(run("summary --json " + path).out)["files"][0]["devices"]["0"]
            .contains("lines_at_peak"));
    EXPECT_NE(run("summary --help").out.find("--by-line"), std::string::npos);
}
