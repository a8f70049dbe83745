#pragma once
// What the model, the checkpoint functions and the optimizer see of the
// recording: the phase stack (written as Trace phases), tags for the ledger and
// the time spent recomputing. Works with recording off too (no ledger), so the
// same training code measures the recording overhead.
//
// Phases are records in the ledger's log like the allocations: the ledger's
// thread names them and hands them to the writer, once per step, before the
// step's events. Nothing here allocates what outlives the call (ledger.h).

#include <cstdint>
#include <string_view>
#include <vector>

#include "clock.h"
#include "ledger.h"
#include "memscope/model/trace.h"

namespace memscope::trainer {

class RunContext {
public:
    explicit RunContext(AllocationLedger* ledger) : ledger_(ledger) {}
    RunContext(const RunContext&) = delete;
    RunContext& operator=(const RunContext&) = delete;

    int64_t now() const { return clock_.now(); }

    // Phases nest; a phase is named by its path, e.g. "step 2 / backward /
    // block 5". `leaf` comes from a small set: a Step phase's leaf is "step",
    // and its name is the leaf and the step ("step 2"); see
    // AllocationLedger::beginPhase.
    void begin(PhaseKind kind, std::string_view leaf, int step = -1, int block = -1);
    void end();

    void tag(const void* ptr, Category category) {
        if (ledger_ && ptr) ledger_->tag(reinterpret_cast<uint64_t>(ptr), category);
    }
    uint64_t mark() const { return ledger_ ? ledger_->mark() : 0; }
    void classifyLiveSince(uint64_t mark, Category category) {
        if (ledger_) ledger_->classifyLiveSince(mark, category);
    }
    // The step's phases, then its events, to the writer (on the ledger's thread).
    void commit() {
        if (ledger_) ledger_->commit();
    }

    int64_t recomputeNs() const { return recompute_ns_; }

private:
    struct Open {
        PhaseId id;
        PhaseKind kind;
        int step;
        int64_t start;
    };

    AllocationLedger* ledger_;
    EpochClock clock_;
    std::vector<Open> stack_;
    int64_t recompute_ns_ = 0;
};

// RAII phase; nothing is left open when an exception unwinds the step.
class PhaseScope {
public:
    PhaseScope(RunContext& ctx, PhaseKind kind, std::string_view leaf, int step = -1,
               int block = -1)
        : ctx_(ctx) {
        ctx_.begin(kind, leaf, step, block);
    }
    ~PhaseScope() { ctx_.end(); }
    PhaseScope(const PhaseScope&) = delete;
    PhaseScope& operator=(const PhaseScope&) = delete;

private:
    RunContext& ctx_;
};

}  // namespace memscope::trainer
