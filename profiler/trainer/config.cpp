#include "config.h"

#include <charconv>
#include <map>
#include <sstream>

namespace memscope::trainer {

std::string policyName(const Policy& policy) {
    std::string name;
    switch (policy.recompute) {
        case Recompute::None:
            name = policy.optimizer_in_backward ? "" : "full";
            break;
        case Recompute::Block:
            name = "block";
            break;
        case Recompute::Selective:
            name = "selective";
            break;
    }
    if (policy.optimizer_in_backward) name += name.empty() ? "opt-in-bwd" : "+opt-in-bwd";
    return name;
}

Result<std::vector<Policy>> parsePolicies(std::string_view text) {
    if (text == "all") {
        return std::vector<Policy>{{Recompute::None, false},
                                   {Recompute::Block, false},
                                   {Recompute::Selective, false},
                                   {Recompute::None, true}};
    }
    std::vector<Policy> policies;
    // Comma-separated list; each item a '+' composition of parts.
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t comma = text.find(',', pos);
        std::string_view item =
            text.substr(pos, comma == std::string_view::npos ? text.npos : comma - pos);
        Policy policy;
        bool recompute_set = false;
        size_t p = 0;
        while (p <= item.size()) {
            size_t plus = item.find('+', p);
            std::string_view part =
                item.substr(p, plus == std::string_view::npos ? item.npos : plus - p);
            if (part == "full" || part == "block" || part == "selective") {
                if (recompute_set)
                    return makeError("policy '" + std::string(item) +
                                     "': at most one of full, block, selective");
                recompute_set = true;
                policy.recompute = part == "block"       ? Recompute::Block
                                   : part == "selective" ? Recompute::Selective
                                                         : Recompute::None;
            } else if (part == "opt-in-bwd") {
                policy.optimizer_in_backward = true;
            } else {
                return makeError("unknown policy '" + std::string(part) +
                                 "' (full, block, selective, opt-in-bwd, all, or a '+' "
                                 "composition such as block+opt-in-bwd)");
            }
            if (plus == std::string_view::npos) break;
            p = plus + 1;
        }
        policies.push_back(policy);
        if (comma == std::string_view::npos) break;
        pos = comma + 1;
    }
    return policies;
}

std::string_view modelName(ModelKind kind) {
    return kind == ModelKind::Mlp ? "mlp" : "gpt";
}
std::string_view dtypeName(DType dtype) {
    return dtype == DType::Float32 ? "fp32" : "bf16";
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
    if (name == "paper") {
        if (kind == ModelKind::Mlp) {
            m.layers = 24, m.hidden = 1024, m.seq = 512, m.batch = 8;
        } else {
            m.layers = 12, m.hidden = 768, m.heads = 12, m.seq = 1024, m.batch = 8, m.vocab = 50257;
        }
        return m;
    }
    return makeError("unknown preset '" + std::string(name) + "' (quick, paper)");
}

std::string usage() {
    return R"(memscope-train: the built-in reference trainer (LibTorch). Trains a small model
under each activation-checkpointing policy and records every tensor allocation
and free with its ground-truth category and training phase as a native trace.

usage: memscope-train [options]

  --model mlp|gpt        model (default mlp)
  --policy P             full | block | selective | opt-in-bwd | all (default all);
                         compose with '+', e.g. block+opt-in-bwd; list with ','
  --preset quick|paper   model size (default quick: seconds on 2 CPU cores)
  --out DIR              write one trace per policy (DIR/<model>-<policy>.memscope)
                         and DIR/summary.json
  --json FILE            write the summary as JSON to FILE
  --steps N              training steps (default 3)
  --dtype fp32|bf16      parameter and activation dtype (default fp32)
  --device cpu|cuda[:n]  (default cpu)
  --seed N               seed for parameters, data and dropout (default 1234)
  --lr X                 Adam learning rate (default 1e-3)
  --threads N            intra-op threads (default: LibTorch's)
  --no-capture           do not record (to measure the recording overhead)
  model size overrides (after the preset):
  --layers L --hidden H --heads A --seq S --batch B --vocab V --dropout P
  -h, --help             this text

Exit status: 0 ok, 1 a run failed, 2 bad usage or device unavailable.
)";
}

