// What `memscope-cli record` does around the command, on the code the CLI
// links (memscope_cli_record): signals passed on once (the relay's
// bookkeeping, then the real wait loop with a stand-in command), the
// interpreter flags that keep the hook out, the process watch, and the
// explanations for processes that were not recorded.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "process_watch.h"
#include "python_flags.h"
#include "record_child.h"
#include "record_diagnosis.h"
#include "signal_relay.h"

using namespace memscope::cli;
using namespace std::chrono_literals;

namespace {

// ---------------------------------------------------------------- relay

using Clock = SignalRelay::Clock;
const Clock::time_point t0 = Clock::time_point() + 1000s;

TEST(SignalRelay, AnAcknowledgedSignalIsNotPassedOn) {
    SignalRelay r;
    r.received(SIGINT, false, t0);
    EXPECT_TRUE(r.due(t0 + 10ms).empty());
    r.acknowledged(SIGINT, t0 + 20ms);
    EXPECT_FALSE(r.nextDeadline());
    EXPECT_TRUE(r.due(t0 + 1s).empty());
}

TEST(SignalRelay, AnUnacknowledgedSignalIsPassedOnAfterTheWait) {
    SignalRelay r;
    r.received(SIGINT, false, t0);
    ASSERT_TRUE(r.nextDeadline());
    EXPECT_EQ(*r.nextDeadline(), t0 + SignalRelay::kAckWait);
    EXPECT_TRUE(r.due(t0 + SignalRelay::kAckWait - 1ms).empty());
    EXPECT_EQ(r.due(t0 + SignalRelay::kAckWait), std::vector<int>{SIGINT});
    EXPECT_TRUE(r.due(t0 + 2s).empty());  // once
}

TEST(SignalRelay, TheByteOfAnotherSignalDoesNotCount) {
    SignalRelay r;
    r.received(SIGTERM, false, t0);
    r.acknowledged(SIGINT, t0 + 5ms);
    EXPECT_EQ(r.due(t0 + SignalRelay::kAckWait), std::vector<int>{SIGTERM});
}

TEST(SignalRelay, AByteJustBeforeTheSignalCountsAnOldOneDoesNot) {
    SignalRelay r;
    // A group kill that reached the command first.
    r.acknowledged(SIGINT, t0);
    r.received(SIGINT, false, t0 + 10ms);
    EXPECT_TRUE(r.due(t0 + 1s).empty());
    // The command's own signal, long before ours: stale.
    r.acknowledged(SIGINT, t0 + 2s);
    r.received(SIGINT, false, t0 + 3s);
    EXPECT_EQ(r.due(t0 + 3s + SignalRelay::kAckWait), std::vector<int>{SIGINT});
}

TEST(SignalRelay, TheByteForASignalPassedOnIsNotTakenForTheNext) {
    SignalRelay r;
    r.received(SIGINT, false, t0);
    ASSERT_EQ(r.due(t0 + 250ms), std::vector<int>{SIGINT});
    r.acknowledged(SIGINT, t0 + 251ms);     // the command got ours
    r.received(SIGINT, false, t0 + 260ms);  // a second kill of record alone
    EXPECT_EQ(r.due(t0 + 260ms + SignalRelay::kAckWait), std::vector<int>{SIGINT});
}

TEST(SignalRelay, ATerminalSignalIsNeverPassedOnAndItsByteIsSpent) {
    SignalRelay r;
    r.received(SIGINT, true, t0);
    EXPECT_FALSE(r.nextDeadline());
    r.acknowledged(SIGINT, t0 + 5ms);      // the command's own Ctrl-C
    r.received(SIGINT, false, t0 + 20ms);  // then a kill of record alone
    EXPECT_EQ(r.due(t0 + 20ms + SignalRelay::kAckWait), std::vector<int>{SIGINT});
}

TEST(SignalRelay, TwoSignalsTwoBytes) {
    SignalRelay r;
    r.received(SIGINT, false, t0);
    r.received(SIGINT, false, t0 + 1ms);
    r.acknowledged(SIGINT, t0 + 2ms);
    EXPECT_EQ(r.due(t0 + 1ms + SignalRelay::kAckWait), std::vector<int>{SIGINT});
}

// ---------------------------------------------------------------- flags

PythonFlags flags(std::vector<std::string> argv) {
    return parsePythonFlags(argv);
}

TEST(PythonFlags, SingleCombinedAndSeparate) {
    EXPECT_TRUE(flags({"python3", "-I", "x.py"}).isolated);
    EXPECT_TRUE(flags({"python3", "-E", "x.py"}).ignore_env);
    EXPECT_TRUE(flags({"python3", "-S", "x.py"}).no_site);
    const PythonFlags is = flags({"python3", "-IS", "x.py"});
    EXPECT_TRUE(is.isolated && is.no_site);
    EXPECT_TRUE(flags({"python3", "-u", "-I", "x.py"}).isolated);
    EXPECT_TRUE(flags({"python3", "-uI", "x.py"}).isolated);
    EXPECT_TRUE(flags({"python3", "-W", "ignore", "-X", "dev", "-E", "x.py"}).ignore_env);
}

TEST(PythonFlags, StopAtTheProgram) {
    // Words after the script, -m or -c are the program's own.
    const PythonFlags none = flags({"python3", "x.py", "-I", "-E", "-S"});
    EXPECT_FALSE(none.isolated || none.ignore_env || none.no_site);
    EXPECT_FALSE(flags({"python3", "-m", "pkg", "-I"}).isolated);
    EXPECT_FALSE(flags({"python3", "-c", "pass", "-I"}).isolated);
    EXPECT_FALSE(flags({"python3", "-Ic", "-S"}).no_site);  // -c's value is "-S"
    EXPECT_TRUE(flags({"python3", "-Ic", "-S"}).isolated);
    EXPECT_FALSE(flags({"python3", "-", "-I"}).isolated);
    EXPECT_FALSE(flags({"python3", "--", "-I"}).isolated);
    // A value attached to -W or -X is not a flag of its own.
    EXPECT_FALSE(flags({"python3", "-WIgnore", "x.py"}).isolated);
    EXPECT_FALSE(flags({"python3", "-XEs", "x.py"}).ignore_env);
    EXPECT_FALSE(flags({"python3", "--check-hash-based-pycs", "-I", "x.py"}).isolated);
}

TEST(PythonFlags, WhichProgramsArePython) {
    for (const char* p : {"python", "python3", "/usr/bin/python3.11", "python3.11d",
                          "/opt/venv/bin/python", "python3-dbg"})
        EXPECT_TRUE(isPythonInterpreter(p)) << p;
    for (const char* p : {"sh", "pythonista", "/usr/bin/python3-config", "torchrun", ""})
        EXPECT_FALSE(isPythonInterpreter(p)) << p;
}

// ---------------------------------------------------------------- diagnosis

const std::string kHook = "/opt/memscope/share/memscope/pyhook";

WatchedProcess torchPython(pid_t pid, std::vector<std::string> argv) {
    WatchedProcess p;
    p.pid = pid;
    p.ppid = 1;
    p.argv = std::move(argv);
    p.torch = true;
    p.environment_read = true;
    p.memscope_hook = "1";
    p.python_path = kHook + ":/home/me/lib";
    return p;
}

RecordingOutcome outcome(bool nothing) {
    RecordingOutcome o;
    o.hook_folder = kHook;
    o.output_dir = "/runs";
    o.nothing_recorded = nothing;
    return o;
}

MissCause causeOf(const WatchedProcess& p, bool nothing = true) {
    const auto misses = findMisses({p}, outcome(nothing));
    EXPECT_EQ(misses.size(), 1u);
    return misses.empty() ? MissCause::NotExamined : misses[0].cause;
}

TEST(RecordDiagnosis, EachCauseIsFound) {
    EXPECT_EQ(causeOf(torchPython(10, {"python3", "-I", "t.py"})), MissCause::Isolated);
    EXPECT_EQ(causeOf(torchPython(10, {"python3", "-E", "t.py"})), MissCause::IgnoreEnvironment);
    EXPECT_EQ(causeOf(torchPython(10, {"python3", "-S", "t.py"})), MissCause::NoSite);
    WatchedProcess cleared = torchPython(10, {"python3", "t.py"});
    cleared.memscope_hook.reset();
    EXPECT_EQ(causeOf(cleared), MissCause::EnvironmentCleared);
    WatchedProcess reset = torchPython(10, {"python3", "t.py"});
    reset.python_path = "/nowhere";
    EXPECT_EQ(causeOf(reset), MissCause::PythonPathReset);
    reset.python_path.reset();
    EXPECT_EQ(causeOf(reset), MissCause::PythonPathReset);
    EXPECT_EQ(causeOf(torchPython(10, {"python3", "t.py"})), MissCause::HookRecordedNothing);
    EXPECT_EQ(causeOf(torchPython(10, {"./trainer"})), MissCause::NotPython);
}

TEST(RecordDiagnosis, RecordedForkedAndHelperProcessesAreNotMisses) {
    RecordingOutcome o = outcome(false);
    o.recorded = {10};
    WatchedProcess worker = torchPython(11, {"python3", "-I", "t.py"});
    worker.forked_copy = true;
    const WatchedProcess helper = torchPython(12, {"python3", "helper.py"});
    WatchedProcess no_torch = torchPython(13, {"python3", "-I", "tool.py"});
    no_torch.torch = false;
    const std::vector<WatchedProcess> all = {torchPython(10, {"python3", "-I", "t.py"}), worker,
                                             helper, no_torch};
    EXPECT_TRUE(findMisses(all, o).empty());
    // A blocked hook is worth a word even when something else was recorded.
    const auto misses = findMisses({torchPython(14, {"python3", "-E", "t.py"})}, o);
    ASSERT_EQ(misses.size(), 1u);
    EXPECT_EQ(misses[0].cause, MissCause::IgnoreEnvironment);
}

TEST(RecordDiagnosis, TheMessageNamesTheProcessTheCauseAndTheFix) {
    const RecordingOutcome o = outcome(true);
    const std::string isolated =
        explainMiss({torchPython(4242, {"python3", "-I", "train.py"}), MissCause::Isolated}, o);
    EXPECT_NE(isolated.find("process 4242 (python3 -I train.py)"), std::string::npos) << isolated;
    EXPECT_NE(isolated.find("-I (isolated mode)"), std::string::npos) << isolated;
    EXPECT_NE(isolated.find("import sys; sys.path.insert(0, \"" + kHook + "\")"), std::string::npos)
        << isolated;
    EXPECT_NE(isolated.find("import memscope_hook; memscope_hook.activate()"), std::string::npos);

    WatchedProcess reset = torchPython(7, {"python3", "t.py"});
    reset.python_path = "/nowhere";
    const std::string path = explainMiss({reset, MissCause::PythonPathReset}, o);
    EXPECT_NE(path.find("PYTHONPATH was reset by the script or a wrapper"), std::string::npos);
    EXPECT_NE(path.find("\"/nowhere\""), std::string::npos) << path;

    const std::string cleared = explainMiss({reset, MissCause::EnvironmentCleared}, o);
    EXPECT_NE(cleared.find("MEMSCOPE_OUTPUT_DIR\", \"/runs\""), std::string::npos) << cleared;
}

TEST(RecordDiagnosis, TheListOfWhatRanSkipsForksAndCounts) {
    std::vector<WatchedProcess> ran;
    for (pid_t pid = 1; pid <= 8; ++pid) {
        WatchedProcess p;
        p.pid = pid;
        p.argv = {"worker", std::to_string(pid)};
        p.forked_copy = pid == 2;
        ran.push_back(p);
    }
    ran[0].argv = {"python3", "-S", "a b.py"};
    ran[0].environment_read = true;
    const std::string text = listProcesses(ran, kHook, 3);
    EXPECT_NE(text.find("1  python3 -S \"a b.py\"   (-S: the hook cannot load)"), std::string::npos)
        << text;
    EXPECT_EQ(text.find("worker 2"), std::string::npos) << text;
    EXPECT_NE(text.find("worker 4"), std::string::npos) << text;
    EXPECT_NE(text.find("... and 4 more"), std::string::npos) << text;
}

// ---------------------------------------------------------------- process watch

// Forks and execs argv; the caller waits.
pid_t spawn(const std::vector<std::string>& argv) {
    std::vector<char*> words;
    for (const std::string& w : argv) words.push_back(const_cast<char*>(w.c_str()));
    words.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
        execvp(words[0], words.data());
        _exit(127);
    }
    return pid;
}

