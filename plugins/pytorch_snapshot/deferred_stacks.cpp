#include "deferred_stacks.h"

#include <algorithm>

namespace memscope::pytorch_snapshot {

DeferredStacks::DeferredStacks(Trace& trace) : trace_(trace) {}

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
    if (!worker_.hand(current_)) return internHere(current_);  // no thread to be had
    current_.frames.clear();
    current_.lengths.clear();
}

void DeferredStacks::drain() {
    if (remapped_) return;
    if (!worker_.running()) return internHere(current_);
    flush();
    worker_.wait();
}

StackId DeferredStacks::resolve(StackId provisional) const {
    if (remapped_ || provisional.value == 0 || provisional.value > interned_.size())
        return provisional;
    return StackId(interned_[provisional.value - 1]);
}

void DeferredStacks::remap() {
    if (remapped_) return;
    drain();
    worker_.stop();
    for (Event& e : trace_.events) e.stack = resolve(e.stack);
    if (trace_.allocator_state) {
        for (Segment& s : trace_.allocator_state->segments) s.stack = resolve(s.stack);
        for (Block& b : trace_.allocator_state->blocks) b.stack = resolve(b.stack);
    }
    remapped_ = true;
    std::vector<uint32_t>().swap(interned_);
}

}  // namespace memscope::pytorch_snapshot
