// The what-if simulator on the real snapshots: every fixture either gets
// predictions or a reason, never a crash; layers come from the Python frames
// (inferred), and the training snapshots among them are predicted.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>

#include "memscope/open/open_run.h"
#include "memscope/plugins/pytorch_snapshot.h"
#include "memscope/whatif/whatif.h"
#include "test_util.h"

namespace memscope {
namespace {

TEST(SnapshotWhatIf, EveryFixturePredictsOrSaysWhyNot) {
    MEMSCOPE_SKIP_WITHOUT_FIXTURES();
    // Training snapshots with a chain of layers in their frames (the counts
    // of SnapshotModules.FixtureLayers).
    static const std::map<std::string, size_t> kTraining = {
        {"user_metadata_compile_ctx__bcrafton_a2.pickle", 12},
        {"ext_annotations_19k_entries__notHanmin_a2.pickle", 36},
    };
    for (const auto& entry : std::filesystem::directory_iterator(test::fixtures() / "snapshots")) {
        const std::string name = entry.path().filename().string();
        if (entry.path().extension() != ".pickle" && entry.path().extension() != ".pkl") continue;
        SCOPED_TRACE(name);
        auto trace = pytorch_snapshot::importFile(entry.path().string());
        ASSERT_TRUE(trace.ok()) << trace.message();
        auto opened = openTrace(std::move(*trace), entry.path().string());
        ASSERT_TRUE(opened.ok()) << opened.message();
        auto report = whatIf(*opened->trace, *opened->timeline, name, {});
        if (!report.ok()) {
            // Only a trace with no allocation at all has nothing to predict.
            EXPECT_NE(report.message().find("no allocations"), std::string::npos)
                << report.message();
            std::printf("%s: %s\n", name.c_str(), report.message().c_str());
            continue;
        }
        std::printf("%s: %zu layers (%s)%s%s\n", name.c_str(),
                    report->chain ? report->chain->layers.size() : 0,
                    report->chain ? std::string(toString(report->chain->source)).c_str() : "none",
                    report->chain ? "" : ": ", report->chain_problem.c_str());
        EXPECT_EQ(report->chain.has_value(), report->chain_problem.empty());
        for (const WhatIfRow& row : report->rows) {
            if (row.refused) {
                EXPECT_FALSE(row.refused->empty()) << row.policy;
                continue;
            }
            std::printf("    %-24s peak %lld B%s\n", row.policy.c_str(),
                        static_cast<long long>(row.peak_bytes), row.measured ? " (measured)" : "");
            EXPECT_GT(row.peak_bytes, 0) << row.policy;
        }
        if (auto known = kTraining.find(name); known != kTraining.end()) {
            ASSERT_TRUE(report->chain.has_value()) << report->chain_problem;
            EXPECT_EQ(report->chain->layers.size(), known->second);
            EXPECT_EQ(report->chain->source, ModuleSource::Inferred);
            size_t predicted = 0;
            for (const WhatIfRow& row : report->rows) predicted += !row.measured && !row.refused;
            EXPECT_GE(predicted, 4u);  // the sweep's layer policies (opt-in-bwd may be refused)
            // Checkpointing every layer never needs more than keeping everything.
            EXPECT_LE(report->rows[1].peak_bytes, report->rows[0].peak_bytes);
        }
    }
}

}  // namespace
}  // namespace memscope
