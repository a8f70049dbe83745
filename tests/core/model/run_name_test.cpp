// Run names from command lines (the script and rank, "train.py rank 1") and
// the rule that tells runs of equal names apart.
#include "memscope/model/run_name.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace memscope {
namespace {

using Args = std::vector<std::string>;

TEST(RunName, PythonScriptIsTheName) {
    EXPECT_EQ(runNameFromCommand({"python3", "train.py"}, -1), "train.py");
    EXPECT_EQ(runNameFromCommand({"python3", "train.py"}, 1), "train.py rank 1");
    EXPECT_EQ(runNameFromCommand({"python", "train.py", "--lr", "1"}, 0), "train.py rank 0");
    EXPECT_EQ(
        runNameFromCommand({"/usr/bin/python3.11", "-u", "path/to/train.py", "--lr", "1"}, -1),
        "train.py");
    EXPECT_EQ(runNameFromCommand({"/opt/conda/bin/python3.13t", "/abs/train.py"}, 3),
              "train.py rank 3");
    EXPECT_EQ(runNameFromCommand({"python2.7", "old.py"}, -1), "old.py");
}

TEST(RunName, InterpreterOptionsAreSkipped) {
    // Options with values, apart and attached; flag groups; long options.
    EXPECT_EQ(runNameFromCommand({"python3", "-u", "-X", "foo", "train.py"}, -1), "train.py");
    EXPECT_EQ(runNameFromCommand({"python3", "-W", "ignore", "-X", "dev", "t.py"}, -1), "t.py");
    EXPECT_EQ(runNameFromCommand({"python3", "-Wignore", "-Xdev", "t.py", "-X", "x"}, -1), "t.py");
    EXPECT_EQ(runNameFromCommand({"python3", "-uB", "-OO", "-E", "t.py"}, -1), "t.py");
    EXPECT_EQ(runNameFromCommand({"python3", "-uX", "importtime", "t.py"}, -1), "t.py");
    EXPECT_EQ(runNameFromCommand({"python3", "--check-hash-based-pycs", "always", "t.py"}, -1),
              "t.py");
    EXPECT_EQ(runNameFromCommand({"python3", "-u", "--", "t.py", "-u"}, -1), "t.py");
    // Options after the script are the script's.
    EXPECT_EQ(runNameFromCommand({"python3", "t.py", "-m", "x", "-c", "y"}, -1), "t.py");
}

TEST(RunName, ModuleCodeStdinAndTheInteractiveInterpreter) {
    EXPECT_EQ(
        runNameFromCommand(
            {"python", "-m", "torch.distributed.run", "--nproc-per-node", "2", "train.py"}, -1),
        "torch.distributed.run");
    EXPECT_EQ(runNameFromCommand({"python3", "-u", "-mtorch.distributed.run", "t.py"}, 0),
              "torch.distributed.run rank 0");
    EXPECT_EQ(runNameFromCommand({"python3", "-m"}, -1), "python -m");
    EXPECT_EQ(runNameFromCommand({"python3", "-c", "import torch; print(1)"}, -1), "python -c");
    EXPECT_EQ(runNameFromCommand({"python3.11", "-uc", "print(1)"}, 2), "python -c rank 2");
    EXPECT_EQ(runNameFromCommand({"python3", "-cprint(1)"}, -1), "python -c");
    EXPECT_EQ(runNameFromCommand({"python3", "-"}, -1), "python -");
    EXPECT_EQ(runNameFromCommand({"python3"}, -1), "python");
    EXPECT_EQ(runNameFromCommand({"python3", "-i", "-u"}, -1), "python");
}

TEST(RunName, SysArgvAsPythonShowsIt) {
    EXPECT_EQ(runNameFromCommand({"path/to/train.py", "--lr", "1"}, 1), "train.py rank 1");
    EXPECT_EQ(runNameFromCommand({"-c"}, -1), "python -c");
    EXPECT_EQ(runNameFromCommand({"-c", "x"}, -1), "python -c");
    EXPECT_EQ(runNameFromCommand({"-m"}, -1), "python -m");
    EXPECT_EQ(runNameFromCommand({""}, -1), "python");
}

TEST(RunName, PlainProgramsAreTheirBaseName) {
    EXPECT_EQ(runNameFromCommand({"./a.out"}, -1), "a.out");
    EXPECT_EQ(runNameFromCommand({"/opt/bin/my_cuda_app", "--gpus", "2"}, 0), "my_cuda_app rank 0");
    EXPECT_EQ(runNameFromCommand({"torchrun", "--nproc-per-node", "2", "train.py"}, -1),
              "torchrun");
    // Not interpreters: names that only begin with "python".
    EXPECT_EQ(runNameFromCommand({"/usr/bin/python3-config", "--libs"}, -1), "python3-config");
    EXPECT_EQ(runNameFromCommand({"pythonista", "x.py"}, -1), "pythonista");
    EXPECT_EQ(runNameFromCommand({"python3.", "x.py"}, -1), "python3.");
}

TEST(RunName, NothingToNameByFallsBackToThePid) {
    EXPECT_EQ(runNameFromCommand({}, -1), "");
    EXPECT_EQ(runNameFromCommand({}, 2), "");
    EXPECT_EQ(runNameFromCommand({"/"}, 0), "");
    EXPECT_EQ(fallbackRunName(30337, -1), "pid 30337");
    EXPECT_EQ(fallbackRunName(30337, 1), "pid 30337 rank 1");
    EXPECT_EQ(fallbackRunName(-1, 1), "");
}

TEST(RunName, LongNamesAreCutAtACharacterBoundary) {
    std::string script(151, 'a');
    for (int i = 0; i < 40; ++i) script += "\xc3\xa9";  // é: 2 bytes each
    const std::string name = runNameFromCommand({"python3", script + ".py"}, 1);
    ASSERT_LE(name.size(), 200u + 7);
    EXPECT_TRUE(name.ends_with(" rank 1")) << name;
    const std::string cut = name.substr(0, name.size() - 7);
    EXPECT_EQ(cut.size(), 199u);  // 151 ASCII bytes, then whole 2-byte characters
    EXPECT_EQ(cut.substr(0, 151), std::string(151, 'a'));
}

TEST(RunName, PythonPrefersTheInterpretersCommandLine) {
    // Python 3.10+: orig_argv has the interpreter and its options.
    EXPECT_EQ(runNameFromPython({"python3", "-u", "train.py"}, {"train.py"}, 1), "train.py rank 1");
    // -m: sys.argv[0] is the module's file; orig_argv names the module.
    EXPECT_EQ(runNameFromPython({"python3", "-m", "mypkg.train", "--x"},
                                {"/src/mypkg/train.py", "--x"}, -1),
              "mypkg.train");
    // Older Pythons: the hook writes sys.argv for both.
    EXPECT_EQ(runNameFromPython({"path/train.py"}, {"path/train.py"}, 0), "train.py rank 0");
    EXPECT_EQ(runNameFromPython({}, {"train.py"}, -1), "train.py");
    EXPECT_EQ(runNameFromPython({"-c"}, {"-c"}, -1), "python -c");
    // -c: a launcher that set sys.argv names the program.
    EXPECT_EQ(runNameFromPython({"python3", "-c", "import runpy; ..."}, {"train", "3"}, -1),
              "train");
    EXPECT_EQ(runNameFromPython({"python3", "-c", "print(1)"}, {"-c"}, 0), "python -c rank 0");
    EXPECT_EQ(runNameFromPython({"python3", "-c", "print(1)"}, {}, -1), "python -c");
    // Neither names anything.
    EXPECT_EQ(runNameFromPython({}, {}, 1), "");
}

TEST(RunName, InterpreterNames) {
    for (const char* p : {"python", "python3", "python3.11", "python3.13t", "python3.11d"})
        EXPECT_TRUE(isPythonInterpreter(p)) << p;
    for (const char* p :
         {"", "pytho", "pythonw3x", "python3-dbg", "python.3", "pythont", "ipython"})
        EXPECT_FALSE(isPythonInterpreter(p)) << p;
}

TEST(RunName, DistinctNamesLeaveUniqueNamesAlone) {
    EXPECT_EQ(distinctRunNames({}), std::vector<std::string>{});
    EXPECT_EQ(distinctRunNames({{"train.py rank 0", 10, "/r/a.memscope"},
                                {"train.py rank 1", 11, "/r/b.memscope"}}),
              (Args{"train.py rank 0", "train.py rank 1"}));
    // An unnamed run shows its file's name.
    EXPECT_EQ(distinctRunNames({{"", -1, "/runs/x.memscope"}, {"", -1, "/runs/folder/"}}),
              (Args{"x.memscope", "folder"}));
}

TEST(RunName, EqualNamesGetThePidThenTheFileThenTheirPosition) {
    // Two runs of one script: their pids tell them apart.
    EXPECT_EQ(distinctRunNames({{"train.py", 30337, "/a/memscope-30337.memscope"},
                                {"bench.py", 5, "/a/memscope-5.memscope"},
                                {"train.py", 30400, "/b/memscope-30400.memscope"}}),
              (Args{"train.py (pid 30337)", "bench.py", "train.py (pid 30400)"}));
    // Same pid (two containers): the file names.
    EXPECT_EQ(distinctRunNames(
                  {{"train.py", 1, "/a/run1.memscope"}, {"train.py", 1, "/a/run2.memscope"}}),
              (Args{"train.py (run1.memscope)", "train.py (run2.memscope)"}));
    // A pid unknown: the file names too.
    EXPECT_EQ(distinctRunNames({{"mlp", -1, "/a/x.memscope"}, {"mlp", 3, "/a/y.memscope"}}),
              (Args{"mlp (x.memscope)", "mlp (y.memscope)"}));
    // Same file name in two folders: the paths.
    EXPECT_EQ(distinctRunNames({{"mlp", -1, "/a/t.memscope"}, {"mlp", -1, "/b/t.memscope"}}),
              (Args{"mlp (/a/t.memscope)", "mlp (/b/t.memscope)"}));
    // One file opened twice: by position.
    EXPECT_EQ(distinctRunNames({{"mlp", 7, "/a/t.memscope"},
                                {"mlp", 7, "/a/t.memscope"},
                                {"mlp", 7, "/a/t.memscope"}}),
              (Args{"mlp", "mlp (2)", "mlp (3)"}));
}

TEST(RunName, DistinctNamesNeverMeetAnotherRunsName) {
    const Args names = distinctRunNames({{"mlp (2)", -1, "/a/z.memscope"},
                                         {"mlp", -1, "/a/t.memscope"},
                                         {"mlp", -1, "/a/t.memscope"}});
    EXPECT_EQ(names, (Args{"mlp (2)", "mlp", "mlp (2) (2)"}));
}

// Issue 64, class 6: a predicted run is named so from its provenance, not
// its name: renamed like the measured run, it still reads "(predicted)".
TEST(RunName, APredictedRunIsNamedSoWhateverItIsCalled) {
    EXPECT_EQ(distinctRunNames({{"mlp-full", -1, "/a/mlp-full.memscope"},
                                {"mlp-full", -1, "/a/run2.memscope", true},
                                {"block (predicted)", -1, "/a/b.memscope", true}}),
              (Args{"mlp-full", "mlp-full (predicted)", "block (predicted)"}));
}

// record --apply: the trace of a run with a policy applied says so wherever
// runs are named, once.
TEST(RunName, AnAppliedPolicyIsPartOfTheName) {
    EXPECT_EQ(appliedRunName("train.py", "layers:1-2"), "train.py (applied: layers:1-2)");
    EXPECT_EQ(appliedRunName("train.py (applied: layers:1-2)", "layers:1-2"),
              "train.py (applied: layers:1-2)");
    EXPECT_EQ(appliedRunName("train.py", ""), "train.py");
    RunLabel plain{"train.py", 10, "/a/plain.memscope"};
    RunLabel applied{"train.py", 11, "/a/applied.memscope"};
    applied.applied_policy = "opt-in-bwd";
    RunLabel named{"train.py (applied: opt-in-bwd)", 12, "/a/b.memscope"};
    named.applied_policy = "opt-in-bwd";
    EXPECT_EQ(distinctRunNames({plain, applied}),
              (Args{"train.py", "train.py (applied: opt-in-bwd)"}));
    // Two applied runs of one policy are still told apart.
    EXPECT_EQ(distinctRunNames({applied, named}),
              (Args{"train.py (applied: opt-in-bwd) (pid 11)",
                    "train.py (applied: opt-in-bwd) (pid 12)"}));
}

}  // namespace
}  // namespace memscope
