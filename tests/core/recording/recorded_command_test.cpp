// recordedCommand: the job's command line read back from a trace's metadata
// ("argv" exact, else "command" split at spaces), and the arguments of
// `memscope-cli record --apply` built from it.
#include "memscope/recording/recorded_command.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "memscope/model/trace.h"

namespace memscope {
namespace {

using Args = std::vector<std::string>;

TraceMetadata withProperties(std::initializer_list<std::pair<std::string, std::string>> props) {
    TraceMetadata m;
    for (const auto& [k, v] : props) m.setProperty(k, v);
    return m;
}

TEST(RecordedCommand, NoCommandSaysHowToGetOne) {
    auto c = recordedCommand(TraceMetadata{});
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.message().find("memscope-cli record"), std::string::npos) << c.message();
}

TEST(RecordedCommand, HookCommandSplitsAtSpaces) {
    auto c = recordedCommand(withProperties({{"command", "python3 train.py --lr 1e-3"}}));
    ASSERT_TRUE(c.ok()) << c.message();
    EXPECT_EQ(c->argv, (Args{"python3", "train.py", "--lr", "1e-3"}));
    EXPECT_FALSE(c->exact);
    EXPECT_FALSE(c->working_dir);
}

TEST(RecordedCommand, EmptyArgumentsSurviveTheSplit) {
    auto c = recordedCommand(withProperties({{"command", "python3 train.py  --x"}}));
    ASSERT_TRUE(c.ok()) << c.message();
    EXPECT_EQ(c->argv, (Args{"python3", "train.py", "", "--x"}));
}

TEST(RecordedCommand, ArgvIsExactEvenWithSpaces) {
    auto c =
        recordedCommand(withProperties({{"command", "python3 my train.py --name a b"},
                                        {"argv", R"(["python3","my train.py","--name","a b"])"},
                                        {"cwd", "/home/u/job"}}));
    ASSERT_TRUE(c.ok()) << c.message();
    EXPECT_EQ(c->argv, (Args{"python3", "my train.py", "--name", "a b"}));
    EXPECT_TRUE(c->exact);
    ASSERT_TRUE(c->working_dir);
    EXPECT_EQ(*c->working_dir, "/home/u/job");
}

TEST(RecordedCommand, BadInputIsAnError) {
    EXPECT_FALSE(recordedCommand(withProperties({{"command", ""}})).ok());
    EXPECT_FALSE(recordedCommand(withProperties({{"command", " x"}})).ok());
    EXPECT_FALSE(recordedCommand(withProperties({{"argv", "not json"}})).ok());
    EXPECT_FALSE(recordedCommand(withProperties({{"argv", "[1, 2]"}})).ok());
    EXPECT_FALSE(recordedCommand(withProperties({{"argv", R"({"a": "b"})"}})).ok());
    // argv cut short: it and the whole command disagree.
    EXPECT_FALSE(
        recordedCommand(withProperties({{"command", "a b c"}, {"argv", R"(["a","b"])"}})).ok());
    // A command cut at 4 KiB, with no argv to go by.
    EXPECT_FALSE(recordedCommand(withProperties({{"command", std::string(4096, 'x')}})).ok());
}

TEST(RecordedCommand, EmptyArgvFallsBackToTheCommand) {
    auto c = recordedCommand(withProperties({{"command", "./a.out"}, {"argv", "[]"}}));
    // "[]" joined is "", which disagrees with the command: refused, not guessed.
    EXPECT_FALSE(c.ok());
    c = recordedCommand(withProperties({{"argv", "[]"}}));
    EXPECT_FALSE(c.ok());
}

TEST(RecordApplyArguments, PolicyRunDirThenTheCommandAfterDashes) {
    const Args args = recordApplyArguments("layers:0-2+opt-in-bwd", "/runs/full.memscope",
                                           "/runs/applied", {"python3", "train.py", "--", "-o"});
    EXPECT_EQ(args,
              (Args{"record", "--apply", "layers:0-2+opt-in-bwd", "--from", "/runs/full.memscope",
                    "-o", "/runs/applied", "--", "python3", "train.py", "--", "-o"}));
}

TEST(AppliedRunFolderName, OnlyPlainCharacters) {
    EXPECT_EQ(appliedRunFolderName("layers:0-2+save:matmul@3+opt-in-bwd", "20261207-160501"),
              "applied-layers_0-2_save_matmul_3_opt-in-bwd-20261207-160501");
    EXPECT_EQ(appliedRunFolderName("../x", ""), "applied-p.._x");
    EXPECT_EQ(appliedRunFolderName("", "1"), "applied-p-1");
    EXPECT_LE(appliedRunFolderName(std::string(500, 'a'), "1").size(), size_t(8 + 80 + 2));
}

}  // namespace
}  // namespace memscope
