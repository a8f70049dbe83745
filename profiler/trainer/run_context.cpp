#include "run_context.h"

namespace memscope::trainer {

void RunContext::begin(PhaseKind kind, std::string_view leaf, int step, int block) {
    const int64_t t = clock_.now();
    if (step < 0 && !stack_.empty()) step = stack_.back().step;
    const PhaseId id = ledger_ ? ledger_->beginPhase(kind, leaf, step, block, t) : PhaseId();
    stack_.push_back(Open{id, kind, step, t});
}

void RunContext::end() {
    if (stack_.empty()) return;
    const int64_t t = clock_.now();
    const Open open = stack_.back();
    stack_.pop_back();
    if (open.kind == PhaseKind::Recompute) recompute_ns_ += t - open.start;
    if (ledger_) ledger_->endPhase(open.id, stack_.empty() ? PhaseId() : stack_.back().id, t);
}

}  // namespace memscope::trainer
