#include "record_child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "memscope_cupti/record_env.h"
#include "signal_relay.h"

namespace memscope::cli {
namespace {

namespace env = memscope::cupti::env;
using Clock = SignalRelay::Clock;

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
// One byte per signal on the self-pipe: its number, and this bit when the
// kernel sent it (a terminal).
constexpr unsigned char kFromTerminal = 0x80;
// With no signal waiting, the loop still looks at the command this often, in
// case a SIGCHLD was lost.
constexpr std::chrono::milliseconds kIdlePoll{100};

// The self-pipe's write end, for the handler (-1: none).
volatile sig_atomic_t g_self_pipe = -1;

// Async-signal-safe: one byte to the self-pipe; the loop does the rest.
void onSignal(int sig, siginfo_t* info, void*) {
    const int saved = errno;
    unsigned char byte = static_cast<unsigned char>(sig);
    if (sig != SIGCHLD && info && info->si_code == SI_KERNEL) byte |= kFromTerminal;
    const int fd = g_self_pipe;
    if (fd >= 0 && write(fd, &byte, 1) < 0) {
        // A full pipe already holds more signals than the loop can use.
    }
    errno = saved;
}

class Pipe {
public:
    Pipe() {
        if (pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) fds_[0] = fds_[1] = -1;
    }
    ~Pipe() {
        closeRead();
        closeWrite();
    }
    Pipe(const Pipe&) = delete;
    Pipe& operator=(const Pipe&) = delete;
    bool ok() const { return fds_[0] >= 0; }
    int read() const { return fds_[0]; }
    int write() const { return fds_[1]; }
    void closeRead() { closeEnd(0); }
    void closeWrite() { closeEnd(1); }

private:
    void closeEnd(int i) {
        if (fds_[i] >= 0) close(fds_[i]);
        fds_[i] = -1;
    }
    int fds_[2];
};

// The forwarded signals and SIGCHLD write to `self_pipe` while this lives;
// the previous handlers come back after.
class SignalsToPipe {
public:
    explicit SignalsToPipe(int self_pipe) {
        g_self_pipe = self_pipe;
        struct sigaction action {};
        action.sa_sigaction = onSignal;
        action.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&action.sa_mask);
        for (size_t i = 0; i < std::size(kForwarded); ++i)
            sigaction(kForwarded[i], &action, &previous_[i]);
        action.sa_flags |= SA_NOCLDSTOP;
        sigaction(SIGCHLD, &action, &previous_child_);
    }
    ~SignalsToPipe() {
        for (size_t i = 0; i < std::size(kForwarded); ++i)
            sigaction(kForwarded[i], &previous_[i], nullptr);
        sigaction(SIGCHLD, &previous_child_, nullptr);
        g_self_pipe = -1;
    }
    SignalsToPipe(const SignalsToPipe&) = delete;
    SignalsToPipe& operator=(const SignalsToPipe&) = delete;

private:
    struct sigaction previous_[std::size(kForwarded)]{};
    struct sigaction previous_child_ {};
};

// Reads what is there without blocking; false once every writer is gone.
template <typename Each>
bool drain(int fd, Each each) {
    unsigned char buffer[256];
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n > 0) {
            for (ssize_t i = 0; i < n; ++i) each(buffer[i]);
            continue;
        }
        if (n == 0) return false;
        if (errno == EINTR) continue;
        return true;  // EAGAIN: empty for now
    }
}

int pollTimeoutMs(const SignalRelay& relay, Clock::time_point now) {
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(kIdlePoll);
    if (auto deadline = relay.nextDeadline())
        wait = std::clamp(std::chrono::ceil<std::chrono::milliseconds>(*deadline - now),
                          std::chrono::milliseconds(0), wait);
    return static_cast<int>(wait.count());
}

