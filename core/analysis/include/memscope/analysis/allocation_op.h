#pragma once
// The op that made an allocation, as every front end shows it: the GUI's
// inspector, `summary`'s sites (text and JSON). One lookup (OpAttribution's
// rule, op_attribution.h) and one wording, always saying whether the op was
// recorded or inferred from the allocation's C++ frames.

#include <optional>
#include <string>
#include <string_view>

#include "memscope/model/op_attribution.h"
#include "memscope/model/trace.h"
#include "memscope/timeline/timeline.h"

namespace memscope {

struct AllocationOp {
    StringId name;  // "aten::addmm"
    OpSource source = OpSource::None;
};

// The op of an interval: its alloc event's inferred op, else the op scope
// running when it was allocated; nullopt for an allocation made before the
// trace, outside every op, or in a trace without ops.
std::optional<AllocationOp> opOfInterval(const OpAttribution& ops, const AllocationInterval& a);

// "recorded", "inferred from C++ frames".
std::string_view opSourceText(OpSource source);

// "aten::addmm (recorded)", "aten::mm (inferred from C++ frames)".
std::string opText(const Trace& trace, const AllocationOp& op);

// A site's op in a table row, briefly: "  [aten::mm, inferred]"; "" for none.
std::string opSuffix(const Trace& trace, const std::optional<AllocationOp>& op);

}  // namespace memscope
