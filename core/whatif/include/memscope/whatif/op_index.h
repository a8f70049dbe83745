#pragma once
// The ops of a measured run as the what-if simulator reads them, from
// whichever source the trace has:
//  - the reference trainer's op phases (Range phases named "matmul",
//    "attention": op_labels.h), each an op kind;
//  - recorded op scopes (Trace::ops.scopes: "aten::addmm" with its time
//    range and nesting depth);
//  - ops inferred per allocation (Trace::ops.event_ops, from C++ frames):
//    they give no time range, so an op's span is taken from its first
//    allocation to the next allocation another op made.
// It answers which op made an allocation, when the ops ran (the recompute
// time a kept op saves), and which ops ran inside a window.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memscope/analysis/checkpoint_policy.h"
#include "memscope/model/op_attribution.h"
#include "memscope/model/trace.h"

namespace memscope {

// The op kind (SaveOp bit) an op PyTorch names belongs to: the matmul family
// (aten::mm, addmm, bmm, baddbmm, addmv, mv, _scaled_mm, …; not the composite
// aten::matmul and aten::linear, which make no memory of their own)
// or the scaled-dot-product-attention family (aten::scaled_dot_product_attention,
// _scaled_dot_product_flash_attention, …); 0 for any other op.
uint32_t opKindOfAtenName(std::string_view name);
// The ops of a kind, as PyTorch names them (what save:matmul stands for).
std::vector<std::string_view> atenNamesOfKind(SaveOp kind);
// aten::softmax, aten::_softmax, aten::_safe_softmax.
bool isSoftmaxOp(std::string_view name);
// The matmuls an attention core starts and ends with: bmm, matmul, mm, baddbmm.
bool isAttentionMatmulOp(std::string_view name);

// The ops a save list keeps: op kinds and ops named as PyTorch names them.
struct OpSelection {
    uint32_t kinds = 0;              // SaveOp bits
    std::vector<std::string> names;  // "aten::addmm"
    static OpSelection of(const Policy& policy);
    bool empty() const { return kinds == 0 && names.empty(); }
    // Whether an op of this name and kind (opKindOfAtenName, or a phase's
    // label) is one the selection keeps.
    bool matches(std::string_view name, uint32_t kind) const;
};

enum class OpIndexSource : uint8_t {
    None,      // the trace says nothing of ops
    Phases,    // the reference trainer's op phases
    Recorded,  // recorded op scopes
    Inferred,  // ops inferred per allocation
};

// One op call (or, for ops inferred per allocation, a run of consecutive
// allocations one op made).
struct OpRun {
    int64_t start = 0, end = 0;  // [start, end)
    std::string_view name;       // "aten::addmm", or the phase's label ("matmul")
    uint32_t kind = 0;           // SaveOp bit of its family, 0 for none
    uint16_t depth = 0;          // nesting among recorded ops; 0 otherwise
};

struct OpBytes {
    std::string name;
    uint64_t bytes = 0;
};

class OpIndex {
public:
    OpIndex() = default;  // no ops
    OpIndex(const Trace& trace, int16_t device);

    OpIndexSource source() const { return source_; }
    bool empty() const { return source_ == OpIndexSource::None; }
    // "the trace's op phases", "recorded op scopes", "ops inferred per allocation".
    std::string_view describe() const;

    // Every op that ran, by start (an enclosing op before the ops it calls).
    const std::vector<OpRun>& runs() const { return runs_; }
    // The ops that ran entirely within [start, end), by start.
    std::vector<OpRun> runsIn(int64_t start, int64_t end) const;

    // The op kinds and names of `selection` that no op of the run is; empty
    // when every one ran (for the trainer's phases an aten name stands for
    // its kind).
    std::vector<std::string> neverRan(const OpSelection& selection) const;
    // The ops whose allocations on the device add up to most, most first.
    std::vector<OpBytes> topAllocating(size_t n) const;

    // The kept ops of one selection: the outermost calls of the ops it names.
    class Kept {
    public:
        // The kept op call that made event `event` (made at `time`), if any.
        std::optional<OpRun> madeBy(uint64_t event, int64_t time) const;
        // Time within [start, end) spent in kept calls lying entirely inside it.
        int64_t timeIn(int64_t start, int64_t end) const;
        // The kept calls of the attention family lying entirely in [start, end).
        std::vector<OpRun> attentionIn(int64_t start, int64_t end) const;
        bool empty() const { return calls_.empty(); }

    private:
        friend class OpIndex;
        const OpIndex* index_ = nullptr;
        OpSelection selection_;
        std::vector<OpRun> calls_;  // outermost, by start
    };
    Kept kept(const OpSelection& selection) const;

private:
    const Trace* trace_ = nullptr;
    int16_t device_ = 0;
    OpIndexSource source_ = OpIndexSource::None;
    std::vector<OpRun> runs_;
    OpAttribution attribution_;  // recorded scopes: the op that made an allocation
    // For the trainer's phases: an aten name stands for its kind.
    OpSelection resolve(const OpSelection& selection) const;
    // The op that made event `event`: its name and kind (none when no op
    // did); for recorded scopes the innermost op running at `time`.
    std::optional<std::pair<std::string_view, uint32_t>> opOfEvent(uint64_t event,
                                                                   int64_t time) const;
};

}  // namespace memscope
