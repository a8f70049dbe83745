#pragma once
// Which op made an allocation: the aten ops that ran, as PyTorch spells them
// ("aten::addmm", "aten::_softmax"), each with the time range it ran in. A
// stream of its own, like the module scopes: phases say *when*, modules say
// *where* in the model, ops say *what* made the memory.
//
// Ops are recorded (at::RecordFunction callbacks in the capture library, or
// the hook's dispatch mode) or inferred (from a snapshot's C++ frames); which
// one is a property of the whole stream, never mixed in one trace.

#include <cstdint>
#include <string_view>
#include <vector>

#include "memscope/model/types.h"

namespace memscope {

// Where a trace's ops come from. Values are stored on disk.
enum class OpSource : uint8_t {
    None = 0,      // the trace says nothing of ops
    Recorded = 1,  // the producer recorded each op call
    Inferred = 2,  // memscope found them in the allocations' C++ frames
};
std::string_view toString(OpSource source);  // "none", "recorded", "inferred"

struct OpScope {
    int64_t start = 0;  // same unit as Event::time
    int64_t end = 0;    // exclusive; end <= start holds no event
    StringId name;      // "aten::addmm"
    // Nesting among the recorded ops of its thread: 0 = called from Python
    // (or the autograd engine), 1 = called by a depth-0 op, … ("aten::linear"
    // at 0 calls "aten::addmm" at 1).
    uint16_t depth = 0;
};

// Bound for hostile files: a deeper op takes this depth.
inline constexpr uint16_t kMaxOpDepth = 1024;

struct OpTable {
    OpSource source = OpSource::None;
    std::vector<OpScope> scopes;  // any order; OpAttribution sorts its copy
    // Ops inferred per allocation (source Inferred, from C++ frames, which
    // give no op's time range): empty, or one per event (0 = none found).
    // Like inferred modules, never written to a trace file.
    std::vector<StringId> event_ops;
    bool empty() const { return scopes.empty() && event_ops.empty(); }
};

// Ops that only make memory for the op that calls them (aten::empty inside
// aten::addmm): an allocation made in one nested in another op belongs to
// the caller. Called from Python (depth 0) they are the op.
bool isAllocationHelperOp(std::string_view name);

}  // namespace memscope
