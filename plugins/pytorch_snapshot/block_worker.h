#pragma once
// One thread that processes blocks in the order they are handed to it, beside
// the unpickler: the stacks of a snapshot (deferred_stacks.h) and its trace
// entries (entry_pipeline.h). The unpickler fills a block, hands it over and
// fills a spare meanwhile, one the worker emptied before (kept for its
// capacity). The queue is bounded, so a worker that falls behind holds the
// unpickler back rather than the input's worth of blocks.
//
// The thread starts with the first block handed over; where none can be
// started, hand() says so and the caller processes the block itself.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace memscope::pytorch_snapshot {

template <typename Block>
class BlockWorker {
public:
    BlockWorker(std::function<void(Block&)> process, size_t max_queued)
        : process_(std::move(process)), max_queued_(max_queued) {}
    ~BlockWorker() { stop(); }
    BlockWorker(const BlockWorker&) = delete;
    BlockWorker& operator=(const BlockWorker&) = delete;

    // Queues `block` and leaves a spare in its place, as the worker left it
    // (or a new one). False where no thread could be started, or after
    // stop(): `block` is left as it was, for the caller to process.
    bool hand(Block& block) {
        if (!start()) return false;
        Block next{};
        {
            std::unique_lock lock(mutex_);
            wake_producer_.wait(lock, [&] { return queue_.size() < max_queued_; });
            queue_.push_back(std::move(block));
            if (!spare_.empty()) {
                next = std::move(spare_.back());
                spare_.pop_back();
            }
        }
        wake_worker_.notify_one();
        block = std::move(next);
        return true;
    }
    // Waits until every block handed over is processed.
    void wait() {
        if (!thread_.joinable()) return;
        std::unique_lock lock(mutex_);
        wake_producer_.wait(lock, [&] { return queue_.empty() && !busy_; });
    }
    // Stops the thread after the block it holds; the queued ones are dropped.
    void stop() {
        {
            std::lock_guard lock(mutex_);
            stop_ = true;
            queue_.clear();
        }
        wake_worker_.notify_all();
        if (thread_.joinable()) thread_.join();
    }
    bool running() const { return thread_.joinable(); }

private:
    bool start() {
        if (thread_.joinable()) return true;
        if (no_thread_ || stop_) return false;
        try {
            thread_ = std::thread([this] { work(); });
            return true;
        } catch (const std::system_error&) {
            no_thread_ = true;
            return false;
        }
    }
    void work() {
        std::unique_lock lock(mutex_);
        for (;;) {
            wake_worker_.wait(lock, [&] { return stop_ || !queue_.empty(); });
            if (stop_) return;
            Block block = std::move(queue_.front());
            queue_.pop_front();
            busy_ = true;
            lock.unlock();
            wake_producer_.notify_one();
            process_(block);
            lock.lock();
            busy_ = false;
            spare_.push_back(std::move(block));
            wake_producer_.notify_all();
        }
    }

    std::function<void(Block&)> process_;
    const size_t max_queued_;
    std::mutex mutex_;
    std::condition_variable wake_worker_, wake_producer_;
    std::deque<Block> queue_;
    std::vector<Block> spare_;  // processed blocks, kept for their capacity
    bool busy_ = false;         // the thread holds a block
    bool stop_ = false;
    bool no_thread_ = false;  // starting the thread failed
    std::thread thread_;
};

}  // namespace memscope::pytorch_snapshot
