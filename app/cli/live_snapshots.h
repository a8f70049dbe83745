#pragma once
// record --live: while the command runs, a thread merges what each process
// has written so far into DIR/memscope-<pid>….live.memscope (core's
// snapshotRecording), so that `memscope --follow DIR` shows a CPU job's
// steps, phases and modules as they come rather than when it ends. A merge
// reads the whole recording so far: the next one waits at least four times
// as long as the last took (never less than a second), so that the live
// view never takes more than a fifth of a core from the job.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <thread>

namespace memscope::cli {

class LiveSnapshots {
public:
    static constexpr std::chrono::milliseconds kMinPeriod{1000};

    LiveSnapshots() = default;
    LiveSnapshots(const LiveSnapshots&) = delete;
    LiveSnapshots& operator=(const LiveSnapshots&) = delete;
    ~LiveSnapshots() { stop(); }

    void start(std::filesystem::path dir, int64_t not_before_ns);
    // Stops and waits for a merge under way; the final merge runs after.
    // Returns how many snapshots were written.
    uint64_t stop();

private:
    void run(std::filesystem::path dir, int64_t not_before_ns);

    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    uint64_t written_ = 0;
    std::thread thread_;
};

}  // namespace memscope::cli
