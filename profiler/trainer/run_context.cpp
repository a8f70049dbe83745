#include "run_context.h"

namespace memscope::trainer {

void RunContext::begin(PhaseKind kind, const std::string& leaf, int step, int block) {
    const int64_t t = clock_.now();
    if (step < 0 && !stack_.empty()) step = stack_.back().step;
    std::string name = stack_.empty() ? leaf : stack_.back().name + " / " + leaf;
    PhaseId id;
    if (writer_) {
        Phase phase;
        phase.name = writer_->internString(name);
        phase.kind = kind;
        phase.parent = stack_.empty() ? PhaseId() : stack_.back().id;
        phase.step = step;
        phase.block = block;
        phase.device = -1;
        phase.start = t;
        phase.end = t;
        id = writer_->addPhase(phase);
    }
    stack_.push_back(Open{id, kind, std::move(name), step, t});
    if (ledger_) ledger_->setPhase(id);
}

void RunContext::end() {
    if (stack_.empty()) return;
    const int64_t t = clock_.now();
    const Open& open = stack_.back();
    if (writer_) writer_->endPhase(open.id, t);
    if (open.kind == PhaseKind::Recompute) recompute_ns_ += t - open.start;
    stack_.pop_back();
    if (ledger_) ledger_->setPhase(stack_.empty() ? PhaseId() : stack_.back().id);
}

}  // namespace memscope::trainer
