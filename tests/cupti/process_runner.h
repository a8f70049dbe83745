#pragma once
// Runs a program with extra environment and captures its output, for tests
// that drive the tracer from outside (as the CUDA driver and NVTX would).

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace memscope::test {

using EnvList = std::vector<std::pair<std::string, std::string>>;

struct ProcessResult {
    int status = -1;  // as from waitpid
    std::string out;
    std::string err;
};

class Process {
public:
    Process(const std::vector<std::string>& argv, const EnvList& env);
    ~Process();  // kills the process if still running
    Process(const Process&) = delete;
    Process& operator=(const Process&) = delete;

    int pid() const { return pid_; }
    // Reads stdout until it contains `text` or the timeout passes.
    bool waitForOutput(const std::string& text, std::chrono::milliseconds timeout);
    // Waits for the end (killing it after the timeout) and collects the rest.
    ProcessResult finish(std::chrono::milliseconds timeout);

private:
    void drain(int fd, std::string& into, int wait_ms);
    int pid_ = -1;
    int out_fd_ = -1;
    int err_fd_ = -1;
    std::string out_;
    std::string err_;
};

ProcessResult runProcess(const std::vector<std::string>& argv, const EnvList& env,
                         std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace memscope::test
