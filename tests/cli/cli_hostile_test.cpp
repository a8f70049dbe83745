// Issue 64 (hostile input, part three), classes 3, 5, 6, 7 and 9, through the
// real memscope-cli binary: strings from files never reach the terminal or
// the JSON raw, rank identity is checked across a folder, predicted runs are
// labelled as such, and a folder of digests is checked by phase.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../core/analysis_test_util.h"
#include "cli_test_util.h"
#include "memscope/format/native_format.h"
#include "memscope/model/module_scopes.h"

using namespace memscope;

namespace {

namespace fs = std::filesystem;

using clitest::CliRun;

class CliHostile : public clitest::ScratchFolderTest {
protected:
    CliHostile() : ScratchFolderTest("memscope-cli-hostile") {}

    // Arguments are quoted: file names here carry control characters.
    CliRun run(const std::vector<std::string>& args) const {
        // MEMSCOPE_TEST_CLI: another build's binary (to see these fail before the fixes).
        const char* other = std::getenv("MEMSCOPE_TEST_CLI");
        std::string cmd = other && *other ? other : MEMSCOPE_CLI;
        for (const std::string& a : args) cmd += " '" + a + "'";
        return clitest::runCommand(cmd, file("stderr.txt"));
    }

    void write(const Trace& t, const std::string& path) const {
        auto r = writeNativeTrace(t, path);
        ASSERT_TRUE(r.ok()) << r.message();
    }

    // A rank of a training run: activations of `act` bytes.
    std::string writeRank(const std::string& name, int32_t rank, uint64_t act) const {
        Trace t = testutil::trainingRun("train.py", "full", act);
        t.metadata.rank = rank;
        if (rank >= 0) t.metadata.name = "train.py rank " + std::to_string(rank);
        const std::string path = file(name);
        write(t, path);
        return path;
    }
};

// No control character a terminal acts on, and no line but those the report made.
void expectNoControls(const std::string& text, const char* what) {
    for (const char c : {'\x1b', '\x07', '\r'})
        EXPECT_EQ(text.find(c), std::string::npos) << what << ":\n" << text;
    EXPECT_EQ(text.find("\xc2\x9b"), std::string::npos) << what << ":\n" << text;
    EXPECT_EQ(text.find("\nrank 9 peaks"), std::string::npos) << what << ":\n" << text;
    EXPECT_EQ(text.find("\n::error::"), std::string::npos) << what << ":\n" << text;
    EXPECT_EQ(text.find("\nforged"), std::string::npos) << what << ":\n" << text;
}

// A run whose name, module paths, recorded range and policy carry control
// sequences and bytes that are not UTF-8.
Trace hostileStringsRun() {
    Trace t = testutil::trainingRun("x", "full", 4000);
    t.metadata.name = "run\x1b]0;pwned\x07\x1b[2J\nrank 9 peaks at 0 B\xff";
    t.metadata.setProperty("recorded_range", "steps 3-4\x1b[2J\n::error::forged");
    ModuleInterner in(t);
    t.modules.source = ModuleSource::Recorded;
    const int64_t start = t.events.front().time;
    const int64_t end = t.events.back().time + 1;
    t.modules.scopes.push_back(
        {start, end, in.intern("Net\x9b", "layer\x1b[2J.0\nforged line\xc3\x28", "Blk\xc2\x9b"),
         ModuleScopeKind::Forward});
    return t;
}

}  // namespace

