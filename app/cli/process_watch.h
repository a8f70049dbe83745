#pragma once
// What ran under `record`: a thread looks at /proc every so often for the
// command and its descendants, and notes for each what decides whether
// memscope could record it (did it load LibTorch, with which command line and
// environment). record_diagnosis.h turns that into explanations.

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace memscope::cli {

struct WatchedProcess {
    pid_t pid = 0;
    pid_t ppid = 0;
    std::vector<std::string> argv;             // as of its last exec
    bool torch = false;                        // maps libtorch*.so or libc10.so
    bool environment_read = false;             // /proc/PID/environ could be read
    std::optional<std::string> memscope_hook;  // MEMSCOPE_HOOK, when set
    std::optional<std::string> python_path;    // PYTHONPATH, when set
    // A fork that has not exec'd (a DataLoader worker, or the command before
    // its exec): what it shows is its parent's.
    bool forked_copy = false;
};

class ProcessWatch {
public:
    static constexpr std::chrono::milliseconds kPeriod{200};

    explicit ProcessWatch(std::chrono::milliseconds period = kPeriod) : period_(period) {}
    ~ProcessWatch() { stop(); }
    ProcessWatch(const ProcessWatch&) = delete;
    ProcessWatch& operator=(const ProcessWatch&) = delete;

    // Starts the thread (with every signal blocked), looking at `root` and
    // its descendants at once, then every period. Without a thread (it could
    // not be started) the watch just sees nothing.
    void start(pid_t root);
    // Stops the thread (at once, not after a period) and returns every
    // process it saw, in the order first seen. Call it when the command ends.
    std::vector<WatchedProcess> stop();

private:
    struct Tracked {
        WatchedProcess seen;
        uint64_t start_time = 0;  // with the pid, tells a reused pid apart
        uint64_t exec_mark = 0;   // where its arguments are: changes with each exec
        size_t order = 0;
    };
    void run();
    void look();

    std::chrono::milliseconds period_;
    pid_t root_ = 0;
    uint64_t own_exec_mark_ = 0;
    // By pid and start time; only the thread touches it until stop() joined it.
    std::map<std::pair<pid_t, uint64_t>, Tracked> tracked_;
    size_t next_order_ = 0;
    std::thread thread_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
};

}  // namespace memscope::cli
