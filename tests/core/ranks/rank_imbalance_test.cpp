// The imbalance of a multi-rank run and the digest of one rank, on ranks
// built by hand so that every figure is known.
#include "memscope/ranks/rank_imbalance.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "../analysis_test_util.h"
#include "memscope/ranks/rank_compare.h"
#include "memscope/ranks/rank_heatmap.h"
#include "memscope/ranks/rank_identity.h"
#include "memscope/report/rank_report.h"
#include "memscope/timeline/timeline.h"

namespace memscope {
namespace {

constexpr int64_t kMiB = 1 << 20;

RankDigest rank(int32_t r, int64_t peak, std::optional<TrainingPhase> phase = {}) {
    RankDigest d;
    d.rank = r;
    d.name = rankName(r, "run");
    d.path = "r" + std::to_string(r) + ".memscope";
    d.peak_bytes = peak;
    d.peak_phase = phase;
    return d;
}

TEST(RankImbalance, TheHighestRankHowFarAboveTheLowestAndInWhichPhase) {
    // The two-rank DDP job: rank 1 with twice the batch.
    const std::vector<RankDigest> ranks = {rank(0, 12 * kMiB + kMiB / 2, TrainingPhase::Backward),
                                           rank(1, 16 * kMiB, TrainingPhase::Backward)};
    const auto m = rankImbalance(ranks);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->ranks, 2u);
    EXPECT_EQ(m->highest, 1u);
    EXPECT_EQ(m->lowest, 0u);
    EXPECT_EQ(m->maxMinusMin(), 3 * kMiB + kMiB / 2);
    EXPECT_NEAR(m->maxOverMean(), 16.0 / 14.25, 1e-12);
    EXPECT_NEAR(m->aboveLowest(), 0.28, 1e-12);
    const std::string text = imbalanceText(*m, ranks);
    EXPECT_NE(text.find("rank 1 peaks highest, 16.0 MiB in backward"), std::string::npos) << text;
    EXPECT_NE(text.find("28% above rank 0 (12.5 MiB, the lowest)"), std::string::npos) << text;
    EXPECT_NE(text.find("max/mean 1.12"), std::string::npos) << text;
    EXPECT_NE(text.find("over 2 ranks"), std::string::npos) << text;
}

TEST(RankImbalance, OneRankEqualRanksAndNoRanks) {
    EXPECT_FALSE(rankImbalance({}));
    const std::vector<RankDigest> one = {rank(0, 5 * kMiB)};
    EXPECT_NE(imbalanceText(*rankImbalance(one), one).find("one rank"), std::string::npos);
    const std::vector<RankDigest> same = {rank(0, kMiB), rank(1, kMiB), rank(2, kMiB)};
    const auto m = rankImbalance(same);
    EXPECT_EQ(m->maxMinusMin(), 0);
    EXPECT_DOUBLE_EQ(m->maxOverMean(), 1.0);
    EXPECT_EQ(imbalanceText(*m, same), "all 3 ranks peak at 1.00 MiB");
}

TEST(RankImbalance, ManyRanksOneOutlierAndARankWithoutAPeak) {
    std::vector<RankDigest> ranks;
    for (int r = 0; r < 1024; ++r) ranks.push_back(rank(r, 10 * kMiB));
    ranks[700].peak_bytes = 20 * kMiB;  // the rank holding the embedding
    ranks[3].peak_bytes = 0;            // a rank that recorded nothing
    const auto m = rankImbalance(ranks);
    EXPECT_EQ(m->highest, 700u);
    EXPECT_EQ(m->lowest, 3u);
    EXPECT_NEAR(m->mean_bytes, (1022.0 * 10 + 20) * kMiB / 1024, 1e-6);
    EXPECT_DOUBLE_EQ(m->aboveLowest(), 0.0);  // nothing to be above of
    EXPECT_NE(imbalanceText(*m, ranks).find("rank 700 peaks highest"), std::string::npos);
}

TEST(RankImbalance, ALauncherBesideTheRanksIsNotARank) {
    // torchrun's agent or a launcher script that imported torch: no rank, a
    // tiny peak; it must not be "the lowest rank".
    const std::vector<RankDigest> ranks = {rank(0, 10 * kMiB), rank(1, 15 * kMiB), rank(-1, 1000)};
    const auto m = rankImbalance(ranks);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->ranks, 2u);
    EXPECT_EQ(m->lowest, 0u);
    EXPECT_DOUBLE_EQ(m->mean_bytes, 12.5 * kMiB);
    // Without any rank known, every part is compared.
    const std::vector<RankDigest> unranked = {rank(-1, 1000), rank(-1, 3000)};
    EXPECT_EQ(rankImbalance(unranked)->ranks, 2u);
}