TEST(ProcessWatch, SeesTheDescendantsAndStopsAtOnce) {
    ProcessWatch watch(5s);  // one look at the start, then one more only if asked
    const pid_t sh = spawn({"/bin/sh", "-c", "/bin/sleep 1; /bin/true"});
    ASSERT_GT(sh, 0);
    std::this_thread::sleep_for(300ms);  // sh has forked its sleep by now
    watch.start(sh);
    std::this_thread::sleep_for(100ms);
    const auto before_stop = std::chrono::steady_clock::now();
    const auto seen = watch.stop();
    EXPECT_LT(std::chrono::steady_clock::now() - before_stop, 1s);  // not a 5 s period
    int status = 0;
    waitpid(sh, &status, 0);
    bool saw_sh = false, saw_sleep = false;
    for (const WatchedProcess& p : seen) {
        if (p.pid == sh && !p.argv.empty() && p.argv[0] == "/bin/sh") saw_sh = true;
        if (p.ppid == sh && !p.argv.empty() && p.argv[0] == "/bin/sleep") {
            saw_sleep = true;
            EXPECT_FALSE(p.forked_copy);
            EXPECT_FALSE(p.torch);
            EXPECT_TRUE(p.environment_read);
        }
    }
    EXPECT_TRUE(saw_sh);
    EXPECT_TRUE(saw_sleep);
}

