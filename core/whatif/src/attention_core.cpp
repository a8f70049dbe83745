#include "memscope/whatif/attention_core.h"

#include <vector>

namespace memscope {
namespace {

bool encloses(const OpRun& outer, const OpRun& inner) {
    return outer.start <= inner.start && inner.end <= outer.end;
}

// The outermost matmul-kind call enclosing runs[i] (aten::matmul around aten::bmm).
const OpRun& outermostMatmul(const std::vector<OpRun>& runs, size_t i) {
    const OpRun* best = &runs[i];
    for (size_t j = 0; j < i; ++j)
        if (isAttentionMatmulOp(runs[j].name) && encloses(runs[j], *best)) {
            best = &runs[j];
            break;  // by start: the first enclosing one is the outermost
        }
    return *best;
}

}  // namespace

std::optional<AttentionCore> attentionCoreIn(const OpIndex& ops, int64_t start, int64_t end) {
    const std::vector<OpRun> runs = ops.runsIn(start, end);
    if (ops.source() == OpIndexSource::Phases) {
        for (const OpRun& r : runs)
            if (r.kind & kSaveAttention) return AttentionCore{r.start, r.end, "attention op phase"};
        return std::nullopt;
    }
    // A fused attention op is the core itself (runs are by start, the
    // enclosing call first).
    for (const OpRun& r : runs)
        if (r.kind & kSaveAttention) return AttentionCore{r.start, r.end, std::string(r.name)};
    size_t softmax = runs.size();
    for (size_t i = 0; i < runs.size() && softmax == runs.size(); ++i)
        if (isSoftmaxOp(runs[i].name)) softmax = i;
    if (softmax == runs.size()) return std::nullopt;
    const OpRun& sm = runs[softmax];
    AttentionCore core{sm.start, sm.end, std::string(sm.name)};
    // The scores: the last matmul-kind op to begin before the softmax.
    for (size_t i = softmax; i-- > 0;)
        if (isAttentionMatmulOp(runs[i].name) && runs[i].start < sm.start) {
            const OpRun& mm = outermostMatmul(runs, i);
            core.start = mm.start;
            core.ops = std::string(mm.name) + " … " + core.ops;
            break;
        }
    // The weighted sum: the first matmul-kind op to begin after it.
    for (size_t i = softmax + 1; i < runs.size(); ++i)
        if (isAttentionMatmulOp(runs[i].name) && runs[i].start >= sm.end) {
            const OpRun& mm = outermostMatmul(runs, i);
            core.end = std::max(core.end, mm.end);
            core.ops += " … " + std::string(mm.name);
            break;
        }
    return core;
}

}  // namespace memscope
