#include "memscope/analysis/allocation_op.h"

namespace memscope {

std::optional<AllocationOp> opOfInterval(const OpAttribution& ops, const AllocationInterval& a) {
    if (ops.empty() || a.alloc_event == kNoEvent) return std::nullopt;
    const std::optional<OpHit> hit = ops.ofEvent(a.alloc_event, a.start);
    if (!hit) return std::nullopt;
    return AllocationOp{hit->name, ops.source()};
}

std::string_view opSourceText(OpSource source) {
    return source == OpSource::Inferred ? "inferred from C++ frames" : toString(source);
}

std::string opText(const Trace& trace, const AllocationOp& op) {
    return std::string(trace.string(op.name)) + " (" + std::string(opSourceText(op.source)) + ")";
}

std::string opSuffix(const Trace& trace, const std::optional<AllocationOp>& op) {
    if (!op) return {};
    return "  [" + std::string(trace.string(op->name)) + ", " + std::string(toString(op->source)) +
           "]";
}

}  // namespace memscope
