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

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "memscope/model/trace.h"

namespace memscope::pytorch_snapshot {

class DeferredStacks {
public:
    explicit DeferredStacks(Trace& trace);
    ~DeferredStacks();  // stops the worker, dropping what it has not interned
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
    void work();
    void internHere(Batch& batch);  // interns and empties it, on the calling thread
    bool startWorker();             // false: no thread could be started
    static constexpr size_t kBatchFrames = 1u << 15;
    static constexpr size_t kMaxQueued = 8;

    Trace& trace_;
    Batch current_;
    uint32_t submitted_ = 0;  // provisional ids given out
    bool remapped_ = false;

    std::mutex mutex_;
    std::condition_variable wake_worker_, wake_producer_;
    std::deque<Batch> queue_;
    std::vector<Batch> spare_;  // emptied batches, kept for their capacity
    bool busy_ = false;         // the worker holds a batch
    bool stop_ = false;
    bool no_thread_ = false;          // starting the worker failed: everything is interned here
    std::vector<uint32_t> interned_;  // provisional - 1 -> the trace's id (worker-written)
    std::thread worker_;
};

}  // namespace memscope::pytorch_snapshot