// Waits for the command, passing on each signal it did not get by itself.
Result<int> waitForCommand(pid_t pid, Pipe& self, Pipe& ack) {
    SignalRelay relay;
    bool ack_open = ack.ok();
    for (;;) {
        int status = 0;
        const pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid) return status;
        if (done < 0 && errno != EINTR)
            return makeError(std::string("lost the command: ") + std::strerror(errno));

        pollfd fds[2] = {{self.read(), POLLIN, 0}, {ack_open ? ack.read() : -1, POLLIN, 0}};
        poll(fds, 2, pollTimeoutMs(relay, Clock::now()));  // EINTR: a signal, read below
        const Clock::time_point now = Clock::now();
        // Signals before bytes: a byte read together with its signal claims it.
        drain(self.read(), [&](unsigned char byte) {
            const int sig = byte & ~kFromTerminal;
            if (sig != SIGCHLD) relay.received(sig, (byte & kFromTerminal) != 0, now);
        });
        // Read continuously, so that a byte never waits here to be taken for
        // a later signal's; when the command and its children have all closed
        // the pipe, nothing acknowledges any more.
        if (ack_open)
            ack_open = drain(ack.read(), [&](unsigned char sig) { relay.acknowledged(sig, now); });
        // Not reaped yet, so the pid is still the command's (or its zombie's).
        for (int sig : relay.due(now)) kill(pid, sig);
    }
}

}  // namespace

Result<int> runRecordedCommand(const std::vector<std::string>& command, const Environment& set,
                               const std::function<void(pid_t)>& started) {
    if (command.empty()) return makeError("no command given");
    std::vector<char*> argv;
    for (const std::string& word : command) argv.push_back(const_cast<char*>(word.c_str()));
    argv.push_back(nullptr);

    Pipe self;
    if (!self.ok())
        return makeError(std::string("cannot start the command: pipe: ") + std::strerror(errno));
    // Without the acknowledgement pipe every signal is passed on, as before.
    Pipe ack;
    Environment child_env = set;
    if (ack.ok()) child_env.emplace_back(env::kSignalAckFd, std::to_string(ack.write()));

    // Handlers go in before the fork so that no signal falls between the two;
    // the child resets them before exec.
    // The signals are also blocked across the fork: one arriving before the
    // loop runs stays pending until it does; in the child it waits until the
    // default handlers are back.
    SignalsToPipe to_pipe(self.write());
    sigset_t handled, previous_mask;
    sigemptyset(&handled);
    for (int sig : kForwarded) sigaddset(&handled, sig);
    sigaddset(&handled, SIGCHLD);
    sigprocmask(SIG_BLOCK, &handled, &previous_mask);
    const pid_t pid = fork();
    if (pid < 0) {
        const int err = errno;
        sigprocmask(SIG_SETMASK, &previous_mask, nullptr);
        return makeError(std::string("cannot start the command: ") + std::strerror(err));
    }
    if (pid == 0) {
        for (int sig : kForwarded) signal(sig, SIG_DFL);
        signal(SIGCHLD, SIG_DFL);
        sigprocmask(SIG_SETMASK, &previous_mask, nullptr);
        // Only the acknowledgement pipe's write end survives exec (blocking
        // writes would stall the command's signal handling: it stays
        // O_NONBLOCK, as Python's set_wakeup_fd requires).
        if (ack.ok()) fcntl(ack.write(), F_SETFD, 0);
        for (const auto& [key, value] : child_env) setenv(key.c_str(), value.c_str(), 1);
        execvp(argv[0], argv.data());
        std::fprintf(stderr, "memscope-cli record: cannot run '%s': %s\n", argv[0],
                     std::strerror(errno));
        _exit(127);  // the shell's "command not found"
    }
    ack.closeWrite();  // the command's now: end of file once all its processes are gone
    if (started) started(pid);
    sigprocmask(SIG_SETMASK, &previous_mask, nullptr);
    const Result<int> status = waitForCommand(pid, self, ack);
    if (!status) return status;
    if (WIFEXITED(*status)) return WEXITSTATUS(*status);
    if (WIFSIGNALED(*status)) return 128 + WTERMSIG(*status);
    return 1;
}

}  // namespace memscope::cli
