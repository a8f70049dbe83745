#pragma once
// The allocation ledger: turns the allocator's raw (pointer, size) reports into
// trace events carrying ground-truth categories and phases.
//
// How categories are decided (the trainer knows which tensors are which):
//  - parameter, gradient, optimizer_state, input: the trainer tags the storage
//    of those tensors as soon as it has them (parameters after init, gradients
//    when backward has accumulated them or inside the in-backward hook, Adam's
//    moments when created, the batch when generated);
//  - activation: memory allocated during a forward pass (or during the
//    recomputation of a checkpointed region in backward) and still alive when
//    that pass ends, i.e. what autograd saved for backward plus the outputs;
//  - temporary: everything else (intermediates freed within the pass, autograd's
//    intermediate gradients, optimizer scratch).
// Because "activation" and "gradient" are only known in hindsight, events are
// held back until commit() (once per step) and written then; an allocation that
// outlives a commit keeps the category it had at that commit.
//
// The hot path (onAlloc, onFree: called by the allocator hook for every
// tensor) takes no lock, allocates nothing and touches no string: it claims a
// slot of a preallocated log with one atomic increment, fills in 32 bytes and
// publishes them. Everything else (matching frees to allocations, tags,
// categories) happens when the trainer's thread reads the log: in tag, mark,
// classifyLiveSince, commit and counts. commit() also allocates the log's
// chunks ahead for the next step (twice the busiest step so far), so only a
// step that outgrows them allocates in the hook.

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "address_table.h"
#include "memscope/native_format.h"
#include "memscope/types.h"

namespace memscope::trainer {

class AllocationLedger {
public:
    explicit AllocationLedger(BackgroundTraceWriter& writer);
    ~AllocationLedger();
    AllocationLedger(const AllocationLedger&) = delete;
    AllocationLedger& operator=(const AllocationLedger&) = delete;

    // From the allocator hook; may be called on autograd's worker threads.
    // Lock-free and allocation-free (see above). A free of size 0 takes the
    // size of the allocation it matches (a deleter does not know it).
    void onAlloc(uint64_t ptr, uint64_t size, int16_t device, int64_t time) {
        append(ptr, size, device, time, false);
    }
    void onFree(uint64_t ptr, uint64_t size, int16_t device, int64_t time) {
        append(ptr, size, device, time, true);
    }

    // The phase later events belong to (read by the hook, atomically).
    void setPhase(PhaseId phase) { phase_.store(phase.value, std::memory_order_release); }

    // Ground truth for a live allocation (by the storage's base pointer).
    void tag(uint64_t ptr, Category category);
    // A position in the allocation sequence; see classifyLiveSince.
    uint64_t mark() const;
    // Untagged allocations made since `mark` and still alive become `category`.
    void classifyLiveSince(uint64_t mark, Category category);
    // Writes held-back events; untagged allocations become temporary.
    void commit();

    struct Counts {
        uint64_t allocs = 0;
        uint64_t frees = 0;
        uint64_t unmatched_frees = 0;   // frees of memory allocated before recording
        uint64_t late_tags = 0;         // tags that came after the allocation was committed
        uint64_t hook_allocations = 0;  // log chunks the hook had to allocate itself
    };
    Counts counts() const;

private:
    // One hook report, as the hot path writes it.
    struct Record {
        uint64_t ptr;
        uint64_t size;
        int64_t time;
        uint32_t phase;
        int16_t device;
        uint8_t is_free;
        std::atomic<uint8_t> ready;  // set last (release), cleared once read
    };
    static_assert(sizeof(Record) == 32);
    static constexpr uint64_t kChunkRecords = 4096;
    static constexpr size_t kMaxChunks = size_t{1} << 18;  // 2^30 records per run
    static constexpr size_t kMaxSpareChunks = 64;          // 8 MiB kept for reuse
    struct Chunk {
        std::array<Record, kChunkRecords> records;
    };

    void append(uint64_t ptr, uint64_t size, int16_t device, int64_t time, bool is_free) {
        const uint64_t i = write_.fetch_add(1, std::memory_order_relaxed);
        Chunk* chunk = chunks_[(i / kChunkRecords) % kMaxChunks].load(std::memory_order_acquire);
        if (chunk == nullptr) chunk = installChunk(i / kChunkRecords);
        Record& r = chunk->records[i % kChunkRecords];
        r.ptr = ptr;
        r.size = size;
        r.time = time;
        r.phase = phase_.load(std::memory_order_acquire);
        r.device = device;
        r.is_free = is_free ? 1 : 0;
        r.ready.store(1, std::memory_order_release);
    }
    // The chunk for chunk number `n`, allocated if nobody has yet (the slow path).
    Chunk* installChunk(uint64_t n, bool from_hook = true);
    // Reads the log up to what has been claimed (the trainer's thread; mutex_ held).
    void drain() const;
    void process(const Record& r) const;
    // Allocates the chunks for the next `records` slots (commit).
    void reserveAhead(uint64_t records);

    std::atomic<uint64_t> write_{0};
    std::atomic<uint32_t> phase_{0};
    std::atomic<uint64_t> hook_allocations_{0};
    std::unique_ptr<std::atomic<Chunk*>[]> chunks_;
    mutable uint64_t read_ = 0;
    uint64_t step_start_ = 0;  // write_ at the previous commit
    uint64_t busiest_step_ = 0;

    static constexpr uint32_t kNone = UINT32_MAX;
    // What the reading side knows of a pending event besides the event.
    struct PendingInfo {
        uint32_t alloc_ref = kNone;  // for a free: its alloc among the pending events
        bool tagged = false;
    };
    struct Live {
        uint32_t pending = kNone;  // index into pending_, or kNone once committed
        uint64_t seq = 0;
        uint64_t size = 0;  // for frees reported without one (the CPU allocator wrapper)
        Category category = Category::Unknown;  // final once committed
    };

    BackgroundTraceWriter& writer_;
    // The reading side's state (the hook never takes this lock).
    mutable std::mutex mutex_;
    // The events of the step so far, held back until commit, and what the
    // reading side knows of each (parallel): events go to the writer as they are.
    mutable std::vector<Event> pending_;
    mutable std::vector<PendingInfo> pending_info_;
    mutable AddressTable<Live> live_;
    std::vector<Event> events_;  // commit's batch for the writer, reused
    // Fully read chunks, for reserveAhead to reuse (the reading side's, under mutex_).
    mutable std::vector<Chunk*> spare_chunks_;
    mutable uint64_t seq_ = 0;
    mutable Counts counts_;
};

}  // namespace memscope::trainer
