#pragma once
// Stack interning on a second thread while the unpickler runs. Hashing and
// comparing every trace entry's frames was a fifth of a snapshot's import, on
// the one core the pickle machine keeps busy. The mapper hands each frames
// list over and gets a provisional StackId back (the list's number, in the
// order given); a worker interns the lists in that order; remap() then turns
// every provisional id the mapper stored into the trace's own.
//
// Only the worker touches the trace's stack tables until drain() or remap();
// the mapper's thread must not read them before (Trace::stack, stackCount).
// The worker starts with the first full batch (32 K frames), so a small file
// is interned on the caller's thread; so is everything where no thread can
// be started.

#include <cstdint>
#include <span>
#include <vector>

#include "block_worker.h"
#include "memscope/model/trace.h"

namespace memscope::pytorch_snapshot {

class DeferredStacks {
public:
    explicit DeferredStacks(Trace& trace);
    ~DeferredStacks() = default;  // the worker stops, dropping what it has not interned
    DeferredStacks(const DeferredStacks&) = delete;
    DeferredStacks& operator=(const DeferredStacks&) = delete;

    // A provisional id for these frames (StackId 0 for none); after remap(),
    // the trace's own id, interned at once.
    StackId submit(std::span<const FrameId> frames);
    // The same without a copy in between: the caller writes `n` frame ids
    // (n > 0) where append() points, then commit() gives the id.
    FrameId* append(size_t n);
    StackId commit(size_t n);
    // Waits until every submitted list is interned. Until the next submit the
    // caller may read the trace's stacks and resolve().
    void drain();
    // A provisional id's interned one; only after drain().
    StackId resolve(StackId provisional) const;
    // Drains, stops the worker and rewrites the provisional ids of every event
    // and of the allocator state's segments and blocks. From then on submit()
    // interns directly.
    void remap();
    bool remapped() const { return remapped_; }

private:
    struct Batch {
        std::vector<FrameId> frames;
        std::vector<uint32_t> lengths;  // one per list, in order
    };
    void flush();
    void internHere(Batch& batch);  // interns and empties it, on the calling thread
    static constexpr size_t kBatchFrames = 1u << 15;
    static constexpr size_t kMaxQueued = 8;

    Trace& trace_;
    Batch current_;
    uint32_t submitted_ = 0;  // provisional ids given out
    bool remapped_ = false;
    std::vector<uint32_t> interned_;  // provisional - 1 -> the trace's id (worker-written)
    // Last: its thread writes the members above, so it stops before they go.
    // The worker is far faster than the machine; its queue's bound only keeps
    // a stalled one from holding the whole input's frames.
    BlockWorker<Batch> worker_{[this](Batch& batch) { internHere(batch); }, kMaxQueued};
};

}  // namespace memscope::pytorch_snapshot
