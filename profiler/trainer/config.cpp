#include "config.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>
#include <type_traits>

#include "memscope/base/units.h"

namespace memscope::trainer {

Result<std::vector<Policy>> parsePolicies(std::string_view text) {
    if (text == "all") {
        return std::vector<Policy>{{Recompute::None, false},
                                   {Recompute::Block, false},
                                   {Recompute::Selective, false},
                                   {Recompute::None, true}};
    }
    if (text == "sweep") return sweepPolicies(ModelKind::Gpt, 4);
    // Comma-separated list; a save list's op kinds join the item before them.
    std::vector<std::string> items;
    size_t pos = 0;
    while (true) {
        const size_t comma = text.find(',', pos);
        const std::string_view item =
            text.substr(pos, comma == std::string_view::npos ? text.npos : comma - pos);
        if (!items.empty() && items.back().find("save:") != std::string::npos &&
            items.back().find('+', items.back().find("save:")) == std::string::npos &&
            continuesSaveList(item))
            items.back() += "," + std::string(item);
        else
            items.emplace_back(item);
        if (comma == std::string_view::npos) break;
        pos = comma + 1;
    }
    std::vector<Policy> policies;
    for (const std::string& item : items) {
        auto policy = parsePolicy(item);
        if (!policy) return policy.error();
        policies.push_back(*policy);
    }
    return policies;
}

std::vector<Policy> sweepPolicies(ModelKind kind, int64_t layers) {
    std::vector<Policy> base{
        {Recompute::None}, {Recompute::Block}, {Recompute::Selective}, {Recompute::Sqrt}};
    if (layers >= 2) base.push_back({Recompute::Segments, false, 2});
    if (layers >= 4) base.push_back({Recompute::Segments, false, 4});
    base.push_back({Recompute::Save, false, 0, 0});
    base.push_back({Recompute::Save, false, 0, kSaveMatmul});
    if (kind == ModelKind::Gpt) {
        base.push_back({Recompute::Save, false, 0, kSaveAttention});
        base.push_back({Recompute::Save, false, 0, kSaveMatmul | kSaveAttention});
    }
    std::vector<Policy> all;
    for (Policy p : base) {
        all.push_back(p);
        p.optimizer_in_backward = true;
        all.push_back(p);
    }
    return all;
}

std::string_view modelName(ModelKind kind) {
    return kind == ModelKind::Mlp ? "mlp" : "gpt";
}
std::string_view dtypeName(DType dtype) {
    return dtype == DType::Float32 ? "fp32" : "bf16";
}
std::string_view dtypeTorchName(DType dtype) {
    return dtype == DType::Float32 ? "float32" : "bfloat16";
}
int64_t dtypeBytes(DType dtype) {
    return dtype == DType::Float32 ? 4 : 2;
}

std::string describe(const ModelConfig& m) {
    std::ostringstream os;
    os << "L=" << m.layers << (m.kind == ModelKind::Mlp ? " d=" : " h=") << m.hidden;
    if (m.kind == ModelKind::Gpt) os << " a=" << m.heads << " vocab=" << m.vocab;
    os << " s=" << m.seq << " b=" << m.batch;
    if (m.kind == ModelKind::Gpt) os << " dropout=" << m.dropout;
    os << ' ' << dtypeName(m.dtype);
    return os.str();
}

Result<ModelConfig> preset(ModelKind kind, std::string_view name) {
    ModelConfig m;
    m.kind = kind;
    if (name == "quick") {
        if (kind == ModelKind::Mlp) {
            m.layers = 6, m.hidden = 64, m.seq = 64, m.batch = 4;
        } else {
            m.layers = 4, m.hidden = 64, m.heads = 4, m.seq = 64, m.batch = 2, m.vocab = 256;
        }
        return m;
    }
    if (name == "wide") {
        // A wider model at batch 1 and a short sequence: parameters,
        // gradients and Adam's state (and its step's scratch) dominate
        // memory, not activations, as in PyTorch's optimizer-in-backward
        // tutorial; what opt-in-bwd changes.
        if (kind == ModelKind::Mlp) {
            m.layers = 4, m.hidden = 256, m.seq = 16, m.batch = 1;
        } else {
            m.layers = 2, m.hidden = 256, m.heads = 4, m.seq = 16, m.batch = 1, m.vocab = 256;
        }
        return m;
    }
    if (name == "paper") {
        if (kind == ModelKind::Mlp) {
            m.layers = 24, m.hidden = 1024, m.seq = 512, m.batch = 8;
        } else {
            // Korthikanti et al.'s smallest configuration per layer (22B:
            // h=6144, a=64, s=2048), one layer and micro-batch 1 so that
            // parameters, gradients and Adam's state (16 bytes per parameter
            // in fp32) fit a 24 GiB machine; the vocabulary only sizes the
            // embedding and head, which the per-layer formulas leave out.
            m.layers = 1, m.hidden = 6144, m.heads = 64, m.seq = 2048, m.batch = 1, m.vocab = 1024;
        }
        return m;
    }
    return makeError("unknown preset '" + std::string(name) + "' (quick, wide, paper)");
}

namespace {

// The option values as parsed, before the preset is applied: the preset
// depends on --model and --preset, and the size overrides win over it
// whatever their order on the command line.
struct ParsedOptions {
    std::string model = "mlp";
    std::string policy = "all";
    std::string dtype = "fp32";
    std::string out_dir, json_path, budget;
    int64_t layers = 0, hidden = 0, heads = 0, seq = 0, batch = 0, vocab = 0;
    double dropout = 0;
    bool no_capture = false;
    // Set by declare(): whether each override was given.
    CLI::Option *out = nullptr, *json = nullptr, *budget_opt = nullptr;
    CLI::Option *layers_opt = nullptr, *hidden_opt = nullptr, *heads_opt = nullptr,
                *seq_opt = nullptr, *batch_opt = nullptr, *vocab_opt = nullptr,
                *dropout_opt = nullptr;
};

// The checks' own descriptions stay out of --help: the type names and the
// option descriptions say it better.
CLI::Validator quiet(CLI::Validator v) {
    v.description("");
    return v;
}

// cpu, cuda or cuda:N.
const CLI::Validator kDeviceValidator(
    [](std::string& text) -> std::string {
        if (text == "cpu" || text == "cuda") return {};
        if (text.rfind("cuda:", 0) == 0) {
            const std::string_view ordinal = std::string_view(text).substr(5);
            if (!ordinal.empty() && ordinal.find_first_not_of("0123456789") == ordinal.npos)
                return {};
        }
        return "unknown device '" + text + "' (cpu, cuda, cuda:N)";
    },
    "", "device");

// A whole number of type T in [min, max] (CLI11's Range would call "zero"
// out of range, and a negative seed would wrap around).
template <typename T>
CLI::Validator whole(T min, T max = std::numeric_limits<T>::max()) {
    return CLI::Validator(
        [min, max](std::string& text) -> std::string {
            T value{};
            const char* end = text.data() + text.size();
            auto [ptr, ec] = std::from_chars(text.data(), end, value);
            const bool negative_unsigned =
                std::is_unsigned_v<T> && text.size() > 1 && text[0] == '-' &&
                text.find_first_not_of("0123456789", 1) == std::string::npos;
            if (ec == std::errc::result_out_of_range || negative_unsigned ||
                (ec == std::errc() && ptr == end && (value < min || value > max))) {
                return "'" + text + "' is not in [" + std::to_string(min) + ", " +
                       std::to_string(max) + "]";
            }
            if (ec != std::errc() || ptr != end) return "'" + text + "' is not a whole number";
            return {};
        },
        "", "whole number");
}

// Whole numbers from 1 to what the trace's model shape holds (int32).
const CLI::Validator kSizeRange = whole<int64_t>(1, std::numeric_limits<int32_t>::max());

// A probability in [0, 1).
const CLI::Validator kProbability(
    [](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value)) return "'" + text + "' is not a number";
        if (!(value >= 0.0 && value < 1.0)) return "'" + text + "' is not in [0, 1)";
        return {};
    },
    "", "probability");