TEST(ProcessWatch, AForkThatDidNotExecIsItsParentsCopy) {
    // sh -c '... & wait': the subshell for `&` is a fork of sh that has not
    // exec'd while it waits for its own child.
    const pid_t sh = spawn({"/bin/sh", "-c", "( /bin/sleep 1; /bin/true ) & wait"});
    ASSERT_GT(sh, 0);
    ProcessWatch watch(100ms);
    watch.start(sh);
    std::this_thread::sleep_for(600ms);
    const auto seen = watch.stop();
    waitpid(sh, nullptr, 0);
    bool saw_copy = false;
    for (const WatchedProcess& p : seen)
        if (p.ppid == sh && p.forked_copy) saw_copy = true;
    EXPECT_TRUE(saw_copy);
    for (const WatchedProcess& p : seen)
        if (p.pid == sh) {
            EXPECT_FALSE(p.forked_copy);
        }
}

// ---------------------------------------------------------------- signals, end to end

#ifndef MEMSCOPE_TEST_PYTHON
#define MEMSCOPE_TEST_PYTHON ""
#endif

struct StandIn {
    int exit_code = -1;
    std::string output;
};

// Runs count_sigint.py under runRecordedCommand in a process of its own, in
// a process group of its own (as a shell's job), and signals it once the
// stand-in is ready: `group` to the whole group (record and the command),
// else to record alone.
StandIn signalledRun(int sig, bool group, const std::vector<std::string>& extra) {
    StandIn result;
    int out[2];
    if (pipe(out) != 0) return result;
    const pid_t record = fork();
    if (record == 0) {
        setpgid(0, 0);
        dup2(out[1], STDOUT_FILENO);
        close(out[0]);
        close(out[1]);
        std::vector<std::string> command = {MEMSCOPE_TEST_PYTHON,
                                            MEMSCOPE_RECORD_SCRIPTS "/count_sigint.py"};
        command.insert(command.end(), extra.begin(), extra.end());
        const auto code = runRecordedCommand(command, {});
        _exit(code ? *code : 200);
    }
    setpgid(record, record);  // either side may come first
    close(out[1]);
    auto readLine = [&](std::chrono::seconds limit) {
        std::string line;
        const auto deadline = std::chrono::steady_clock::now() + limit;
        char c = 0;
        while (std::chrono::steady_clock::now() < deadline) {
            pollfd p{out[0], POLLIN, 0};
            if (poll(&p, 1, 100) <= 0) continue;
            if (read(out[0], &c, 1) != 1) break;
            if (c == '\n') break;
            line += c;
        }
        return line;
    };
    if (readLine(30s) == "ready") {
        if (group)
            killpg(record, sig);
        else
            kill(record, sig);
        result.output = readLine(30s);
    }
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (waitpid(record, &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > deadline) {
            killpg(record, SIGKILL);
            waitpid(record, &status, 0);
            break;
        }
        std::this_thread::sleep_for(20ms);
    }
    close(out[0]);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
}