namespace {

template <typename T>
Result<T> parseNumber(const std::string& flag, const std::string& text) {
    T value{};
    if constexpr (std::is_floating_point_v<T>) {
        try {
            size_t used = 0;
            value = static_cast<T>(std::stod(text, &used));
            if (used != text.size()) throw std::invalid_argument(text);
        } catch (const std::exception&) {
            return makeError(flag + ": '" + text + "' is not a number");
        }
    } else {
        auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || ptr != text.data() + text.size())
            return makeError(flag + ": '" + text + "' is not a whole number");
    }
    return value;
}

}  // namespace

Result<CliOptions> parseCommandLine(const std::vector<std::string>& args) {
    CliOptions o;
    std::string model = "mlp", policy = "all", dtype = "fp32";
    std::map<std::string, std::string> overrides;  // applied after the preset
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "-h" || a == "--help") {
            o.help = true;
            return o;
        }
        if (a == "--no-capture") {
            o.capture = false;
            continue;
        }
        static const char* kWithValue[] = {"--model",   "--policy", "--preset", "--out",   "--json",
                                           "--steps",   "--dtype",  "--device", "--seed",  "--lr",
                                           "--threads", "--layers", "--hidden", "--heads", "--seq",
                                           "--batch",   "--vocab",  "--dropout"};
        bool known = false;
        for (const char* f : kWithValue) known = known || a == f;
        if (!known) return makeError("unknown option '" + a + "' (see --help)");
        if (i + 1 >= args.size()) return makeError(a + " needs a value");
        const std::string& v = args[++i];
        if (a == "--model")
            model = v;
        else if (a == "--policy")
            policy = v;
        else if (a == "--preset")
            o.preset = v;
        else if (a == "--out")
            o.out_dir = v;
        else if (a == "--json")
            o.json_path = v;
        else if (a == "--dtype")
            dtype = v;
        else if (a == "--device")
            o.train.device = v;
        else
            overrides[a] = v;
    }
    ModelKind kind;
    if (model == "mlp")
        kind = ModelKind::Mlp;
    else if (model == "gpt")
        kind = ModelKind::Gpt;
    else
        return makeError("unknown model '" + model + "' (mlp, gpt)");

    auto m = preset(kind, o.preset);
    if (!m) return m.error();
    o.train.model = *m;
    if (dtype == "fp32" || dtype == "float32")
        o.train.model.dtype = DType::Float32;
    else if (dtype == "bf16" || dtype == "bfloat16")
        o.train.model.dtype = DType::BFloat16;
    else
        return makeError("unknown dtype '" + dtype + "' (fp32, bf16)");

    auto policies = parsePolicies(policy);
    if (!policies) return policies.error();
    o.policies = *policies;

    for (const auto& [flag, text] : overrides) {
        if (flag == "--lr" || flag == "--dropout") {
            auto v = parseNumber<double>(flag, text);
            if (!v) return v.error();
            if (flag == "--lr")
                o.train.lr = *v;
            else if (*v < 0.0 || *v >= 1.0)
                return makeError("--dropout must be in [0, 1)");
            else
                o.train.model.dropout = *v;
            continue;
        }
        if (flag == "--seed") {
            auto v = parseNumber<uint64_t>(flag, text);
            if (!v) return v.error();
            o.train.seed = *v;
            continue;
        }
        auto v = parseNumber<int64_t>(flag, text);
        if (!v) return v.error();
        const int64_t n = *v;
        if (flag == "--threads") {
            if (n < 0) return makeError("--threads must be >= 0");
            o.train.threads = static_cast<int>(n);
            continue;
        }
        if (n < 1) return makeError(flag + " must be >= 1");
        if (flag == "--steps")
            o.train.steps = static_cast<int>(n);
        else if (flag == "--layers")
            o.train.model.layers = n;
        else if (flag == "--hidden")
            o.train.model.hidden = n;
        else if (flag == "--heads")
            o.train.model.heads = n;
        else if (flag == "--seq")
            o.train.model.seq = n;
        else if (flag == "--batch")
            o.train.model.batch = n;
        else if (flag == "--vocab")
            o.train.model.vocab = n;
    }
    if (kind == ModelKind::Gpt && o.train.model.hidden % o.train.model.heads != 0)
        return makeError("--hidden must be a multiple of --heads");
    if (o.train.device != "cpu" && o.train.device.rfind("cuda", 0) != 0)
        return makeError("unknown device '" + o.train.device + "' (cpu, cuda, cuda:N)");
    return o;
}

}  // namespace memscope::trainer
