#include "memscope/analysis/checkpoint_policy.h"

#include <algorithm>
#include <charconv>
#include <optional>

namespace memscope {

namespace {

struct SaveOpName {
    SaveOp op;
    std::string_view name;
};
constexpr SaveOpName kSaveOps[] = {{kSaveMatmul, "matmul"}, {kSaveAttention, "attention"}};

std::optional<SaveOp> saveOpByName(std::string_view name) {
    for (const auto& s : kSaveOps)
        if (s.name == name) return s.op;
    return std::nullopt;
}

bool identifier(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '.';
    });
}

// "save:" followed by op kinds (and, with KindsAndOps, ops PyTorch names)
// joined with ',' (or "none"): the kinds' bits into save_ops, the ops into
// save_op_names.
Result<void> parseSaveOps(std::string_view list, SaveNames names, Policy& policy) {
    if (list == "none") return {};
    size_t pos = 0;
    while (true) {
        const size_t comma = list.find(',', pos);
        const std::string_view name =
            list.substr(pos, comma == list.npos ? list.npos : comma - pos);
        if (const auto op = saveOpByName(name)) {
            policy.save_ops |= *op;
        } else if (names == SaveNames::KindsAndOps && isQualifiedOpName(name)) {
            auto& ops = policy.save_op_names;
            if (std::find(ops.begin(), ops.end(), name) == ops.end()) ops.emplace_back(name);
        } else {
            return makeError("unknown op kind '" + std::string(name) +
                             "' in save:" + std::string(list) + " (" + std::string(saveOpsHelp()) +
                             (names == SaveNames::KindsAndOps
                                  ? "; or ops as PyTorch names them: aten::mm, aten::addmm, …"
                                  : "") +
                             ")");
        }
        if (comma == list.npos) break;
        pos = comma + 1;
    }
    return {};
}

}  // namespace

bool isQualifiedOpName(std::string_view name) {
    const size_t sep = name.find("::");
    return sep != name.npos && identifier(name.substr(0, sep)) && identifier(name.substr(sep + 2));
}

bool continuesSaveList(std::string_view item, SaveNames names) {
    const std::string_view head = item.substr(0, item.find('+'));
    return head == "none" || saveOpByName(head).has_value() ||
           (names == SaveNames::KindsAndOps && isQualifiedOpName(head));
}

std::string saveOpsName(uint32_t ops) {
    std::string name;
    for (const auto& s : kSaveOps) {
        if (!(ops & s.op)) continue;
        if (!name.empty()) name += ',';
        name += s.name;
    }
    return name.empty() ? "none" : name;
}

std::string_view saveOpsHelp() {
    return "op kinds: matmul (linear layers' outputs), attention (gpt's attention core, "
           "kept whole), none";
}

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
        case Recompute::Sqrt:
            name = "sqrt";
            break;
        case Recompute::Segments:
            name = "segments:" + std::to_string(policy.segments);
            break;
        case Recompute::Save:
            name = "save:";
            if (policy.save_ops != 0 || policy.save_op_names.empty())
                name += saveOpsName(policy.save_ops);
            for (size_t i = 0; i < policy.save_op_names.size(); ++i)
                name += (i == 0 && policy.save_ops == 0 ? "" : ",") + policy.save_op_names[i];
            break;
    }
    if (policy.optimizer_in_backward) name += name.empty() ? "opt-in-bwd" : "+opt-in-bwd";
    return name;
}

std::string policyFileStem(const Policy& policy) {
    std::string stem = policyName(policy);
    for (char& c : stem)
        if (c == ':' || c == ',') c = '-';
    return stem;
}

std::string_view policyListHelp() {
    return "full, block, selective, sqrt, segments:K, save:OPS, opt-in-bwd, all, sweep, or a '+' "
           "composition such as block+opt-in-bwd";
}

Result<Policy> parsePolicy(std::string_view item, SaveNames names) {
    Policy policy;
    bool recompute_set = false;
    size_t p = 0;
    while (p <= item.size()) {
        const size_t plus = item.find('+', p);
        const std::string_view part =
            item.substr(p, plus == std::string_view::npos ? item.npos : plus - p);
        std::optional<Policy> recompute;
        if (part == "full") {
            recompute = Policy{Recompute::None};
        } else if (part == "block") {
            recompute = Policy{Recompute::Block};
        } else if (part == "selective") {
            recompute = Policy{Recompute::Selective};
        } else if (part == "sqrt") {
            recompute = Policy{Recompute::Sqrt};
        } else if (part.rfind("segments:", 0) == 0) {
            const std::string_view k = part.substr(9);
            int value = 0;
            auto [ptr, ec] = std::from_chars(k.data(), k.data() + k.size(), value);
            if (k.empty() || ec != std::errc() || ptr != k.data() + k.size() || value < 1)
                return makeError("policy '" + std::string(part) +
                                 "': K must be a whole number >= 1");
            recompute = Policy{Recompute::Segments, false, value};
        } else if (part.rfind("save:", 0) == 0) {
            Policy save{Recompute::Save};
            auto ops = parseSaveOps(part.substr(5), names, save);
            if (!ops) return ops.error();
            recompute = std::move(save);
        } else if (part == "opt-in-bwd") {
            policy.optimizer_in_backward = true;
        } else {
            return makeError("unknown policy '" + std::string(part) + "' (" +
                             std::string(policyListHelp()) + ")");
        }
        if (recompute) {
            if (recompute_set)
                return makeError("policy '" + std::string(item) +
                                 "': at most one recomputation (full, block, selective, sqrt, "
                                 "segments:K, save:OPS)");
            recompute_set = true;
            recompute->optimizer_in_backward = policy.optimizer_in_backward;
            policy = *recompute;
        }
        if (plus == std::string_view::npos) break;
        p = plus + 1;
    }
    return policy;
}

Result<std::vector<CheckpointSegment>> segmentPlan(const Policy& policy, int64_t layers) {
    std::vector<CheckpointSegment> plan;
    switch (policy.recompute) {
        case Recompute::None:
        case Recompute::Selective:
            if (layers > 0) plan.push_back({0, layers, false});
            break;
        case Recompute::Block:
        case Recompute::Save:
            for (int64_t i = 0; i < layers; ++i) plan.push_back({i, i + 1, true});
            break;
        case Recompute::Sqrt: {
            int64_t k = 1;
            while (k * k < layers) ++k;  // ceil(sqrt(L))
            for (int64_t i = 0; i < layers; i += k)
                plan.push_back({i, std::min(i + k, layers), true});
            break;
        }
        case Recompute::Segments: {
            const int64_t k = policy.segments;
            if (k < 1 || k > layers)
                return makeError("policy " + policyName(policy) + ": K must be in [1, " +
                                 std::to_string(layers) + "], the model's layers");
            // torch.utils.checkpoint.checkpoint_sequential: segments of L/K
            // blocks; the last runs without checkpointing.
            const int64_t size = layers / k;
            int64_t i = 0;
            for (int64_t s = 0; s + 1 < k; ++s, i += size) plan.push_back({i, i + size, true});
            plan.push_back({i, layers, false});
            break;
        }
    }
    return plan;
}

}  // namespace memscope
