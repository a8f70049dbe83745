// openRanks and openEach: a folder of ranks opened rank by rank on worker
// threads, each reduced to its digest; a damaged rank among good ones.
#include "memscope/ranks/open_ranks.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <mutex>

#include "../analysis_test_util.h"
#include "../scratch_dir_test.h"
#include "memscope/builtin_plugins.h"
#include "memscope/format/native_format.h"
#include "memscope/open/open_each.h"
#include "memscope/ranks/digest_file.h"
#include "memscope/ranks/digest_trace.h"
#include "memscope/ranks/rank_imbalance.h"

namespace memscope {
namespace {

namespace fs = std::filesystem;

class OpenRanksTest : public testutil::ScratchDirTest {
protected:
    // A rank's trace: a training run whose activations are `act` bytes.
    void writeRank(const std::string& file, int32_t rank, uint64_t act,
                   const std::string& name = "train.py") {
        Trace t = testutil::trainingRun(name, "full", act);
        t.metadata.rank = rank;
        if (rank >= 0) t.metadata.name = name + " rank " + std::to_string(rank);
        ASSERT_TRUE(writeNativeTrace(t, path(file)).ok());
    }
    // The peak openTrace finds, for comparison.
    int64_t peakOf(const std::string& file) {
        auto one = openTrace(path(file), processRegistry());
        return one.ok() ? one->timeline->devices().at(0).peak.bytes : -1;
    }
};

TEST_F(OpenRanksTest, RanksInOrderEachReducedToItsPeakAndTheImbalanceNamesTheHighest) {
    writeRank("memscope-11-rank2.memscope", 2, 3000);
    writeRank("memscope-12-rank0.memscope", 0, 1000);
    writeRank("memscope-13-rank1.memscope", 1, 8000);
    std::ofstream(path("notes.txt")) << "not a trace\n";
    for (unsigned threads : {1u, 2u, 4u}) {
        SCOPED_TRACE(threads);
        auto run = openRanks(dir_.string(), processRegistry(), {}, threads);
        ASSERT_TRUE(run.ok()) << run.message();
        EXPECT_EQ(run->name, "train.py");  // the script the ranks ran
        ASSERT_EQ(run->ranks.size(), 3u);
        EXPECT_TRUE(run->failures.empty());
        const char* files[] = {"memscope-12-rank0.memscope", "memscope-13-rank1.memscope",
                               "memscope-11-rank2.memscope"};
        for (int r = 0; r < 3; ++r) {
            EXPECT_EQ(run->ranks[r].rank, r);
            EXPECT_EQ(run->ranks[r].name, "rank " + std::to_string(r));
            EXPECT_EQ(run->ranks[r].path, path(files[r]));
            EXPECT_EQ(run->ranks[r].peak_bytes, peakOf(files[r]));
        }
        const auto m = rankImbalance(run->ranks);
        ASSERT_TRUE(m);
        EXPECT_EQ(run->ranks[m->highest].name, "rank 1");
        EXPECT_EQ(run->ranks[m->lowest].name, "rank 0");
    }
}

TEST_F(OpenRanksTest, ADamagedRankIsReportedAndTheOthersOpen) {
    writeRank("r0.memscope", 0, 1000);
    writeRank("r1.memscope", 1, 2000);
    writeRank("r2.memscope", 2, 3000);
    // Rank 1's file cut to its header: recognised as a trace, unreadable.
    fs::resize_file(path("r1.memscope"), 20);
    auto run = openRanks(dir_.string(), processRegistry());
    ASSERT_TRUE(run.ok()) << run.message();
    ASSERT_EQ(run->ranks.size(), 2u);
    EXPECT_EQ(run->ranks[0].rank, 0);
    EXPECT_EQ(run->ranks[1].rank, 2);
    ASSERT_EQ(run->failures.size(), 1u);
    EXPECT_EQ(run->failures[0].path, path("r1.memscope"));
    EXPECT_NE(run->failures[0].message.find("r1.memscope"), std::string::npos)
        << run->failures[0].message;
}

TEST_F(OpenRanksTest, WithoutRanksOrAgreementTheFolderNamesTheRun) {
    writeRank("a.memscope", -1, 1000, "a.py");
    writeRank("b.memscope", -1, 2000, "b.py");
    auto run = openRanks(dir_.string(), processRegistry());
    ASSERT_TRUE(run.ok()) << run.message();
    EXPECT_EQ(run->name, dir_.filename().string());
    ASSERT_EQ(run->ranks.size(), 2u);
    EXPECT_EQ(run->ranks[0].name, "a.py");  // no rank: the trace's own name
    EXPECT_EQ(run->ranks[0].rank, -1);
}

TEST_F(OpenRanksTest, ErrorsForNoFolderNoTracesNothingReadableAndCancel) {
    EXPECT_FALSE(openRanks(path("missing"), processRegistry()).ok());
    fs::create_directory(path("empty"));
    auto empty = openRanks(path("empty"), processRegistry());
    ASSERT_FALSE(empty.ok());
    EXPECT_NE(empty.message().find("no trace"), std::string::npos);

    write("bad.memscope", "MEMSCOPE but nothing after it");
    auto bad = openRanks(dir_.string(), processRegistry());
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.message().find("bad.memscope"), std::string::npos) << bad.message();