// A byte count, plain or with a unit (core's parseByteSize).
const CLI::Validator kByteSizeValidator(
    [](std::string& text) -> std::string {
        auto parsed = parseByteSize(text);
        return parsed ? std::string() : parsed.message();
    },
    "", "size");

// One policy, a '+' composition, a ',' list, or "all" (parsePolicies).
const CLI::Validator kPolicyValidator(
    [](std::string& text) -> std::string {
        auto parsed = parsePolicies(text);
        return parsed ? std::string() : parsed.message();
    },
    "", "policy");

void declare(CLI::App& app, CliOptions& o, ParsedOptions& p) {
    app.name("memscope-train");
    app.description(
        "memscope-train: the built-in reference trainer (LibTorch). Trains a small model\n"
        "under each activation-checkpointing policy and records every tensor allocation\n"
        "and free with its ground-truth category and training phase as a native trace.\n");
    app.set_help_flag("-h,--help", "this text");
    app.get_formatter()->column_width(30);
    // Defaults shown in --help; a repeated option's last value wins.
    app.option_defaults()->always_capture_default()->multi_option_policy(
        CLI::MultiOptionPolicy::TakeLast);

    app.add_option("--model", p.model, "model")
        ->check(quiet(CLI::IsMember({"mlp", "gpt"})))
        ->type_name("mlp|gpt");
    app.add_option("--policy", p.policy,
                   "full | block | selective | sqrt | segments:K | save:OPS |\n"
                   "opt-in-bwd | all | sweep; compose with '+', e.g.\n"
                   "block+opt-in-bwd; list with ','.\n"
                   "sqrt: checkpointed segments of ceil(sqrt(L)) blocks\n"
                   "(Chen et al. 2016). segments:K: checkpoint_sequential\n"
                   "with K segments. save:OPS: recompute each block except\n"
                   "the op kinds named, e.g. save:matmul,\n"
                   "save:matmul,attention, save:none; op kinds: matmul\n"
                   "(linear layers' outputs), attention (gpt's attention\n"
                   "core, kept whole), none. all: full, block, selective,\n"
                   "opt-in-bwd. sweep: every policy, alone and with\n"
                   "+opt-in-bwd, and the memory/time frontier")
        ->check(kPolicyValidator)
        ->type_name("P");
    app.add_option("--preset", o.preset,
                   "model size (quick: seconds on 2 CPU cores, activations\n"
                   "dominate; wide: seconds, parameters, gradients and\n"
                   "Adam's state dominate; paper: the literature's sizes)")
        ->check(quiet(CLI::IsMember({"quick", "wide", "paper"})))
        ->type_name("quick|wide|paper");
    p.out = app.add_option("--out", p.out_dir,
                           "write one trace per policy (DIR/<model>-<policy>.memscope)\n"
                           "and DIR/summary.json")
                ->type_name("DIR");
    p.json = app.add_option("--json", p.json_path, "write the summary as JSON to FILE")
                 ->type_name("FILE");
    p.budget_opt = app.add_option("--budget", p.budget,
                                  "name the fastest policy run whose peak fits SIZE\n"
                                  "(e.g. 2.5GiB, 800MB, 512K), or by how much the\n"
                                  "smallest misses")
                       ->check(kByteSizeValidator)
                       ->type_name("SIZE");
    app.add_option("--steps", o.train.steps, "training steps (>= 1)")
        ->check(whole<int>(1))
        ->type_name("N");
    app.add_option("--dtype", p.dtype, "parameter and activation dtype (also: float32, bfloat16)")
        ->check(quiet(CLI::IsMember({"fp32", "bf16", "float32", "bfloat16"})))
        ->type_name("fp32|bf16");
    app.add_option("--device", o.train.device, "device")
        ->check(kDeviceValidator)
        ->type_name("cpu|cuda[:N]");
    app.add_option("--seed", o.train.seed, "seed for parameters, data and dropout")
        ->check(whole<uint64_t>(0))
        ->type_name("N");
    app.add_option("--lr", o.train.lr, "Adam learning rate")->type_name("X");
    app.add_option("--threads", o.train.threads, "intra-op threads (0: LibTorch's default)")
        ->check(whole<int>(0))
        ->type_name("N");
    app.add_flag("--no-capture", p.no_capture, "do not record (to measure the recording overhead)");

    // Model size overrides, applied after the preset.
    const char* const group = "Model size overrides (default: the preset's)";
    auto size = [&](const char* name, const char* type, int64_t& value, const char* what) {
        return app.add_option(name, value, what)
            ->check(kSizeRange)
            ->group(group)
            ->type_name(type)
            ->default_str("");
    };
    p.layers_opt = size("--layers", "L", p.layers, "residual blocks (mlp) or decoder layers (gpt)");
    p.hidden_opt = size("--hidden", "H", p.hidden, "width: d (mlp) or h (gpt)");
    p.heads_opt = size("--heads", "A", p.heads, "attention heads (gpt)");
    p.seq_opt = size("--seq", "S", p.seq, "sequence length");
    p.batch_opt = size("--batch", "B", p.batch, "batch size");
    p.vocab_opt = size("--vocab", "V", p.vocab, "vocabulary (gpt)");
    p.dropout_opt = app.add_option("--dropout", p.dropout, "dropout probability in [0, 1) (gpt)")
                        ->check(kProbability)
                        ->group(group)
                        ->type_name("P")
                        ->default_str("");

    app.footer(
        "Exit status: 0 ok, 1 bad usage or a run failed, 2 the device or the output\n"
        "folder is unavailable.");
}

}  // namespace