TEST(RankDigestTest, AFullRunReducedKeepsItsPeakPhasesAndAnExactEnvelope) {
    const Trace t = testutil::trainingRun("train.py rank 3", "full", 5000, 0, 3);
    Trace ranked = t;
    ranked.metadata.rank = 3;
    auto tl = Timeline::build(ranked);
    ASSERT_TRUE(tl.ok());
    const DeviceTimeline& dev = (*tl)->devices().at(0);
    const RankDigest d = digestRank(ranked, **tl, "x.memscope", "train.py");
    EXPECT_EQ(d.name, "rank 3");
    EXPECT_EQ(d.peak_bytes, dev.peak.bytes);
    EXPECT_EQ(d.peak_time, dev.peak.time);
    EXPECT_EQ(d.categories_at_peak, dev.peak.by_category);
    EXPECT_EQ(d.step_starts.size(), 3u);
    ASSERT_TRUE(d.peak_phase);
    const auto& w = dev.phase_peaks.by_phase[size_t(index(*d.peak_phase))];
    ASSERT_TRUE(w);
    EXPECT_EQ(w->bytes, d.peak_bytes);
    for (TrainingPhase p : kAllTrainingPhases) {
        const auto& want = dev.phase_peaks.by_phase[size_t(index(p))];
        ASSERT_EQ(bool(want), bool(d.peaks_by_phase[size_t(index(p))]));
        if (want) {
            EXPECT_EQ(*d.peaks_by_phase[size_t(index(p))], want->bytes);
        }
    }
    // The envelope holds every column's true maximum: its maximum is the
    // peak, and no column is below the live bytes at any point inside it.
    ASSERT_EQ(d.envelope.size(), kRankEnvelopeColumns);
    EXPECT_EQ(*std::max_element(d.envelope.begin(), d.envelope.end()), d.peak_bytes);
    const auto xs = dev.live.xs();
    const auto ys = dev.live.ys();
    const double span = double(d.end - d.start);
    for (size_t i = 0; i < xs.size(); ++i) {
        const size_t c = std::min(kRankEnvelopeColumns - 1,
                                  size_t(double(xs[i] - d.start) / span * kRankEnvelopeColumns));
        EXPECT_GE(d.envelope[c], ys[i]) << "point " << i;
    }

    RankRun run;
    run.path = "traces";
    run.name = "train.py";
    run.ranks = {d, rank(4, 2 * d.peak_bytes)};
    run.failures.push_back({"bad.memscope", "bad.memscope: cut short"});
    const std::string json = rankRunToJson(run);
    EXPECT_NE(json.find("\"highest\": \"rank 4\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"lowest\": \"rank 3\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"peak_bytes\": " + std::to_string(d.peak_bytes)), std::string::npos);
    EXPECT_NE(json.find("\"message\": \"bad.memscope: cut short\""), std::string::npos);
}

TEST(RankHeatMapTest, RowsKeepEachRanksMaximaOnItsOwnClockAndEndWhereTheRankEnds) {
    // Two ranks whose clocks are an hour apart; rank 1 runs half as long.
    RankDigest a = rank(0, 0), b = rank(1, 0);
    a.start = 1'000'000;
    a.end = a.start + 2048;
    b.start = 3'600'000'000'000;
    b.end = b.start + 1024;
    a.envelope.assign(kRankEnvelopeColumns, 10);
    b.envelope.assign(kRankEnvelopeColumns, 20);
    a.envelope[100] = 500;   // a's peak, at t = 100
    b.envelope[2047] = 900;  // b's peak, at its very end (t = 1023)
    const std::vector<RankDigest> ranks = {a, b};
    const RankHeatMap m = rankHeatMap(ranks, 64);
    EXPECT_EQ(m.rows, 2u);
    EXPECT_EQ(m.duration, 2048);
    EXPECT_EQ(m.max_bytes, 900);
    EXPECT_EQ(m.at(0, m.columnOf(100)), 500);
    EXPECT_EQ(*std::max_element(m.cells.begin(), m.cells.begin() + 64), 500);
    EXPECT_EQ(m.at(1, m.columnOf(1023)), 900);
    EXPECT_EQ(m.at(1, 63), -1);  // rank 1 had ended
    EXPECT_EQ(m.at(1, 0), 20);
    EXPECT_FALSE(m.by_step);  // rank 1 has no steps: each row from its first event
    EXPECT_EQ(m.origins, (std::vector<int64_t>{a.start, b.start}));
}

TEST(RankHeatMapTest, RanksWithStepsAreAlignedAtTheirFirstStep) {
    // Rank 1 spent 1000 ns more before its first step (a slower data loader);
    // by step, both rows start at step 0.
    RankDigest a = rank(0, 0), b = rank(1, 0);
    a.start = 0;
    a.end = 2048;
    b.start = 50'000;
    b.end = b.start + 3048;
    a.step_starts = {0, 1024};
    b.step_starts = {b.start + 1000, b.start + 2024};
    a.envelope.assign(kRankEnvelopeColumns, 10);
    b.envelope.assign(kRankEnvelopeColumns, 30);
    const std::vector<RankDigest> ranks = {a, b};
    const RankHeatMap m = rankHeatMap(ranks, 32);
    EXPECT_TRUE(m.by_step);
    EXPECT_EQ(m.origins, (std::vector<int64_t>{0, b.start + 1000}));
    EXPECT_EQ(m.duration, 2048);
    for (size_t c = 0; c < 32; ++c) {
        EXPECT_EQ(m.at(0, c), 10);
        EXPECT_EQ(m.at(1, c), 30);
    }
    EXPECT_EQ(stepAt(a, 0), 0);
    EXPECT_EQ(stepAt(a, 1500), 1);
    EXPECT_EQ(stepAt(b, b.start + 10), -1);  // before its first step
    EXPECT_EQ(stepAt(b, b.start + 2100), 1);
}