    writeRank("r0.memscope", 0, 1000);
    std::atomic<bool> cancel{true};
    TaskContext ctx;
    ctx.cancel = &cancel;
    auto cancelled = openRanks(dir_.string(), processRegistry(), ctx);
    ASSERT_FALSE(cancelled.ok());
    EXPECT_EQ(cancelled.message(), "cancelled");
}

TEST_F(OpenRanksTest, OpenEachReportsProgressUpToTheFolderSizeAndEveryFileOnce) {
    uint64_t total_size = 0;
    std::vector<std::string> files;
    for (int r = 0; r < 6; ++r) {
        writeRank("r" + std::to_string(r) + ".memscope", r, 1000 * (r + 1));
        files.push_back(path("r" + std::to_string(r) + ".memscope"));
        total_size += fs::file_size(files.back());
    }
    std::mutex m;
    std::vector<int> seen(files.size(), 0);
    uint64_t last_done = 0, last_total = 0;
    bool monotonic = true;
    TaskContext ctx;
    ctx.progress = [&](uint64_t done, uint64_t total) {
        // openEach serializes its reports, so this needs no lock.
        if (done < last_done) monotonic = false;
        last_done = done;
        last_total = total;
    };
    OpenEachOptions options;
    options.threads = 3;
    openEach(files, processRegistry(), ctx, options, [&](size_t i, Result<OpenedTrace> opened) {
        std::lock_guard lock(m);
        EXPECT_TRUE(opened.ok()) << opened.message();
        ++seen[i];
    });
    for (int s : seen) EXPECT_EQ(s, 1);
    EXPECT_EQ(last_total, total_size);
    EXPECT_EQ(last_done, total_size);
    EXPECT_TRUE(monotonic);
}

// A rank whose peak holds `live` allocations, each with a stack of its own
// `depth` frames deep, of long distinct names: what no digest can keep whole.
Trace manyLiveAllocations(size_t live, size_t depth) {
    Trace t;
    t.metadata.name = "big.py rank 7";
    t.metadata.rank = 7;
    t.metadata.source_format = "test";
    int64_t time = 1'000'000'000'000'000'000;
    for (size_t i = 0; i < live; ++i) {
        std::vector<FrameId> frames;
        for (size_t f = 0; f < depth; ++f)
            frames.push_back(t.internFrame(
                {t.internString("module_" + std::to_string(i) + "_function_with_a_long_name_" +
                                std::to_string(f)),
                 t.internString("/home/user/project/models/layer_" + std::to_string(i) + ".py"),
                 uint32_t(f)}));
        Event e = testutil::event(time += 10, EventKind::Alloc, 0x10000 + i * 4096, 1000 + i,
                                  i % 2 ? Category::Activation : Category::Parameter);
        e.stack = t.internStack(frames);
        t.events.push_back(e);
    }
    return t;
}

TEST_F(OpenRanksTest, ADigestKeepsThePeakAndItsAllocationsAndOpensAsTheRank) {
    writeRank("r0.memscope", 0, 4000);
    writeRank("r1.memscope", 1, 9000);
    auto full = openRanks(dir_.string(), processRegistry());
    ASSERT_TRUE(full.ok()) << full.message();
    fs::create_directory(path("digests"));
    for (const char* name : {"r0", "r1"}) {
        auto opened = openTrace(path(std::string(name) + ".memscope"), processRegistry());
        ASSERT_TRUE(opened.ok());
        auto written = writeDigest(*opened, path("digests/" + std::string(name) + ".memscope"));
        ASSERT_TRUE(written.ok()) << written.message();
        EXPECT_LE(written->bytes, kDigestMaxBytes);
        EXPECT_EQ(written->summed, 0u);
        // A digest is made from a full trace only.
        auto again =
            openTrace(path("digests/" + std::string(name) + ".memscope"), processRegistry());
        ASSERT_TRUE(again.ok());
        ASSERT_TRUE(again->trace->digest.has_value());
        EXPECT_EQ(again->trace->digest->allocations, written->allocations);
        EXPECT_FALSE(writeDigest(*again, path("twice.memscope")).ok());
        // Opened alone it is a trace of what was alive at the peak.
        EXPECT_EQ(again->timeline->devices().at(0).peak.bytes,
                  opened->timeline->devices().at(0).peak.bytes);
        EXPECT_EQ(again->trace->events.size(),
                  opened->timeline->devices()
                      .at(0)
                      .liveAt(opened->timeline->devices().at(0).peak.time)
                      .size());
    }
    auto digests = openRanks(path("digests"), processRegistry());
    ASSERT_TRUE(digests.ok()) << digests.message();
    ASSERT_EQ(digests->ranks.size(), full->ranks.size());
    for (size_t i = 0; i < full->ranks.size(); ++i) {
        const RankDigest &a = full->ranks[i], &b = digests->ranks[i];
        EXPECT_TRUE(b.from_digest);
        EXPECT_FALSE(a.from_digest);
        EXPECT_EQ(b.rank, a.rank);
        EXPECT_EQ(b.name, a.name);
        EXPECT_EQ(b.peak_bytes, a.peak_bytes);
        EXPECT_EQ(b.peak_time, a.peak_time);
        EXPECT_EQ(b.peak_phase, a.peak_phase);
        EXPECT_EQ(b.peak_step, a.peak_step);
        EXPECT_EQ(b.peaks_by_phase, a.peaks_by_phase);
        EXPECT_EQ(b.categories_at_peak, a.categories_at_peak);
        EXPECT_EQ(b.step_starts, a.step_starts);
        EXPECT_EQ(b.envelope, a.envelope);
    }
    EXPECT_EQ(digests->name, "train.py");
}

TEST_F(OpenRanksTest, ADigestStaysUnderOneMebibyteWhateverItsInputAndSumsTheRest) {
    ASSERT_TRUE(writeNativeTrace(manyLiveAllocations(40000, 24), path("big.memscope")).ok());
    EXPECT_GT(fs::file_size(path("big.memscope")), 4 * kDigestMaxBytes);
    auto opened = openTrace(path("big.memscope"), processRegistry());
    ASSERT_TRUE(opened.ok()) << opened.message();
    auto written = writeDigest(*opened, path("big.digest"));
    ASSERT_TRUE(written.ok()) << written.message();
    EXPECT_LE(fs::file_size(path("big.digest")), kDigestMaxBytes);
    EXPECT_EQ(written->allocations + written->summed, 40000u);
    EXPECT_GT(written->summed, 0u);
    auto digest = openTrace(path("big.digest"), processRegistry());
    ASSERT_TRUE(digest.ok()) << digest.message();
    const DeviceTimeline& full = opened->timeline->devices().at(0);
    const DeviceTimeline& small = digest->timeline->devices().at(0);
    // The summed remainders keep the peak and its composition exact.
    EXPECT_EQ(small.peak.bytes, full.peak.bytes);
    EXPECT_EQ(small.peak.by_category, full.peak.by_category);
    auto d = rankDigestOf(*digest->trace, path("big.digest"));
    ASSERT_TRUE(d.ok()) << d.message();
    EXPECT_EQ(d->name, "rank 7");
    EXPECT_EQ(d->peak_bytes, full.peak.bytes);
}

TEST_F(OpenRanksTest, ADamagedDigestIsARankNotRead) {
    writeRank("r0.memscope", 0, 4000);
    auto opened = openTrace(path("r0.memscope"), processRegistry());
    ASSERT_TRUE(opened.ok());
    fs::create_directory(path("d"));
    ASSERT_TRUE(writeDigest(*opened, path("d/r0.memscope")).ok());
    // A digest whose envelope lost its columns, one from a newer memscope,
    // and one from an older memscope that kept its fields in text properties.
    auto cut = openTrace(path("d/r0.memscope"), processRegistry());
    ASSERT_TRUE(cut.ok() && cut->trace->digest);
    Trace bad = *cut->trace;
    bad.digest->envelope = {1, 2, 3};
    bad.metadata.rank = 1;
    ASSERT_TRUE(writeNativeTrace(bad, path("d/r1.memscope")).ok());
    bad = *cut->trace;
    bad.digest->version = 99;
    bad.metadata.rank = 2;
    ASSERT_TRUE(writeNativeTrace(bad, path("d/r2.memscope")).ok());
    bad = *cut->trace;
    bad.digest.reset();
    bad.metadata.setProperty("digest", "1");
    bad.metadata.rank = 3;
    ASSERT_TRUE(writeNativeTrace(bad, path("d/r3.memscope")).ok());
    auto run = openRanks(path("d"), processRegistry());
    ASSERT_TRUE(run.ok()) << run.message();
    // The old digest opens as a trace of its own (a rank not made from a
    // digest); the two damaged ones fail, each saying why.
    ASSERT_EQ(run->ranks.size(), 2u);
    ASSERT_EQ(run->failures.size(), 2u);
    EXPECT_NE(run->failures[0].message.find("envelope"), std::string::npos)
        << run->failures[0].message;
    EXPECT_NE(run->failures[1].message.find("newer"), std::string::npos)
        << run->failures[1].message;
    auto old = openTrace(path("d/r3.memscope"), processRegistry());
    ASSERT_TRUE(old.ok());
    auto read = rankDigestOf(*old->trace, path("d/r3.memscope"));
    ASSERT_FALSE(read.ok());
    EXPECT_NE(read.message().find("older memscope"), std::string::npos) << read.message();
}

// Issue 64, class 4: a digest's figures are checked against themselves and its
// events where the file is read, and one that contradicts them is refused,
// naming the file and the figure, by openTrace and openRanks alike.
TEST_F(OpenRanksTest, ADigestWhoseFiguresContradictTheFileIsRefusedNamingTheFigure) {
    writeRank("r0.memscope", 0, 4000);
    auto opened = openTrace(path("r0.memscope"), processRegistry());
    ASSERT_TRUE(opened.ok());
    ASSERT_TRUE(writeDigest(*opened, path("good.memscope")).ok());
    auto good = openTrace(path("good.memscope"), processRegistry());
    ASSERT_TRUE(good.ok() && good->trace->digest) << good.message();
    const Trace& base = *good->trace;
    ASSERT_FALSE(base.events.empty());
    ASSERT_GT(base.digest->peak_bytes, 0);
    ASSERT_FALSE(base.digest->envelope.empty());

    struct Forgery {
        std::string name;
        std::function<void(Trace&)> forge;
        std::string says;  // in the message
    };
    const int64_t peak = base.digest->peak_bytes;
    const std::vector<Forgery> forgeries = {
        {"negative_peak", [](Trace& t) { t.digest->peak_bytes = -5; }, "peak of -5 bytes"},
        {"min_peak", [](Trace& t) { t.digest->peak_bytes = INT64_MIN; }, "peak of"},
        {"max_peak", [](Trace& t) { t.digest->peak_bytes = INT64_MAX; }, "peak of"},
        {"other_peak",
         [](Trace& t) {
             t.digest->peak_bytes /= 2;
             t.digest->peaks_by_phase = {};
             t.digest->envelope.clear();
         },
         "is less than the"},
        {"huge_range",
         [](Trace& t) {
             t.digest->start = INT64_MIN;
             t.digest->end = INT64_MAX;
         },
         "start"},
        {"start_after_end", [](Trace& t) { t.digest->start = t.digest->end + 1; },
         "is after its end"},
        {"peak_outside", [](Trace& t) { t.digest->peak_time = t.digest->end + 1'000'000; },
         "peak time"},
        {"envelope_above", [peak](Trace& t) { t.digest->envelope[0] = peak + 1; }, "envelope"},
        {"envelope_negative", [](Trace& t) { t.digest->envelope[0] = -1; }, "envelope"},
        {"phase_above", [peak](Trace& t) { t.digest->peaks_by_phase[0] = peak * 2; },
         "peak of a phase"},
        {"steps",
         [](Trace& t) {
             t.digest->steps = 1;
             t.digest->step_starts = {5, 7};
         },
         "step starts"},
        {"steps_order",
         [](Trace& t) {
             t.digest->steps = 2;
             t.digest->step_starts = {7, 5};
         },
         "step starts"},
        {"no_events",
         [](Trace& t) {
             t.events.clear();
             t.inferred_categories.clear();
             t.attributes.clear();
             t.digest->inferred.clear();
             t.digest->allocations = 0;
             t.digest->summed_allocations = 0;
         },
         "holds no allocations"},
        {"device", [](Trace& t) { t.digest->device = -5; }, "device -5"},
    };
    fs::create_directory(path("ranks"));
    for (const Forgery& f : forgeries) {
        SCOPED_TRACE(f.name);
        Trace bad = base;
        f.forge(bad);
        const std::string file = path(f.name + ".memscope");
        ASSERT_TRUE(writeNativeTrace(bad, file).ok());
        auto one = openTrace(file, processRegistry());
        ASSERT_FALSE(one.ok());
        EXPECT_NE(one.message().find("damaged digest"), std::string::npos) << one.message();
        EXPECT_NE(one.message().find(f.says), std::string::npos) << one.message();
        // In a folder of ranks: a rank that failed, with the same words.
        fs::remove_all(path("ranks"));
        fs::create_directory(path("ranks"));
        fs::copy_file(path("good.memscope"), path("ranks/r0.memscope"));
        fs::copy_file(file, path("ranks/r1.memscope"));
        auto run = openRanks(path("ranks"), processRegistry());
        ASSERT_TRUE(run.ok()) << run.message();
        EXPECT_EQ(run->ranks.size(), 1u);
        ASSERT_EQ(run->failures.size(), 1u);
        EXPECT_NE(run->failures[0].message.find("r1.memscope"), std::string::npos)
            << run->failures[0].message;
        EXPECT_NE(run->failures[0].message.find(f.says), std::string::npos)
            << run->failures[0].message;
    }
}

}  // namespace
}  // namespace memscope

