#pragma once
// The module calls a Python stack shows. PyTorch calls every module through
// torch/nn/modules/module.py's wrappers (_wrapped_call_impl, _call_impl,
// __call__), so read outermost first, a module call is: the caller's frame
// (the call site), a run of wrapper frames, then the callee's own frame (its
// forward). C and C++ frames in between (stacks="all") are skipped. Each call
// is one level; a level's identity is its parent level, its call site and
// the callee's function and file (not its line, which moves as the callee
// runs: that line is the level's progress).
//
// Checkpointing is seen in the frames too: a call made from a frame of
// torch/utils/checkpoint.py has the checkpoint as its call site (the same in
// the forward and in the recompute), and a stack through checkpoint.py's
// backward or unpack hooks is a recompute, whose outermost level is the
// checkpointed module (the modules outside it are not on the backward's stack).

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "memscope/model/trace.h"

namespace memscope::detail {

// Levels past this depth are left out (a hostile stack nests 10,000 deep):
// their allocations belong to the deepest level kept.
inline constexpr size_t kMaxModuleLevels = 64;
// A trace with more distinct levels than this keeps the first ones found:
// deeper or later levels fold into their nearest kept parent.
inline constexpr size_t kMaxLevelNodes = size_t(1) << 16;

inline constexpr uint32_t kNoLevel = UINT32_MAX;
// A call site standing for "called by torch.utils.checkpoint".
inline constexpr uint32_t kCheckpointSite = UINT32_MAX;

// One kind of module call: a node of the tree of levels.
struct LevelNode {
    uint32_t parent = kNoLevel;
    uint32_t call_site = 0;  // FrameId value of the caller, kCheckpointSite, or 0 (none)
    StringId callee_function, callee_file;
    uint32_t min_line = UINT32_MAX;  // the callee's smallest line seen: near its start
};

// A level of one stack: which node, and where inside the callee it was.
struct StackLevel {
    uint32_t node = kNoLevel;
    uint32_t line = 0;
};

struct StackLevels {
    std::vector<StackLevel> levels;  // outermost first
    bool recompute = false;          // through checkpoint.py's backward or unpack hooks
    bool python = false;             // the stack has Python frames at all
};

// The levels of every stack, memoized per stack; nodes interned as found.
// A recompute's outermost level is matched to the forward's node of the
// same checkpointed callee (so recompute walks the forward's tree); this is
// why stacks are read in time order, forward before its recompute.
class ModuleLevels {
public:
    explicit ModuleLevels(const Trace& trace) : trace_(trace) {}

    const StackLevels& of(StackId stack);
    const std::vector<LevelNode>& nodes() const { return nodes_; }
    bool capped() const { return capped_; }

private:
    enum FrameKind : uint8_t {
        Unknown = 0,      // not classified yet
        Native,           // not a Python frame
        Wrapper,          // module.py's call wrappers
        Python,           // any other Python frame
        CheckpointCall,   // checkpoint.py, calling the function it checkpoints
        CheckpointRerun,  // checkpoint.py's backward / unpack hooks: a recompute
    };
    FrameKind kindOf(FrameId id);
    uint32_t node(uint32_t parent, uint32_t call_site, const Frame& callee);
    void read(StackId stack, StackLevels& out);

    const Trace& trace_;
    std::vector<uint8_t> kinds_;  // by FrameId value
    std::vector<LevelNode> nodes_;
    struct Key {
        uint32_t parent, call_site, function, file;
        bool operator==(const Key&) const = default;
    };
    struct KeyHash {
        size_t operator()(const Key& k) const {
            uint64_t h = k.parent * 0x9E3779B97F4A7C15ull;
            h ^= (uint64_t(k.call_site) << 1) * 0xC2B2AE3D27D4EB4Full;
            h ^= (uint64_t(k.function) << 32 | k.file) * 0x165667B19E3779F9ull;
            return size_t(h ^ (h >> 29));
        }
    };
    std::unordered_map<Key, uint32_t, KeyHash> ids_;
    // (call site, callee) with parent 0 -> the first forward node below a
    // parent called so: where a recompute's outermost call belongs.
    std::unordered_map<Key, uint32_t, KeyHash> by_site_;
    std::unordered_map<uint32_t, StackLevels> memo_;
    bool capped_ = false;
};

}  // namespace memscope::detail