TEST(RankCompareTest, RanksMatchByNumberAndTheWorstRankIsFollowed) {
    RankRun before, after;
    before.name = "before";
    after.name = "after";
    before.ranks = {rank(0, 10 * kMiB), rank(1, 16 * kMiB), rank(2, 12 * kMiB), rank(-1, 5)};
    // After: rank 1 balanced out, rank 2 now the worst, rank 3 new, a launcher.
    after.ranks = {rank(2, 15 * kMiB), rank(0, 10 * kMiB), rank(1, 12 * kMiB), rank(3, 11 * kMiB)};
    const RankComparison c = compareRanks(before, after);
    ASSERT_EQ(c.ranks.size(), 4u);  // 0..3; the launcher is no rank
    EXPECT_EQ(c.ranks[0].delta(), 0);
    EXPECT_EQ(c.ranks[1].delta(), -4 * kMiB);
    EXPECT_EQ(c.ranks[2].delta(), 3 * kMiB);
    EXPECT_FALSE(c.ranks[3].base_bytes);
    EXPECT_FALSE(c.ranks[3].delta());
    EXPECT_EQ(c.base_worst, "rank 1");
    EXPECT_EQ(c.other_worst, "rank 2");
    EXPECT_EQ(c.worstDelta(), -1 * kMiB);
    const std::string text = rankComparisonText(c);
    EXPECT_NE(text.find("worst rank: rank 1 16.0 MiB -> rank 2 15.0 MiB, -1.00 MiB (-6.2%)"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("+3.00 MiB (+25.0%)"), std::string::npos) << text;
    const std::string json = rankComparisonJson(c);
    EXPECT_NE(json.find("\"delta_bytes\": " + std::to_string(-4 * kMiB)), std::string::npos)
        << json;
}

TEST(RankDigestTest, RanksSortByRankThenThoseWithoutByPath) {
    std::vector<RankDigest> ranks = {rank(2, 1), rank(-1, 1), rank(0, 1), rank(1, 1)};
    ranks[1].path = "b";
    RankDigest other = rank(-1, 1);
    other.path = "a";
    ranks.push_back(other);
    sortRanks(ranks);
    std::vector<std::string> order;
    for (const RankDigest& r : ranks) order.push_back(r.rank >= 0 ? r.name : r.path);
    EXPECT_EQ(order, (std::vector<std::string>{"rank 0", "rank 1", "rank 2", "a", "b"}));
}

}  // namespace
}  // namespace memscope

namespace memscope {
namespace {

// Issue 64, class 5: a rank that two files claim is two rows of the
// comparison, never one kept silently.
TEST(RankCompareTest, ARankClaimedTwiceIsTwoRowsNotOneKept) {
    RankRun before, after;
    before.ranks = {rank(0, 10 * kMiB), rank(0, 30 * kMiB), rank(1, 12 * kMiB)};
    before.ranks[0].name = "rank 0 (a.memscope)";
    before.ranks[1].name = "rank 0 (b.memscope)";
    after.ranks = {rank(0, 11 * kMiB), rank(1, 12 * kMiB)};
    const RankComparison c = compareRanks(before, after);
    ASSERT_EQ(c.ranks.size(), 3u);
    EXPECT_EQ(c.ranks[0].name, "rank 0 (a.memscope)");
    EXPECT_EQ(c.ranks[0].delta(), 1 * kMiB);
    EXPECT_EQ(c.ranks[1].name, "rank 0 (b.memscope)");
    EXPECT_EQ(c.ranks[1].base_bytes, 30 * kMiB);
    EXPECT_FALSE(c.ranks[1].other_bytes);
    EXPECT_EQ(c.base_worst, "rank 0 (b.memscope)");
}

// A part without a rank beside the ranks is never counted as one.
TEST(RankIdentityTest, OnlyRanksCountAsRanksWhereAnyIs) {
    EXPECT_TRUE(countsAsRank(0, true));
    EXPECT_FALSE(countsAsRank(-1, true));
    EXPECT_TRUE(countsAsRank(-1, false));
    const std::vector<int32_t> ranks = {0, -1, 2, 0, 2, 2};
    const std::vector<std::string> paths = {"d/a", "d/page.html", "d/b", "d/c", "d/e", "d/f"};
    const auto w = duplicateRankWarnings(ranks, paths);
    ASSERT_EQ(w.size(), 2u);
    EXPECT_EQ(w[0].message, "rank 0 is claimed by 2 files: a, c; each is shown by its file");
    EXPECT_EQ(w[1].message, "rank 2 is claimed by 3 files: b, e, f; each is shown by its file");
    EXPECT_TRUE(anyRanked(ranks));
}

}  // namespace
}  // namespace memscope
