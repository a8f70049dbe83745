#pragma once
// The process-wide state of the injection library: options, the trace writer
// (created on first use), phases, stacks, and the end of recording.
//
// Everything here runs inside someone else's process, so: no exceptions out,
// nothing that can block it for long, nothing that deadlocks after fork.

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "allocation_book.h"
#include "delivery_monitor.h"
#include "memscope/format/native_format.h"
#include "name_cap.h"
#include "options.h"
#include "phase_index.h"
#include "stack_store.h"

namespace memscope::cupti {

class Tracer {
public:
    // Created on first call and never destroyed: CUDA and NVTX threads may
    // still call in while static destructors run.
    static Tracer& instance();

    const TracerOptions& options() const { return options_; }
    PhaseIndex& phases() { return phases_; }
    StackStore& stacks() { return stacks_; }
    AllocationBook& book() { return book_; }
    NameCap& names() { return names_; }
    DeliveryMonitor& delivery() { return delivery_; }
    const std::string& path() const { return path_; }

    // Holds the writer for the length of one call: shutdown waits (briefly)
    // for holders before it closes the file.
    class Use {
    public:
        explicit Use(Tracer& tracer);
        ~Use();
        Use(const Use&) = delete;
        Use& operator=(const Use&) = delete;
        BackgroundTraceWriter* writer() const { return writer_; }

    private:
        Tracer& tracer_;
        BackgroundTraceWriter* writer_ = nullptr;
    };

    bool disabled() const { return disabled_.load(std::memory_order_acquire); }
    void setCuptiActive() { cupti_active_.store(true, std::memory_order_release); }
    bool cuptiActive() const { return cupti_active_.load(std::memory_order_acquire); }

    // Delivers CUPTI's pending buffers and writes everything to the file.
    void flush();
    // Flush, close the file, stop recording. Idempotent; at exit and on a
    // fatal signal. Before the close, what the run lost (records that went to
    // another CUPTI client, releases of unknown addresses, names capped) is
    // written into the trace.
    void shutdown();
    // In a forked child: the parent's threads and locks are gone; never touch
    // them again. The child records nothing (CUDA does not work across fork
    // anyway; an exec'ed program starts a tracer of its own).
    void disableAfterFork() { disabled_.store(true, std::memory_order_release); }

private:
    Tracer();
    BackgroundTraceWriter* ensureWriter();
    BackgroundTraceWriter* createWriter();
    void noteLosses(BackgroundTraceWriter& writer);

    TracerOptions options_;
    PhaseIndex phases_;
    StackStore stacks_;
    AllocationBook book_;
    NameCap names_;
    DeliveryMonitor delivery_;
    std::string path_;

    std::atomic<bool> disabled_{false};
    std::atomic<bool> shut_down_{false};
    std::atomic<bool> closed_{false};  // shutdown finished
    std::atomic<bool> cupti_active_{false};
    std::atomic<bool> creation_failed_{false};
    std::atomic<int> users_{0};
    std::atomic<BackgroundTraceWriter*> writer_{nullptr};
    std::mutex create_mutex_;
    std::unique_ptr<BackgroundTraceWriter> owned_writer_;
};

}  // namespace memscope::cupti
