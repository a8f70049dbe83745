#include "record_child.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace memscope::cli {
namespace {

volatile sig_atomic_t g_child = 0;
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

void forward(int sig, siginfo_t* info, void*) {
    // Ctrl-C at a terminal signals the whole foreground group, the command
    // included: sending it again would interrupt it twice. Signals sent by a
    // process (kill, a batch scheduler) reach only us and are passed on.
    if (info && info->si_code == SI_KERNEL) return;
    if (g_child > 0) kill(g_child, sig);
}

// Restores the previous handlers when the command is done.
class ForwardSignals {
public:
    ForwardSignals() {
        struct sigaction action {};
        action.sa_sigaction = forward;
        action.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&action.sa_mask);
        for (size_t i = 0; i < std::size(kForwarded); ++i)
            sigaction(kForwarded[i], &action, &previous_[i]);
    }
    ~ForwardSignals() {
        for (size_t i = 0; i < std::size(kForwarded); ++i)
            sigaction(kForwarded[i], &previous_[i], nullptr);
    }

private:
    struct sigaction previous_[std::size(kForwarded)]{};
};

}  // namespace

Result<int> runRecordedCommand(const std::vector<std::string>& command, const Environment& set) {
    if (command.empty()) return makeError("no command given");
    std::vector<char*> argv;
    for (const std::string& word : command) argv.push_back(const_cast<char*>(word.c_str()));
    argv.push_back(nullptr);

    // Handlers go in before the fork so that no signal falls between the two;
    // the child resets them before exec.
    // The forwarded signals are also blocked across the fork: one arriving
    // before g_child is set stays pending and is forwarded once it is; in the
    // child it waits until the default handlers are back.
    ForwardSignals forwarding;
    sigset_t forwarded, previousMask;
    sigemptyset(&forwarded);
    for (int sig : kForwarded) sigaddset(&forwarded, sig);
    sigprocmask(SIG_BLOCK, &forwarded, &previousMask);
    const pid_t pid = fork();
    if (pid < 0) {
        const int err = errno;
        sigprocmask(SIG_SETMASK, &previousMask, nullptr);
        return makeError(std::string("cannot start the command: ") + std::strerror(err));
    }
    if (pid == 0) {
        for (int sig : kForwarded) signal(sig, SIG_DFL);
        sigprocmask(SIG_SETMASK, &previousMask, nullptr);
        for (const auto& [key, value] : set) setenv(key.c_str(), value.c_str(), 1);
        execvp(argv[0], argv.data());
        std::fprintf(stderr, "memscope-cli record: cannot run '%s': %s\n", argv[0],
                     std::strerror(errno));
        _exit(127);  // the shell's "command not found"
    }
    g_child = pid;
    sigprocmask(SIG_SETMASK, &previousMask, nullptr);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            g_child = 0;
            return makeError(std::string("lost the command: ") + std::strerror(errno));
        }
    }
    g_child = 0;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 1;
}

}  // namespace memscope::cli
