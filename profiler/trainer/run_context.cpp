#include "run_context.h"

#include <stdexcept>

namespace memscope::trainer {

void RunContext::begin(PhaseKind kind, const std::string& leaf, int step, int block) {
    const int64_t t = clock_.now();
    if (step < 0 && !stack_.empty()) step = stack_.back().step;
    std::string name = stack_.empty() ? leaf : stack_.back().name + " / " + leaf;
    PhaseId id;
    if (writer_) {
        Phase phase;
        phase.kind = kind;
        phase.parent = stack_.empty() ? PhaseId() : stack_.back().id;
        phase.step = step;
        phase.block = block;
        phase.device = -1;
        phase.start = t;
        phase.end = t;
        id = next_id_;
        next_id_ = PhaseId(next_id_.value + 1);
        pending_.push_back(phase);
        pending_names_.push_back(name);
    }
    stack_.push_back(Open{id, kind, std::move(name), step, t});
    if (ledger_) ledger_->setPhase(id);
}

void RunContext::end() {
    if (stack_.empty()) return;
    const int64_t t = clock_.now();
    const Open& open = stack_.back();
    if (writer_) {
        if (open.id.value >= first_pending_.value)
            pending_[open.id.value - first_pending_.value].end = t;
        else
            pending_ends_.emplace_back(open.id, t);
    }
    if (open.kind == PhaseKind::Recompute) recompute_ns_ += t - open.start;
    stack_.pop_back();
    if (ledger_) ledger_->setPhase(stack_.empty() ? PhaseId() : stack_.back().id);
}

void RunContext::flushPhases() {
    if (!writer_) return;
    // Ends first: they are of phases handed over earlier.
    if (!pending_ends_.empty()) writer_->endPhases(pending_ends_);
    pending_ends_.clear();
    if (pending_.empty()) return;
    const bool added = writer_->addPhases(first_pending_, pending_, pending_names_);
    pending_.clear();
    pending_names_.clear();
    first_pending_ = next_id_;
    // The events already name these ids: another source of phases on this
    // writer is a bug in the trainer, not a condition to carry on from.
    if (!added) throw std::logic_error("the trace writer numbered phases this run did not add");
}

}  // namespace memscope::trainer