class RecordSignals : public ::testing::Test {
protected:
    void SetUp() override {
        if (std::string(MEMSCOPE_TEST_PYTHON).empty()) GTEST_SKIP() << "no python3 found";
    }
};

TEST_F(RecordSignals, AGroupSigintReachesTheCommandOnce) {
    const StandIn r = signalledRun(SIGINT, true, {});
    EXPECT_EQ(r.output, "sigint 1");
    EXPECT_EQ(r.exit_code, 0);
}

TEST_F(RecordSignals, ASigintToRecordAloneIsPassedOnOnce) {
    const StandIn r = signalledRun(SIGINT, false, {});
    EXPECT_EQ(r.output, "sigint 1");
    EXPECT_EQ(r.exit_code, 0);
}

TEST_F(RecordSignals, ACommandThatDoesNotAcknowledgeGetsItOnce) {
    const StandIn r = signalledRun(SIGINT, false, {"--no-ack"});
    EXPECT_EQ(r.output, "sigint 1");
    EXPECT_EQ(r.exit_code, 0);
}

TEST_F(RecordSignals, AnOldByteDoesNotStandForANewSignal) {
    // The stand-in signals itself first (one byte, long before ours): the
    // SIGINT sent to record alone must still be passed on.
    const StandIn r = signalledRun(SIGINT, false, {"--self-first"});
    EXPECT_EQ(r.output, "sigint 2");
    EXPECT_EQ(r.exit_code, 0);
}

TEST_F(RecordSignals, ASigtermPassedOnEndsTheCommandWith143) {
    // No Python handler for SIGTERM: no byte, passed on, the default kills it.
    const StandIn r = signalledRun(SIGTERM, false, {});
    EXPECT_EQ(r.output, "");
    EXPECT_EQ(r.exit_code, 128 + SIGTERM);
}

}  // namespace