// Class 7: summary, summary --json, compare (text, JSON, CSV) and check.
TEST_F(CliHostile, ControlSequencesInNamesAreEscapedInTextAndValidInJson) {
    const std::string a = file("a.memscope");
    write(hostileStringsRun(), a);
    // A file name with an escape sequence and a newline in it.
    const std::string b = file("b\x1b]0;t\x07\nforged.memscope");
    write(hostileStringsRun(), b);

    const CliRun text = run({"summary", a, b});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    expectNoControls(text.out, "summary");
    expectNoControls(text.err, "summary stderr");
    EXPECT_NE(text.out.find("run\\x1b]0;pwned\\x07\\x1b[2J\\x0arank 9 peaks at 0 B\xEF\xBF\xBD"),
              std::string::npos)
        << text.out;
    EXPECT_NE(text.out.find("  layer\\x1b[2J\n"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("b\\x1b]0;t\\x07\\x0aforged.memscope"), std::string::npos) << text.out;

    const CliRun json = run({"summary", "--json", a, b});
    ASSERT_EQ(json.exit_code, 0) << json.err;
    EXPECT_EQ(json.out.find('\x1b'), std::string::npos);
    const auto j = nlohmann::json::parse(json.out);  // strict: throws on invalid UTF-8
    EXPECT_EQ(j["files"][0]["name"],
              "run\x1b]0;pwned\x07\x1b[2J\nrank 9 peaks at 0 B\xEF\xBF\xBD (a.memscope)");
    EXPECT_EQ(j["files"][1]["path"], b);

    for (const char* format : {"", "--json", "--csv"}) {
        std::vector<std::string> args = {"compare", a, b};
        if (*format) args.push_back(format);
        const CliRun cmp = run(args);
        ASSERT_EQ(cmp.exit_code, 0) << format << cmp.err;
        expectNoControls(cmp.out, format);
        if (std::string(format) == "--json") {
            EXPECT_TRUE(nlohmann::json::accept(cmp.out)) << cmp.out;
        }
    }

    const CliRun check = run({"check", "--max-peak", "1GiB", b});
    EXPECT_EQ(check.exit_code, 0) << check.err;
    expectNoControls(check.out, "check");
    EXPECT_NE(check.out.find("ok    " + dir_.string() + "/b\\x1b]0;t\\x07\\x0aforged.memscope"),
              std::string::npos)
        << check.out;
}

// Class 7: a folder of ranks, one file named to forge a line: its row is
// escaped in summary and check.
TEST_F(CliHostile, RankFolderFileNamesAreEscaped) {
    fs::create_directory(file("ranks"));
    writeRank("ranks/r0.memscope", 0, 1000);
    writeRank("ranks/r1.memscope", 1, 2000);
    writeRank("ranks/x\x1b[2J\nrank 9 peaks at 0 B.memscope", -1, 1500);
    const CliRun text = run({"summary", file("ranks")});
    expectNoControls(text.out, "summary");
    expectNoControls(text.err, "summary stderr");
    EXPECT_NE(text.out.find("x\\x1b[2J\\x0arank 9 peaks at 0 B.memscope"), std::string::npos)
        << text.out;
    const CliRun check = run({"check", "--max-peak", "1GiB", file("ranks")});
    expectNoControls(check.out, "check");
    expectNoControls(check.err, "check stderr");
    EXPECT_NE(check.out.find("x\\x1b[2J\\x0arank 9 peaks at 0 B.memscope"), std::string::npos)
        << check.out;
}

// Class 6: provenance from the trace, not its name.
TEST_F(CliHostile, APredictedRunRenamedLikeTheMeasuredOneIsShownAsPredicted) {
    const std::string measured = file("mlp-full.memscope");
    write(testutil::trainingRun("mlp-full", "full", 5000), measured);
    Trace predicted = testutil::trainingRun("mlp-full", "full", 2000);
    predicted.prediction = Prediction{measured, "full", "block", "recorded", {"a guess"}};
    const std::string renamed = file("mlp-full-run2.memscope");
    write(predicted, renamed);

    const CliRun summary = run({"summary", renamed});
    ASSERT_EQ(summary.exit_code, 0) << summary.err;
    EXPECT_NE(summary.out.find("mlp-full (predicted): " + renamed), std::string::npos)
        << summary.out;
    const auto sj = nlohmann::json::parse(run({"summary", "--json", renamed, measured}).out);
    EXPECT_EQ(sj["files"][0]["name"], "mlp-full (predicted)");
    EXPECT_EQ(sj["files"][0]["provenance"], "predicted");
    EXPECT_EQ(sj["files"][1]["provenance"], "measured");

    // The predicted run claims policy "full" and comes first: the measured
    // run is still the baseline.
    const CliRun cmp = run({"compare", renamed, measured});
    ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
    EXPECT_NE(cmp.out.find("mlp-full (baseline)"), std::string::npos) << cmp.out;
    EXPECT_NE(cmp.out.find("mlp-full (predicted)"), std::string::npos) << cmp.out;
    EXPECT_EQ(cmp.out.find("(predicted) (baseline)"), std::string::npos) << cmp.out;
    const auto cj = nlohmann::json::parse(run({"compare", "--json", renamed, measured}).out);
    EXPECT_EQ(cj["baseline"], measured) << cj.dump();
    EXPECT_EQ(cj["runs"][0]["provenance"], "predicted");
    EXPECT_EQ(cj["runs"][1]["provenance"], "measured");

    const CliRun check = run({"check", "--max-peak", "1GiB", renamed});
    EXPECT_EQ(check.exit_code, 0) << check.err;
    EXPECT_NE(check.out.find(renamed + " (predicted): "), std::string::npos) << check.out;
}

// Class 5: two files claiming rank 0 are warned about and both shown; a
// part without a rank is never the worst rank.
TEST_F(CliHostile, TwoFilesClaimingOneRankAreWarnedAboutAndBothShown) {
    fs::create_directory(file("A"));
    fs::create_directory(file("B"));
    writeRank("A/a.memscope", 0, 1000);
    writeRank("A/b.memscope", 0, 3000);
    writeRank("A/c.memscope", 1, 2000);
    writeRank("B/r0.memscope", 0, 1000);
    writeRank("B/r1.memscope", 1, 2000);

    const CliRun summary = run({"summary", file("A")});
    ASSERT_EQ(summary.exit_code, 0) << summary.err;
    EXPECT_NE(summary.err.find("rank 0 is claimed by 2 files: a.memscope, b.memscope"),
              std::string::npos)
        << summary.err;
    EXPECT_NE(summary.out.find("rank 0 (a.memscope)"), std::string::npos) << summary.out;
    EXPECT_NE(summary.out.find("rank 0 (b.memscope)"), std::string::npos) << summary.out;

    const CliRun cmp = run({"compare", file("A"), file("B")});
    ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
    EXPECT_NE(cmp.out.find("rank 0 (a.memscope)"), std::string::npos) << cmp.out;
    EXPECT_NE(cmp.out.find("rank 0 (b.memscope)"), std::string::npos) << cmp.out;

    const CliRun check = run({"check", "--max-peak", "1GiB", file("A")});
    EXPECT_EQ(check.exit_code, 0) << check.err;
    EXPECT_NE(check.err.find("rank 0 is claimed by 2 files"), std::string::npos) << check.err;
}

TEST_F(CliHostile, APartWithoutARankIsNeverTheWorstRank) {
    fs::create_directory(file("A"));
    writeRank("A/r0.memscope", 0, 1000);
    writeRank("A/r1.memscope", 1, 2000);
    writeRank("A/page.memscope", -1, 90000);  // the biggest, and no rank
    const CliRun summary = run({"summary", file("A")});
    EXPECT_NE(summary.out.find("not a rank: "), std::string::npos) << summary.out;
    const CliRun check = run({"check", "--max-peak", "1GiB", file("A")});
    EXPECT_EQ(check.exit_code, 0) << check.err;
    EXPECT_NE(check.out.find("worst rank: rank 1 ("), std::string::npos) << check.out;
    EXPECT_EQ(check.out.find("worst rank: " + file("A/page.memscope")), std::string::npos)
        << check.out;
}

// Class 9: digests keep per-phase peaks: check --phase reads them.
TEST_F(CliHostile, CheckByPhaseOnAFolderOfDigestsUsesTheirPhasePeaks) {
    writeRank("r0.memscope", 0, 1000);
    writeRank("r1.memscope", 1, 3000);
    fs::create_directory(file("d"));
    for (const char* r : {"r0", "r1"}) {
        const CliRun d = run({"digest", file(std::string(r) + ".memscope"), "-o",
                              file("d/" + std::string(r) + ".memscope")});
        ASSERT_EQ(d.exit_code, 0) << d.err;
    }
    const CliRun full =
        run({"check", "--phase", "backward", "--max-peak", "1GiB", file("r1.memscope")});
    ASSERT_EQ(full.exit_code, 0) << full.err;
    const CliRun digests = run({"check", "--phase", "backward", "--max-peak", "1GiB", file("d")});
    EXPECT_EQ(digests.exit_code, 0) << digests.err;
    EXPECT_NE(digests.out.find("worst rank: rank 1 ("), std::string::npos) << digests.out;
    // The same figure as the full trace's backward peak.
    const size_t at = full.out.find(": ");
    ASSERT_NE(at, std::string::npos);
    EXPECT_NE(digests.out.find(full.out.substr(at + 2, full.out.find('\n') - at - 2)),
              std::string::npos)
        << full.out << digests.out;
    const CliRun tight = run({"check", "--phase", "backward", "--max-peak", "1", file("d")});
    EXPECT_EQ(tight.exit_code, 1) << tight.err << tight.out;
}
