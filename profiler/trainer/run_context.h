#pragma once
// What the model, the checkpoint functions and the optimizer see of the
// recording: the phase stack (written as Trace phases), tags for the ledger and
// the time spent recomputing. Works with recording off too (ledger and writer
// null), so the same training code measures the recording overhead.
//
// Phases are numbered here and handed to the writer once per step, at commit,
// before the step's events: a step opens about 60 (a phase per parameter in
// the optimizer), and the writer's lock three times for each is about 180
// locked instructions per step, each waiting for the step's pending stores
// (see ledger.h). This context must be the writer's only source of phases.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "clock.h"
#include "ledger.h"
#include "memscope/native_format.h"
#include "memscope/trace.h"

namespace memscope::trainer {

class RunContext {
public:
    RunContext(BackgroundTraceWriter* writer, AllocationLedger* ledger)
        : writer_(writer), ledger_(ledger), next_id_(writer ? writer->nextPhaseId() : PhaseId()) {}
    ~RunContext() {
        try {
            flushPhases();
        } catch (const std::logic_error&) {  // reported by the commit that found it
        }
    }
    RunContext(const RunContext&) = delete;
    RunContext& operator=(const RunContext&) = delete;

    bool recording() const { return ledger_ != nullptr; }
    const EpochClock& clock() const { return clock_; }
    int64_t now() const { return clock_.now(); }

    // Phases nest; names are paths, e.g. "step 2 / backward / block 5".
    void begin(PhaseKind kind, const std::string& leaf, int step = -1, int block = -1);
    void end();
    int currentStep() const { return stack_.empty() ? -1 : stack_.back().step; }

    void tag(const void* ptr, Category category) {
        if (ledger_ && ptr) ledger_->tag(reinterpret_cast<uint64_t>(ptr), category);
    }
    uint64_t mark() const { return ledger_ ? ledger_->mark() : 0; }
    void classifyLiveSince(uint64_t mark, Category category) {
        if (ledger_) ledger_->classifyLiveSince(mark, category);
    }
    // The step's phases to the writer, then its events (on the ledger's thread).
    void commit() {
        flushPhases();
        if (ledger_) ledger_->commit();
    }

    int64_t recomputeNs() const { return recompute_ns_; }

private:
    struct Open {
        PhaseId id;
        PhaseKind kind;
        std::string name;
        int step;
        int64_t start;
    };
    void flushPhases();

    BackgroundTraceWriter* writer_;
    AllocationLedger* ledger_;
    EpochClock clock_;
    std::vector<Open> stack_;
    int64_t recompute_ns_ = 0;
    // Phases not yet with the writer: they get ids first_pending_, +1, ...
    PhaseId next_id_;
    PhaseId first_pending_ = next_id_;
    std::vector<Phase> pending_;
    std::vector<std::string> pending_names_;
    std::vector<std::pair<PhaseId, int64_t>> pending_ends_;  // of phases already handed over
};

// RAII phase; nothing is left open when an exception unwinds the step.
class PhaseScope {
public:
    PhaseScope(RunContext& ctx, PhaseKind kind, const std::string& leaf, int step = -1,
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
