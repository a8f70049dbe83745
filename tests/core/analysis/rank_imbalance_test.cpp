// The imbalance of a multi-rank run and the digest of one rank, on ranks
// built by hand so that every figure is known.
#include "memscope/analysis/rank_imbalance.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "../analysis_test_util.h"
#include "memscope/analysis/rank_json.h"
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
