#include "memscope/whatif/op_labels.h"

#include <algorithm>

namespace memscope {
namespace {

// The op a phase's name names: the name itself, or its last part when the
// producer names phases by their path ("step 2 / forward / block 3 / matmul").
uint32_t opOfName(std::string_view name) {
    const size_t slash = name.rfind(" / ");
    if (slash != std::string_view::npos) name = name.substr(slash + 3);
    for (SaveOp op : {kSaveMatmul, kSaveAttention})
        if (name == opLabel(op)) return op;
    return 0;
}

}  // namespace

std::string_view opLabel(SaveOp op) {
    switch (op) {
        case kSaveMatmul:
            return "matmul";
        case kSaveAttention:
            return "attention";
    }
    return "";
}

uint32_t opKindOfPhaseName(std::string_view name) {
    return opOfName(name);
}

uint32_t opKindsAt(const Trace& trace, PhaseId phase) {
    uint32_t kinds = 0;
    for (int guard = 0; !phase.isNull() && guard < 64; ++guard) {
        const Phase* p = trace.phase(phase);
        if (!p) break;
        if (p->kind == PhaseKind::Range && !p->inferred) kinds |= opOfName(trace.string(p->name));
        phase = p->parent;
    }
    return kinds;
}

bool hasOpLabels(const Trace& trace) {
    return std::any_of(trace.phases.begin(), trace.phases.end(), [&](const Phase& p) {
        return p.kind == PhaseKind::Range && !p.inferred && opOfName(trace.string(p.name)) != 0;
    });
}

}  // namespace memscope
