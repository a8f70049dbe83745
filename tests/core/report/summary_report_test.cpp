// `memscope-cli summary`'s text, built in core (memscope/report/summary_report.h):
// the heading, the device's figures and the composition at the peak, a digest
// and a recorded range said so, and a multi-rank run's table.
#include "memscope/report/summary_report.h"

#include <gtest/gtest.h>

#include "../analysis_test_util.h"
#include "memscope/analysis/summary.h"
#include "memscope/base/units.h"
#include "memscope/ranks/rank_digest.h"
#include "memscope/report/report_json.h"
#include "memscope/timeline/timeline.h"

namespace memscope {
namespace {

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

TEST(SummaryReport, AFileHeadsItsDevicesAndTheirPeaks) {
    Trace t = testutil::trainingRun("train.py", "full", 4000);
    auto tl = Timeline::build(t);
    ASSERT_TRUE(tl.ok());
    const FileReport f{"/runs/a.memscope", "native", &t,        tl->get(),
                       summarize(t, **tl), {},       "train.py"};
    const std::string text = summaryText(f);
    // The importer, and the producer the trace says wrote it.
    EXPECT_TRUE(contains(
        text, "train.py: /runs/a.memscope  (native, from " + t.metadata.source_format + ")"))
        << text;
    EXPECT_TRUE(contains(text, "  device 0\n")) << text;
    const DeviceTimeline& d = (*tl)->devices().at(0);
    EXPECT_TRUE(contains(text, "peak active      " + formatBytes(d.peak.bytes))) << text;
    EXPECT_TRUE(contains(text, "    at the peak\n")) << text;
    EXPECT_TRUE(contains(text, "activation")) << text;
    EXPECT_FALSE(contains(text, "a digest of")) << text;
    EXPECT_FALSE(contains(text, "recorded only")) << text;

    // A digest and a recording cut to a range say what they hold.
    t.digest.emplace();
    t.digest->source = "/far/rank0.memscope";
    t.digest->summed_allocations = 7;
    t.metadata.setProperty("recorded_range", "steps 3-5");
    const std::string cut = summaryText(f);
    EXPECT_TRUE(contains(cut,
                         "a digest of /far/rank0.memscope: only the allocations alive at "
                         "its peak, 7 of them summed by category"))
        << cut;
    EXPECT_TRUE(contains(cut, "  recorded only   steps 3-5")) << cut;
    EXPECT_EQ(recordedRangeText(t, "> "),
              "> recorded only   steps 3-5 (the run's own numbering)\n");
}

// The sites at the peak name the op that made most of their bytes, and
// whether it was recorded or inferred: in the text and in the JSON.
TEST(SummaryReport, SitesSayTheirOpAndItsSource) {
    testutil::Stacked s = testutil::realisticStack();
    Trace& t = s.trace;
    t.events = {testutil::event(10, EventKind::Alloc, 0x100, 4000, Category::Activation),
                testutil::event(20, EventKind::Alloc, 0x200, 1000, Category::Activation)};
    for (Event& e : t.events) e.stack = s.stack;
    t.ops.source = OpSource::Inferred;
    t.ops.event_ops = {t.internString("aten::mm"), t.internString("aten::add")};
    auto tl = Timeline::build(t);
    ASSERT_TRUE(tl.ok());
    const FileReport f{
        "/runs/a.pickle", "pytorch_snapshot", &t, tl->get(), summarize(t, **tl), {}, "a"};
    const std::string text = summaryText(f);
    EXPECT_TRUE(contains(text, "forward  (/home/me/project/model.py:7)  [aten::mm, inferred]"))
        << text;
    const std::string json = summaryToJson(std::span<const FileReport>(&f, 1));
    EXPECT_TRUE(contains(json, R"("op": "aten::mm")")) << json;
    EXPECT_TRUE(contains(json, R"("op_source": "inferred")")) << json;

    // Recorded ops say so; a trace without ops has no op at all.
    t.ops.event_ops.clear();
    t.ops.source = OpSource::Recorded;
    t.ops.scopes = {OpScope{0, 100, t.internString("aten::addmm"), 0}};
    const std::string recorded = summaryToJson(std::span<const FileReport>(&f, 1));
    EXPECT_TRUE(contains(recorded, R"("op": "aten::addmm")")) << recorded;
    EXPECT_TRUE(contains(recorded, R"("op_source": "recorded")")) << recorded;
    EXPECT_TRUE(contains(summaryText(f), "[aten::addmm, recorded]"));
    // The ops that made the peak's bytes, in the text and the JSON.
    EXPECT_TRUE(contains(recorded, R"("ops_source": "recorded")")) << recorded;
    const size_t ops_at_peak = recorded.find(R"("ops_at_peak": [)");
    ASSERT_NE(ops_at_peak, std::string::npos) << recorded;
    const std::string rows = recorded.substr(ops_at_peak, 200);
    EXPECT_TRUE(contains(rows, R"("op": "aten::addmm")")) << rows;
    EXPECT_TRUE(contains(rows, R"("bytes": 5000)")) << rows;
    EXPECT_TRUE(contains(summaryText(f), "top ops at the peak  (ops recorded)"));
    t.ops = {};
    EXPECT_TRUE(
        contains(summaryToJson(std::span<const FileReport>(&f, 1)), R"("ops_at_peak": [])"));
    EXPECT_FALSE(contains(summaryText(f), "top ops at the peak"));
    EXPECT_FALSE(contains(summaryToJson(std::span<const FileReport>(&f, 1)), R"("op":)"));
    EXPECT_FALSE(contains(summaryText(f), "[aten::"));
}

TEST(SummaryReport, RanksAreRowsWithTheirTopCategories) {
    RankRun run;
    run.name = "train.py";
    run.path = "/runs";
    for (int r = 0; r < 2; ++r) {
        RankDigest d;
        d.rank = r;
        d.name = rankName(r, "x");
        d.peak_bytes = (r + 1) * (int64_t(1) << 20);
        d.categories_at_peak[size_t(index(Category::Activation))] = d.peak_bytes;
        run.ranks.push_back(d);
    }
    RankDigest launcher;
    launcher.name = "launcher";
    launcher.path = "/runs/launcher.memscope";
    run.ranks.push_back(launcher);
    run.failures.push_back({"/runs/bad", "/runs/bad: not a trace"});
    const std::string text = rankRunText(run);
    EXPECT_TRUE(contains(text, "train.py: /runs  (2 ranks, 1 other process, 1 not read)")) << text;
    EXPECT_TRUE(contains(text, "rank 1")) << text;
    EXPECT_TRUE(contains(text, "activation 2.00 MiB")) << text;
    EXPECT_TRUE(contains(text, "not a rank: launcher")) << text;
    EXPECT_TRUE(contains(text, "not read: /runs/bad: not a trace")) << text;
    EXPECT_TRUE(contains(text, "imbalance: ")) << text;
}

}  // namespace
}  // namespace memscope