namespace memscope {
namespace {

// Issue 64, class 5: two files claiming one rank are both kept, named apart
// by their files and warned about; nothing is dropped.
TEST_F(OpenRanksTest, TwoFilesClaimingOneRankAreBothKeptNamedApartAndWarnedAbout) {
    writeRank("a.memscope", 0, 1000);
    writeRank("b.memscope", 0, 5000);
    writeRank("c.memscope", 1, 3000);
    auto run = openRanks(dir_.string(), processRegistry());
    ASSERT_TRUE(run.ok()) << run.message();
    ASSERT_EQ(run->ranks.size(), 3u);
    EXPECT_EQ(run->ranks[0].name, "rank 0 (a.memscope)");
    EXPECT_EQ(run->ranks[1].name, "rank 0 (b.memscope)");
    EXPECT_EQ(run->ranks[2].name, "rank 1");
    ASSERT_FALSE(run->warnings.empty());
    EXPECT_EQ(run->warnings[0].message,
              "rank 0 is claimed by 2 files: a.memscope, b.memscope; each is shown by its file");
    // The same folder opened whole (the GUI's few ranks) says the same.
    auto whole = openRun(dir_.string(), processRegistry());
    ASSERT_TRUE(whole.ok()) << whole.message();
    const RankRun ranks = ranksOfRun(*whole);
    ASSERT_EQ(ranks.ranks.size(), 3u);
    ASSERT_FALSE(ranks.warnings.empty());
    EXPECT_NE(ranks.warnings[0].message.find("rank 0 is claimed by 2 files"), std::string::npos);
}

// Issue 64, class 9: a folder of few digests opened whole gives the ranks
// their digests' envelopes and per-phase peaks, not the few allocations
// alive at each peak (the GUI's heat map was empty).
TEST_F(OpenRanksTest, AFolderOfFewDigestsOpenedWholeKeepsTheirEnvelopes) {
    writeRank("r0.memscope", 0, 4000);
    writeRank("r1.memscope", 1, 9000);
    auto full = openRanks(dir_.string(), processRegistry());
    ASSERT_TRUE(full.ok()) << full.message();
    fs::create_directory(path("digests"));
    for (const char* name : {"r0", "r1"}) {
        auto opened = openTrace(path(std::string(name) + ".memscope"), processRegistry());
        ASSERT_TRUE(opened.ok());
        ASSERT_TRUE(writeDigest(*opened, path("digests/" + std::string(name) + ".memscope")).ok());
    }
    auto whole = openRun(path("digests"), processRegistry());
    ASSERT_TRUE(whole.ok()) << whole.message();
    const RankRun ranks = ranksOfRun(*whole);
    ASSERT_EQ(ranks.ranks.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
        const RankDigest &a = full->ranks[i], &b = ranks.ranks[i];
        EXPECT_TRUE(b.from_digest);
        EXPECT_EQ(b.peaks_by_phase, a.peaks_by_phase);
        EXPECT_EQ(b.envelope, a.envelope);
        EXPECT_EQ(b.start, a.start);
        EXPECT_EQ(b.end, a.end);
    }
}

}  // namespace
}  // namespace memscope
