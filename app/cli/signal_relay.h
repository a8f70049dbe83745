#pragma once
// Which of the signals `record` receives it must pass on to the command, so
// that the command gets each signal once.
//
// A signal sent to the whole process group (Ctrl-C at a terminal, `kill -INT
// -PGID`, `timeout`) reaches the command by itself; one sent to `record` alone
// (kill PID, a batch scheduler) does not. The command tells which it was: its
// Python hook makes the write end of a pipe its signal wakeup fd
// (record_env.h: MEMSCOPE_SIGNAL_ACK_FD), so every signal it receives writes
// one byte, the signal's number, at once. A signal with no such byte within
// kAckWait is passed on.
//
// This is the bookkeeping alone, with the time passed in: record_child.cpp
// feeds it what the signal handler and the pipe say.

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace memscope::cli {

class SignalRelay {
public:
    using Clock = std::chrono::steady_clock;

    // How long a signal waits for the command's own byte before it is passed on.
    static constexpr std::chrono::milliseconds kAckWait{250};
    // A byte that arrives up to this long before `record` has seen the signal
    // still counts: a group kill can reach the command first.
    static constexpr std::chrono::milliseconds kEarlyAck{50};
    // The command's byte for a signal it was known to get (one passed on, one
    // from the terminal) is expected this long, then no longer waited for (a
    // command that does not acknowledge never sends it).
    static constexpr std::chrono::milliseconds kExpectedAck{250};

    // `record` received `sig`; from_terminal: the kernel sent it (si_code
    // SI_KERNEL, a terminal's Ctrl-C), which always reaches the whole group.
    void received(int sig, bool from_terminal, Clock::time_point now);
    // The command wrote `sig` to the acknowledgement pipe.
    void acknowledged(int sig, Clock::time_point now);
    // The signals whose wait ended without the command's byte, oldest first:
    // pass them on now. Each is then expected to be acknowledged.
    std::vector<int> due(Clock::time_point now);
    // When `due` next has something to say, if ever.
    std::optional<Clock::time_point> nextDeadline() const;

private:
    struct Timed {
        int sig;
        Clock::time_point at;  // when it came (or, for an expectation, when it ends)
    };
    void expire(Clock::time_point now);
    static bool take(std::deque<Timed>& from, int sig);

    std::deque<Timed> waiting_;    // received, not acknowledged yet; at: the deadline
    std::deque<Timed> expected_;   // the command got these for sure; at: the deadline
    std::deque<Timed> unclaimed_;  // bytes no signal has claimed yet; at: arrival
};

}  // namespace memscope::cli
