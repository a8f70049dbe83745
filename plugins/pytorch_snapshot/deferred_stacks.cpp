#include "deferred_stacks.h"

#include <algorithm>
#include <system_error>

namespace memscope::pytorch_snapshot {

DeferredStacks::DeferredStacks(Trace& trace) : trace_(trace) {}

DeferredStacks::~DeferredStacks() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
        queue_.clear();
    }
    wake_worker_.notify_all();
    if (worker_.joinable()) worker_.join();
}

void DeferredStacks::internHere(Batch& batch) {
    size_t at = 0;
    for (uint32_t n : batch.lengths) {
        interned_.push_back(
            trace_.internStack(std::span<const FrameId>(batch.frames).subspan(at, n)).value);
        at += n;
    }
    batch.frames.clear();
    batch.lengths.clear();
}

bool DeferredStacks::startWorker() {
    if (worker_.joinable()) return true;
    if (no_thread_) return false;
    try {
        worker_ = std::thread([this] { work(); });
        return true;
    } catch (const std::system_error&) {
        no_thread_ = true;  // no thread to be had: intern on the caller's
        return false;
    }
}

StackId DeferredStacks::submit(std::span<const FrameId> frames) {
    if (frames.empty()) return StackId(0);
    std::copy(frames.begin(), frames.end(), append(frames.size()));
    return commit(frames.size());
}

FrameId* DeferredStacks::append(size_t n) {
    const size_t at = current_.frames.size();
    current_.frames.resize(at + n);
    return current_.frames.data() + at;
}

StackId DeferredStacks::commit(size_t n) {
    if (remapped_) {
        const std::span<const FrameId> frames(current_.frames.data() + current_.frames.size() - n,
                                              n);
        const StackId id = trace_.internStack(frames);
        current_.frames.resize(current_.frames.size() - n);
        return id;
    }
    current_.lengths.push_back(uint32_t(n));
    ++submitted_;
    if (current_.frames.size() >= kBatchFrames) flush();
    return StackId(submitted_);
}

void DeferredStacks::flush() {
    if (current_.lengths.empty()) return;
    // The worker starts with the first full batch: a small file never needs it.
    if (!startWorker()) return internHere(current_);
    Batch next;
    {
        std::unique_lock lock(mutex_);
        // The worker is far faster than the machine; the bound only keeps a
        // stalled one from holding the whole input's frames.
        wake_producer_.wait(lock, [&] { return queue_.size() < kMaxQueued; });
        queue_.push_back(std::move(current_));
        if (!spare_.empty()) {
            next = std::move(spare_.back());
            spare_.pop_back();
        }
    }
    wake_worker_.notify_one();
    next.frames.clear();
    next.lengths.clear();
    current_ = std::move(next);
}

void DeferredStacks::work() {
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_worker_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        Batch batch = std::move(queue_.front());
        queue_.pop_front();
        busy_ = true;
        lock.unlock();
        wake_producer_.notify_one();
        internHere(batch);
        lock.lock();
        busy_ = false;
        spare_.push_back(std::move(batch));
        wake_producer_.notify_all();
    }
}

void DeferredStacks::drain() {
    if (remapped_) return;
    if (!worker_.joinable()) return internHere(current_);
    flush();
    std::unique_lock lock(mutex_);
    wake_producer_.wait(lock, [&] { return queue_.empty() && !busy_; });
}

StackId DeferredStacks::resolve(StackId provisional) const {
    if (remapped_ || provisional.value == 0 || provisional.value > interned_.size())
        return provisional;
    return StackId(interned_[provisional.value - 1]);
}

void DeferredStacks::remap() {
    if (remapped_) return;
    drain();
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_worker_.notify_all();
    if (worker_.joinable()) worker_.join();
    for (Event& e : trace_.events) e.stack = resolve(e.stack);
    if (trace_.allocator_state) {
        for (Segment& s : trace_.allocator_state->segments) s.stack = resolve(s.stack);
        for (Block& b : trace_.allocator_state->blocks) b.stack = resolve(b.stack);
    }
    remapped_ = true;
    std::vector<uint32_t>().swap(interned_);
}

}  // namespace memscope::pytorch_snapshot
