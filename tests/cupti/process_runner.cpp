#include "process_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

namespace memscope::test {

Process::Process(const std::vector<std::string>& argv, const EnvList& env) {
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
        dup2(out[1], STDOUT_FILENO);
        dup2(err[1], STDERR_FILENO);
        for (const auto& [key, value] : env) setenv(key.c_str(), value.c_str(), 1);
        std::vector<char*> args;
        for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execv(args[0], args.data());
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    out_fd_ = out[0];
    err_fd_ = err[0];
}

Process::~Process() {
    if (pid_ > 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
    if (out_fd_ >= 0) close(out_fd_);
    if (err_fd_ >= 0) close(err_fd_);
}

void Process::drain(int fd, std::string& into, int wait_ms) {
    if (fd < 0) return;
    pollfd p{fd, POLLIN, 0};
    while (poll(&p, 1, wait_ms) > 0) {
        char buffer[4096];
        const ssize_t n = read(fd, buffer, sizeof(buffer));
        if (n <= 0) break;
        into.append(buffer, size_t(n));
        wait_ms = 0;
    }
}

bool Process::waitForOutput(const std::string& text, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (out_.find(text) == std::string::npos) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        drain(out_fd_, out_, 50);
        drain(err_fd_, err_, 0);
    }
    return true;
}

ProcessResult Process::finish(std::chrono::milliseconds timeout) {
    ProcessResult result;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    for (;;) {
        drain(out_fd_, out_, 20);
        drain(err_fd_, err_, 0);
        const pid_t done = waitpid(pid_, &status, WNOHANG);
        if (done == pid_) break;
        if (std::chrono::steady_clock::now() > deadline) {
            kill(pid_, SIGKILL);
            waitpid(pid_, &status, 0);
            result.err = "<timed out>";
            break;
        }
    }
    pid_ = -1;
    drain(out_fd_, out_, 50);
    drain(err_fd_, err_, 50);
    result.status = status;
    result.out = out_;
    result.err += err_;
    return result;
}

ProcessResult runProcess(const std::vector<std::string>& argv, const EnvList& env,
                         std::chrono::milliseconds timeout) {
    Process process(argv, env);
    return process.finish(timeout);
}

}  // namespace memscope::test
