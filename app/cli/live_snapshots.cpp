#include "live_snapshots.h"

#include <algorithm>

#include "cli_common.h"
#include "memscope/recording/recording_folder.h"

namespace memscope::cli {

void LiveSnapshots::start(std::filesystem::path dir, int64_t not_before_ns) {
    if (thread_.joinable()) return;
    stopping_ = false;
    thread_ = std::thread([this, dir = std::move(dir), not_before_ns] { run(dir, not_before_ns); });
}

uint64_t LiveSnapshots::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    return written_;
}

void LiveSnapshots::run(std::filesystem::path dir, int64_t not_before_ns) {
    std::chrono::milliseconds wait = kMinPeriod;
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            if (wake_.wait_for(lock, wait, [this] { return stopping_; })) return;
        }
        const auto began = std::chrono::steady_clock::now();
        // A stop while merging waits for it: the final merge must not race it.
        written_ += snapshotRecording(dir.string(), registry(), not_before_ns).size();
        const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - began);
        wait = std::max(kMinPeriod, 4 * took);
    }
}

}  // namespace memscope::cli
