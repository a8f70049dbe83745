#pragma once
// The trainer's configuration: models, presets, policies and the command line.
// Torch-free, so main.cpp, the report and the tests compile without LibTorch.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memscope/result.h"

namespace memscope::trainer {

enum class ModelKind { Mlp, Gpt };
enum class DType { Float32, BFloat16 };

// What is recomputed in backward.
//  - None: nothing; Block: each block is one checkpointed region;
//  - Selective: gpt recomputes the attention core, mlp the norm and GELU;
//  - Sqrt (Chen et al. 2016): checkpointed segments of ceil(sqrt(L)) blocks;
//  - Segments (torch.utils.checkpoint.checkpoint_sequential): L is cut into K
//    segments of L/K blocks (integer division); the first K-1 are
//    checkpointed and the rest runs normally, as PyTorch does;
//  - Save: each block is one checkpointed region in which the op kinds in
//    `save_ops` are not recomputed (PyTorch's selective activation
//    checkpointing with a policy function); save_ops = 0 recomputes all.
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

// A policy is a recomputation choice composed with where the optimizer runs;
// "full" = {None, false}, "opt-in-bwd" = {None, true}, "block+opt-in-bwd" = {Block, true}.
struct Policy {
    Recompute recompute = Recompute::None;
    bool optimizer_in_backward = false;
    int segments = 0;       // Segments: K
    uint32_t save_ops = 0;  // Save: SaveOp bits
    friend bool operator==(const Policy&, const Policy&) = default;
};

// "full", "block", "sqrt", "segments:4", "save:matmul,attention",
// "block+opt-in-bwd", ...: parsePolicies reads it back.
std::string policyName(const Policy& policy);
// The name as a file name's part: ':' and ',' become '-' ("save-matmul-attention").
std::string policyFileStem(const Policy& policy);
// Parses a ',' list of policies, each one policy or a '+' composition, or
// "all" (full, block, selective, opt-in-bwd) or "sweep" (sweepPolicies for
// gpt). A save list's own commas bind to it: "save:matmul,attention,block" is
// two policies.
Result<std::vector<Policy>> parsePolicies(std::string_view text);
// The whole set: full, block, selective, sqrt, segments:2, segments:4 (when
// L >= 4), save:none, save:matmul, and for gpt save:attention and
// save:matmul,attention; each alone and with +opt-in-bwd.
std::vector<Policy> sweepPolicies(ModelKind kind, int64_t layers);
// The help text's list of op kinds for save:OPS.
std::string_view saveOpsHelp();

// A run of consecutive blocks [begin, end) and whether it is one checkpointed region.
struct Segment {
    int64_t begin = 0;
    int64_t end = 0;
    bool checkpointed = false;
};
// How `policy` cuts L blocks into segments (None, Selective: one plain
// segment; Block, Save: one checkpointed segment per block; Sqrt, Segments as
// above). An error when Segments asks for more segments than blocks.
Result<std::vector<Segment>> segmentPlan(const Policy& policy, int64_t layers);

struct ModelConfig {
    ModelKind kind = ModelKind::Mlp;
    int64_t layers = 6;    // L: residual blocks (mlp) or decoder layers (gpt)
    int64_t hidden = 64;   // d (mlp) or h (gpt)
    int64_t heads = 4;     // a (gpt only)
    int64_t seq = 64;      // s
    int64_t batch = 4;     // b
    int64_t vocab = 512;   // gpt only
    double dropout = 0.1;  // gpt only; mlp has no dropout
    DType dtype = DType::Float32;
};

struct TrainConfig {
    ModelConfig model;
    int steps = 3;
    uint64_t seed = 1234;
    double lr = 1e-3;
    std::string device = "cpu";  // "cpu" or "cuda[:n]"
    int threads = 0;             // 0 = LibTorch's default
};

std::string_view modelName(ModelKind kind);
std::string_view dtypeName(DType dtype);       // "fp32", "bf16": the command line's names
std::string_view dtypeTorchName(DType dtype);  // "float32", "bfloat16": the run metrics' names
int64_t dtypeBytes(DType dtype);
// A one-line description, e.g. "L=8 d=256 s=64 b=4 fp32", stored in the trace.
std::string describe(const ModelConfig& model);

// Presets. quick: seconds on 2 CPU cores even with Debian's reference BLAS
// (the default); sized so that activations, not parameters, dominate memory,
// which is what the policies change.
// paper: the literature's sizes (mlp: d=1024, 24 blocks, input (8, 512, 1024);
// gpt: GPT-2 small, s=1024, b=8, h=768, a=12, L=12, vocabulary 50257).
Result<ModelConfig> preset(ModelKind kind, std::string_view name);

struct CliOptions {
    TrainConfig train;
    std::vector<Policy> policies;
    std::string preset = "quick";
    std::optional<std::string> out_dir;
    std::optional<std::string> json_path;
    std::optional<int64_t> budget_bytes;  // --budget
    bool capture = true;
    bool help = false;
};

// The --help text, generated by CLI11 from the options parseCommandLine declares.
std::string usage();
// Parses argv (without argv[0]) with CLI11: typed options, the model, preset,
// dtype and policy checked, size overrides applied after the preset. Errors
// are user errors (main prints them and exits 1); --help sets `help` only.
Result<CliOptions> parseCommandLine(const std::vector<std::string>& args);

}  // namespace memscope::trainer
