#pragma once
// Ops for traces that recorded none (op_scopes.h): which aten op made each
// allocation, read from the C++ frames PyTorch keeps in a snapshot recorded
// with _record_memory_history(stacks="all").
//
// The dispatcher's entry to an op is a frame `at::_ops::NAME::call(...)` (or
// `::redispatch(...)`), NAME being the op's name and its overload joined by
// '_' ("add_Tensor" is aten::add.Tensor). An allocation's op is the innermost
// such frame (closest to the allocator) that is not an allocation helper
// (aten::empty inside aten::mm makes mm's output); a stack of helpers alone
// (torch.empty() from Python) is its outermost helper. Frames give no op's
// time range, so the ops are one per event (OpTable::event_ops), marked
// inferred, never written to a trace file.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "memscope/base/task_context.h"
#include "memscope/model/trace.h"

namespace memscope {

struct OpInferenceReport {
    OpSource source = OpSource::None;  // of the trace's ops afterwards
    size_t allocations_with_op = 0;    // allocations given an inferred op
    size_t allocations = 0;            // allocations of the trace
};

// "aten::add" for "add_Tensor", "aten::_softmax" for "_softmax": the op name
// of an `at::_ops::` identifier, its overload cut off. The overload is what
// follows a '_' when it starts with an upper-case letter ("Tensor",
// "Scalar_out") or with one of the lower-case overload names PyTorch uses
// ("out", "memory_format", "int", "dim", "self", ...). A few ops whose own
// name ends in such a word (sparse_dim, _cast_Float) stay whole.
std::string opNameOfIdentifier(std::string_view identifier);

// The op of one frame's function: "aten::mm" for
// "at::_ops::mm::call(at::Tensor const&, ...)" or "...::redispatch(...)";
// nullopt for any other frame (a template argument naming an op inside a
// c10 wrapper's frame does not count: the function must start with it).
std::optional<std::string> opOfFrameFunction(std::string_view function);

// Fills trace.ops.event_ops (source Inferred) where the trace has no ops and
// some allocation's stack has an op frame; otherwise leaves the trace as it
// is (only counted). Each stack is read once. Cancellable (then no ops).
OpInferenceReport inferOps(Trace& trace, const TaskContext& ctx = {});

}  // namespace memscope
