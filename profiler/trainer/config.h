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
enum class Recompute { None, Block, Selective };

// A policy is a recomputation choice composed with where the optimizer runs;
// "full" = {None, false}, "opt-in-bwd" = {None, true}, "block+opt-in-bwd" = {Block, true}.
struct Policy {
    Recompute recompute = Recompute::None;
    bool optimizer_in_backward = false;
    friend bool operator==(const Policy&, const Policy&) = default;
};

std::string policyName(const Policy& policy);  // "full", "block", "block+opt-in-bwd", ...
// Parses one policy, a '+' composition, or "all" (full, block, selective, opt-in-bwd).
Result<std::vector<Policy>> parsePolicies(std::string_view text);

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
std::string_view dtypeName(DType dtype);
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
    bool capture = true;
    bool help = false;
};

std::string usage();
// Parses argv (without argv[0]). Errors are user errors: print and exit 2.
Result<CliOptions> parseCommandLine(const std::vector<std::string>& args);

}  // namespace memscope::trainer
