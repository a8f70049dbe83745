#pragma once
// Notices when CUPTI's activity records stop coming to us while the program
// goes on allocating: torch.profiler (Kineto) and Nsight register their own
// activity buffer callbacks, which replaces ours for the whole process, and
// from then on nothing arrives, silently.
//
// What can be known without the other tool's cooperation:
// - With our callback subscriber on (stacks, VMM calls), every successful
//   CUDA allocation call is seen as it happens. After the forced flush at
//   exit every record of ours has been delivered, so an allocation call that
//   began after the newest memory record we decoded has lost its record.
//   That is the verdict "taken over" (also when CUPTI was finalized by the
//   other tool, or records were dropped; the dropped count is in the trace).
// - Without a subscriber there is no such evidence. The buffers we handed to
//   CUPTI and never got back are counted, as a hint only: whether a forced
//   flush returns every buffer (also empty ones, and across contexts already
//   destroyed) is not documented, so it is reported, not judged.
// Thread-safe; the calls are cheap (one short lock).

#include <cstdint>
#include <mutex>

namespace memscope::cupti {

class DeliveryMonitor {
public:
    void bufferRequested();
    void bufferCompleted();
    // A decoded buffer: its memory records and newest timestamp (0 = none).
    void recordsDelivered(uint64_t memory_records, int64_t newest_time);
    // A successful CUDA allocation call, outermost only, by its start time.
    void allocationCall(int64_t enter_time);

    struct Verdict {
        bool taken_over = false;
        uint64_t calls_seen = 0;
        uint64_t calls_without_record = 0;  // among the last kRecentCalls
        uint64_t memory_records = 0;
        uint64_t buffers_outstanding = 0;  // requested, never completed
    };
    // Meaningful after the forced flush.
    Verdict verdict() const;

    static constexpr int kRecentCalls = 64;

private:
    mutable std::mutex mutex_;
    uint64_t requested_ = 0;
    uint64_t completed_ = 0;
    uint64_t memory_records_ = 0;
    int64_t newest_record_ = 0;
    uint64_t calls_ = 0;
    int64_t recent_[kRecentCalls] = {};  // ring of the latest calls' start times
};

}  // namespace memscope::cupti
