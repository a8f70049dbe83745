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

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "memscope/native_format.h"
#include "memscope/types.h"

namespace memscope::trainer {

class AllocationLedger {
public:
    explicit AllocationLedger(BackgroundTraceWriter& writer) : writer_(writer) {}

    // From the allocator hook; may be called on autograd's worker threads.
    void onAlloc(uint64_t ptr, uint64_t size, int16_t device, int64_t time);
    void onFree(uint64_t ptr, uint64_t size, int16_t device, int64_t time);

    void setPhase(PhaseId phase);

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
        uint64_t unmatched_frees = 0;  // frees of memory allocated before recording
        uint64_t late_tags = 0;        // tags that came after the allocation was committed
    };
    Counts counts() const;

private:
    static constexpr uint32_t kNone = UINT32_MAX;
    struct Pending {
        Event event;
        uint32_t alloc_ref = kNone;  // for a free: its alloc among the pending events
        bool tagged = false;
    };
    struct Live {
        uint32_t pending = kNone;  // index into pending_, or kNone once committed
        uint64_t seq = 0;
        Category category = Category::Unknown;  // final once committed
    };

    BackgroundTraceWriter& writer_;
    mutable std::mutex mutex_;
    std::vector<Pending> pending_;
    std::unordered_map<uint64_t, Live> live_;
    uint64_t seq_ = 0;
    PhaseId phase_;
    Counts counts_;
};

}  // namespace memscope::trainer
