#pragma once
// Activation-checkpointing policies as the literature names them, and how a
// policy cuts a chain of L blocks into segments. In core because both the
// trainer (which runs them) and the analyses (which predict what a run of
// them keeps, activation_theory.h) need the same definition.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memscope/base/result.h"

namespace memscope {

// What is recomputed in backward.
//  - None: nothing; Block: each block is one checkpointed region;
//  - Selective: gpt recomputes the attention core, mlp the norm and GELU;
//  - Sqrt (Chen et al. 2016): checkpointed segments of ceil(sqrt(L)) blocks;
//  - Segments (torch.utils.checkpoint.checkpoint_sequential): L is cut into K
//    segments of L/K blocks (integer division); the first K-1 are
//    checkpointed and the rest runs normally, as PyTorch does;
//  - Save: each block is one checkpointed region in which the op kinds in
//    `save_ops` (and the ops in `save_op_names`) are not recomputed
//    (PyTorch's selective activation checkpointing with a policy function:
//    MUST_SAVE for them, PREFER_RECOMPUTE for the rest); none recomputes all.
enum class Recompute { None, Block, Selective, Sqrt, Segments, Save };

// Op kinds a Save policy can keep (bits of Policy::save_ops).
enum SaveOp : uint32_t {
    // The linear layers' outputs (mm/addmm): mlp fc1 and fc2; gpt qkv, proj,
    // fc1 and fc2. Their backward uses their recomputed inputs.
    kSaveMatmul = 1u << 0,
    // The gpt attention core (QK^T, mask, softmax, dropout, .V) as one op: it
    // is not recomputed, so what its backward needs (q, k, v, the
    // probabilities and the dropout mask) is kept. mlp has no attention.
    kSaveAttention = 1u << 1,
};
// "matmul", "attention", in bit order; "none" names the empty set.
std::string saveOpsName(uint32_t ops);
// The help text's list of op kinds for save:OPS.
std::string_view saveOpsHelp();

// Which names a save list takes: memscope-train's op kinds alone, or also
// ops as PyTorch names them ("aten::addmm"; namespace::name), which whatif
// finds in a run's recorded or inferred ops.
enum class SaveNames : uint8_t { Kinds, KindsAndOps };
// Whether `name` reads as an op PyTorch names: "aten::addmm", "mylib::fused_op".
bool isQualifiedOpName(std::string_view name);

// A policy is a recomputation choice composed with where the optimizer runs;
// "full" = {None, false}, "opt-in-bwd" = {None, true}, "block+opt-in-bwd" = {Block, true}.
struct Policy {
    Recompute recompute = Recompute::None;
    bool optimizer_in_backward = false;
    int segments = 0;       // Segments: K
    uint32_t save_ops = 0;  // Save: SaveOp bits
    // Save: ops as PyTorch names them, in the order given, without repeats
    // (SaveNames::KindsAndOps only; memscope-train's lists leave it empty).
    std::vector<std::string> save_op_names = {};
    friend bool operator==(const Policy&, const Policy&) = default;
};

// "full", "block", "sqrt", "segments:4", "save:matmul,attention",
// "save:matmul,aten::_softmax" (kinds first, then the ops named),
// "block+opt-in-bwd", ...: parsePolicy reads it back.
std::string policyName(const Policy& policy);
// The name as a file name's part: ':' and ',' become '-' ("save-matmul-attention").
std::string policyFileStem(const Policy& policy);
// One policy: a recomputation, "opt-in-bwd", or a '+' composition of the two
// ("block+opt-in-bwd", "save:matmul,attention+opt-in-bwd").
Result<Policy> parsePolicy(std::string_view text, SaveNames names = SaveNames::Kinds);
// Whether a ',' item of a policy list continues the save list before it: an
// op kind name (or, with KindsAndOps, an op PyTorch names), possibly
// followed by a '+' composition ("attention+opt-in-bwd").
bool continuesSaveList(std::string_view item, SaveNames names = SaveNames::Kinds);
// The policies a user can name, for error messages and help.
std::string_view policyListHelp();

// A run of consecutive blocks [begin, end) and whether it is one checkpointed region.
struct CheckpointSegment {
    int64_t begin = 0;
    int64_t end = 0;
    bool checkpointed = false;
};
// How `policy` cuts L blocks into segments (None, Selective: one plain
// segment; Block, Save: one checkpointed segment per block; Sqrt, Segments as
// above). An error when Segments asks for more segments than blocks.
Result<std::vector<CheckpointSegment>> segmentPlan(const Policy& policy, int64_t layers);

}  // namespace memscope