std::string usage() {
    CLI::App app;
    CliOptions o;
    ParsedOptions p;
    declare(app, o, p);
    return app.help();
}

Result<CliOptions> parseCommandLine(const std::vector<std::string>& args) {
    CLI::App app;
    CliOptions o;
    ParsedOptions p;
    declare(app, o, p);
    try {
        // CLI11 takes the words last first.
        std::vector<std::string> reversed(args.rbegin(), args.rend());
        app.parse(reversed);
    } catch (const CLI::CallForHelp&) {
        o.help = true;
        return o;
    } catch (const CLI::ParseError& e) {
        return makeError(e.what());
    }

    const ModelKind kind = p.model == "gpt" ? ModelKind::Gpt : ModelKind::Mlp;
    auto m = preset(kind, o.preset);
    if (!m) return m.error();
    o.train.model = *m;
    o.train.model.dtype =
        p.dtype == "bf16" || p.dtype == "bfloat16" ? DType::BFloat16 : DType::Float32;
    o.capture = !p.no_capture;
    if (*p.out) o.out_dir = p.out_dir;
    if (*p.json) o.json_path = p.json_path;

    ModelConfig& model = o.train.model;
    if (*p.layers_opt) model.layers = p.layers;
    if (*p.hidden_opt) model.hidden = p.hidden;
    if (*p.heads_opt) model.heads = p.heads;
    if (*p.seq_opt) model.seq = p.seq;
    if (*p.batch_opt) model.batch = p.batch;
    if (*p.vocab_opt) model.vocab = p.vocab;
    if (*p.dropout_opt) model.dropout = p.dropout;
    if (kind == ModelKind::Gpt && model.hidden % model.heads != 0)
        return makeError("--hidden must be a multiple of --heads");

    // The policies, once the number of layers is known.
    if (p.policy == "sweep") {
        o.policies = sweepPolicies(kind, model.layers);
    } else {
        auto policies = parsePolicies(p.policy);
        if (!policies) return policies.error();
        o.policies = *policies;
    }
    for (const Policy& policy : o.policies) {
        auto plan = segmentPlan(policy, model.layers);
        if (!plan) return plan.error();
    }
    if (*p.budget_opt) {
        if (!o.capture) return makeError("--budget needs the runs' peaks: drop --no-capture");
        o.budget_bytes = parseByteSize(p.budget).value();
    }
    return o;
}

}  // namespace memscope::trainer
