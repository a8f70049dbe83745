// whatif's policy vocabulary: memscope-train's, plus layers:LIST and the
// names other frameworks give their checkpointing (sequential:K, every:N,
// uniform:N, first:N, module:CLASS).

#include <algorithm>
#include <charconv>
#include <optional>

#include "memscope/whatif/whatif.h"

namespace memscope {
namespace {

// "0,2,4", "1-3", "0,4-6": ascending, without repeats.
Result<std::vector<int64_t>> parseLayerList(std::string_view list, std::string_view whole) {
    std::vector<int64_t> layers;
    auto bad = [&](std::string_view why) {
        return makeError("policy '" + std::string(whole) + "': " + std::string(why) +
                         " (layers:LIST takes layer indices as `whatif` lists them, e.g. "
                         "layers:0,2,4 or layers:1-3)");
    };
    if (list.empty()) return bad("no layer index");
    size_t p = 0;
    while (p <= list.size()) {
        const size_t comma = std::min(list.find(',', p), list.size());
        const std::string_view item = list.substr(p, comma - p);
        const size_t dash = item.find('-');
        int64_t first = 0, last = 0;
        auto number = [](std::string_view t, int64_t& v) {
            auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
            return !t.empty() && ec == std::errc() && ptr == t.data() + t.size() && v >= 0 &&
                   v < (int64_t{1} << 30);
        };
        if (dash == std::string_view::npos) {
            if (!number(item, first)) return bad("'" + std::string(item) + "' is not an index");
            last = first;
        } else if (!number(item.substr(0, dash), first) || !number(item.substr(dash + 1), last) ||
                   last < first) {
            return bad("'" + std::string(item) + "' is not a range FIRST-LAST");
        }
        if (last - first > 100000) return bad("the range is too long");
        for (int64_t i = first; i <= last; ++i) layers.push_back(i);
        if (comma == list.size()) break;
        p = comma + 1;
    }
    std::sort(layers.begin(), layers.end());
    layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
    return layers;
}

// "0,2,4", "0-4,7": ascending indices, runs of three or more as FIRST-LAST
// (a 24-layer mix stays one short word).
std::string layerListText(const std::vector<int64_t>& layers) {
    std::string s;
    for (size_t i = 0; i < layers.size();) {
        size_t j = i;
        while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1) ++j;
        s += (s.empty() ? "" : ",");
        if (j - i >= 2) {
            s += std::to_string(layers[i]) + "-" + std::to_string(layers[j]);
            i = j + 1;
        } else {
            s += std::to_string(layers[i]);
            ++i;
        }
    }
    return s;
}

bool isLayerListItem(std::string_view item) {
    const std::string_view head = item.substr(0, item.find('+'));
    return !head.empty() && std::all_of(head.begin(), head.end(),
                                        [](char c) { return (c >= '0' && c <= '9') || c == '-'; });
}

// The names that take a count: "sequential:K", "every:N", …
struct CountedName {
    std::string_view prefix;
    RegionPlan plan;
    std::string_view meaning;  // what the count is, for an error message
};
constexpr CountedName kCountedNames[] = {
    {"sequential:", RegionPlan::Sequential, "K, the number of segments"},
    {"every:", RegionPlan::Every, "N, every N-th layer"},
    {"uniform:", RegionPlan::Uniform, "N, the layers per checkpointed chunk"},
    {"first:", RegionPlan::First, "N, the number of first layers"},
};

bool classNameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// What follows a name's head: nothing, or "+opt-in-bwd".
Result<bool> optimizerInBackwardTail(std::string_view text, size_t plus) {
    if (plus == std::string_view::npos) return false;
    auto rest = parsePolicy(text.substr(plus + 1));
    if (!rest) return rest.error();
    if (rest->recompute != Recompute::None || !rest->optimizer_in_backward)
        return makeError("policy '" + std::string(text) +
                         "': " + std::string(text.substr(0, text.find(':') + 1)) +
                         " composes only with +opt-in-bwd");
    return true;
}

// sequential:K, every:N, uniform:N, first:N, module:CLASS; nullopt when
// `text` is none of them.
std::optional<Result<WhatIfPolicy>> parseFrameworkName(std::string_view text) {
    const size_t plus = text.find('+');
    const std::string_view head = text.substr(0, plus);
    WhatIfPolicy w;
    w.policy.recompute = Recompute::Block;  // each region is recomputed whole
    if (head.rfind("module:", 0) == 0) {
        const std::string_view cls = head.substr(7);
        if (cls.empty() || !std::all_of(cls.begin(), cls.end(), classNameChar))
            return makeError("policy '" + std::string(text) +
                             "': module:CLASS takes a module class name as the trace records "
                             "it, e.g. module:Block or module:CausalSelfAttention");
        w.plan = RegionPlan::Module;
        w.module_type = std::string(cls);
    } else {
        const CountedName* named = nullptr;
        for (const CountedName& n : kCountedNames)
            if (head.rfind(n.prefix, 0) == 0) named = &n;
        if (!named) return std::nullopt;
        const std::string_view k = head.substr(named->prefix.size());
        int64_t value = 0;
        auto [ptr, ec] = std::from_chars(k.data(), k.data() + k.size(), value);
        if (k.empty() || ec != std::errc() || ptr != k.data() + k.size() || value < 1 ||
            value > 100000)
            return makeError("policy '" + std::string(text) + "': " + std::string(named->prefix) +
                             " takes " + std::string(named->meaning) + ", a whole number >= 1");
        w.plan = named->plan;
        w.count = value;
    }
    auto opt = optimizerInBackwardTail(text, plus);
    if (!opt) return opt.error();
    w.policy.optimizer_in_backward = *opt;
    w.name = std::string(head) + (*opt ? "+opt-in-bwd" : "");
    return w;
}

// A per-layer mix: "layers:LIST", "save:OPS@LIST", or both, with an optional
// "+opt-in-bwd" ("save:OPS" without '@' is the uniform save list).
bool isMix(std::string_view text) {
    if (text.rfind("layers:", 0) == 0) return true;
    return text.rfind("save:", 0) == 0 && text.substr(0, text.find('+')).find('@') != text.npos;
}

Result<WhatIfPolicy> parseMix(std::string_view text) {
    WhatIfPolicy w;
    w.plan = RegionPlan::Layers;
    w.explicit_layers = true;
    bool whole = false, saving = false;
    auto bad = [&](const std::string& why) {
        return makeError("policy '" + std::string(text) + "': " + why +
                         " (a layer mix is layers:LIST, save:OPS@LIST and opt-in-bwd joined by "
                         "'+', e.g. layers:0-4+save:matmul@5-23+opt-in-bwd)");
    };
    size_t p = 0;
    while (p <= text.size()) {
        const size_t plus = std::min(text.find('+', p), text.size());
        const std::string_view part = text.substr(p, plus - p);
        if (part.rfind("layers:", 0) == 0 && !whole && !saving) {
            auto layers = parseLayerList(part.substr(7), text);
            if (!layers) return layers.error();
            w.layers = std::move(*layers);
            whole = true;
        } else if (part.rfind("save:", 0) == 0 && part.find('@') != part.npos && !saving) {
            const size_t at = part.find('@');
            auto list = parsePolicy(part.substr(0, at), SaveNames::KindsAndOps);
            if (!list) return bad(list.message());
            auto layers = parseLayerList(part.substr(at + 1), text);
            if (!layers) return layers.error();
            w.policy.save_ops = list->save_ops;
            w.policy.save_op_names = list->save_op_names;
            w.save_layers = std::move(*layers);
            saving = true;
        } else if (part == "opt-in-bwd" && (whole || saving) && !w.policy.optimizer_in_backward) {
            w.policy.optimizer_in_backward = true;
        } else {
            return bad("'" + std::string(part) + "' is out of place");
        }
        if (plus == text.size()) break;
        p = plus + 1;
    }
    for (int64_t l : w.layers)
        if (std::binary_search(w.save_layers.begin(), w.save_layers.end(), l))
            return bad("layer " + std::to_string(l) +
                       " is listed both whole and with the save list");
    // Each listed layer is its own region; the save list's layers keep its ops.
    w.policy.recompute = saving ? Recompute::Save : Recompute::Block;
    w.name = mixName(w);
    return w;
}

}  // namespace

Result<WhatIfPolicy> parseWhatIfPolicy(std::string_view text) {
    if (auto framework = parseFrameworkName(text)) return std::move(*framework);
    if (isMix(text)) return parseMix(text);
    WhatIfPolicy w;
    // Save lists name op kinds or ops as PyTorch names them ("aten::addmm").
    auto policy = parsePolicy(text, SaveNames::KindsAndOps);
    if (!policy)
        return makeError(policy.message() +
                         "; whatif also takes layers:LIST, sequential:K, every:N, uniform:N, "
                         "first:N and module:CLASS");
    w.policy = *policy;
    w.name = policyName(w.policy);
    return w;
}

std::string mixName(const WhatIfPolicy& policy) {
    std::string name;
    if (!policy.layers.empty() || policy.save_layers.empty())
        name = "layers:" + layerListText(policy.layers);
    if (!policy.save_layers.empty()) {
        Policy list = policy.policy;
        list.optimizer_in_backward = false;
        list.recompute = Recompute::Save;
        name +=
            (name.empty() ? "" : "+") + policyName(list) + "@" + layerListText(policy.save_layers);
    }
    if (policy.policy.optimizer_in_backward) name += "+opt-in-bwd";
    return name;
}

bool savesOpsIn(const WhatIfPolicy& policy, int64_t layer) {
    if (policy.policy.recompute != Recompute::Save) return false;
    if (policy.plan != RegionPlan::Layers) return true;
    return std::binary_search(policy.save_layers.begin(), policy.save_layers.end(), layer);
}

Result<std::vector<WhatIfPolicy>> parseWhatIfPolicies(std::span<const std::string> texts) {
    std::vector<WhatIfPolicy> out;
    for (const std::string& text : texts) {
        // Items of a comma list; "layers:" and "save:" lists continue over commas.
        std::vector<std::string> items;
        size_t p = 0;
        while (p <= text.size()) {
            const size_t comma = std::min(text.find(',', p), text.size());
            std::string item = text.substr(p, comma - p);
            // The '+' part the item would continue: "layers:0" of "layers:0"
            // and of "save:matmul@1+layers:0".
            const std::string_view last =
                items.empty() ? std::string_view()
                              : std::string_view(items.back()).substr(items.back().rfind('+') + 1);
            const bool listed = last.rfind("layers:", 0) == 0 ||
                                (last.rfind("save:", 0) == 0 && last.find('@') != last.npos);
            const bool continues =
                !items.empty() &&
                ((listed && isLayerListItem(item)) ||
                 (last.rfind("save:", 0) == 0 && last.find('@') == last.npos &&
                  continuesSaveList(item.substr(0, item.find('@')), SaveNames::KindsAndOps)));
            if (continues)
                items.back() += "," + item;
            else
                items.push_back(std::move(item));
            if (comma == text.size()) break;
            p = comma + 1;
        }
        for (const std::string& item : items) {
            if (item == "sweep" || item == "all" || item.empty()) {
                if (item.empty()) return makeError("an empty policy name in '" + text + "'");
                return makeError("'" + item +
                                 "' is the default: leave --policy out to predict every policy "
                                 "the trace allows");
            }
            auto w = parseWhatIfPolicy(item);
            if (!w) return w.error();
            if (std::none_of(out.begin(), out.end(),
                             [&](const WhatIfPolicy& o) { return o.name == w->name; }))
                out.push_back(std::move(*w));
        }
    }
    return out;
}

std::string_view whatIfPolicyHelp() {
    return "block, sqrt, segments:K, sequential:K, layers:LIST (layer indices, e.g. "
           "layers:0,2,4 or layers:1-3), every:N, uniform:N, first:N, module:CLASS, selective, "
           "save:OPS, opt-in-bwd, or a '+' composition such as block+opt-in-bwd";
}

std::string_view whatIfPolicyMeanings() {
    return "Policies (layers are the chain whatif lists, in forward order; L of them):\n"
           "  block           each layer checkpointed on its own\n"
           "  sqrt            checkpointed chunks of ceil(sqrt(L)) layers\n"
           "  segments:K      L cut into K segments of L/K layers (integer division); the "
           "first K-1 checkpointed, the rest runs normally\n"
           "  sequential:K    torch.utils.checkpoint.checkpoint_sequential(layers, K, x): the "
           "same cut as segments:K, checkpointed reentrantly as checkpoint_sequential does "
           "(--use-reentrant)\n"
           "  layers:LIST     exactly these layer indices, each on its own (layers:0,2,4, "
           "layers:1-3)\n"
           "  every:N         every N-th layer, as torchtitan's selective_ac_option=N: layers "
           "N-1, 2N-1, … (0-based)\n"
           "  uniform:N       chunks of N consecutive layers, each checkpointed as one (the "
           "last may be shorter), as Megatron's --recompute-method uniform "
           "--recompute-num-layers N\n"
           "  first:N         the first N layers, each on its own, as Megatron's "
           "--recompute-method block --recompute-num-layers N\n"
           "  module:CLASS    every call of a module of class CLASS (the outermost where they "
           "nest), as FSDP's apply_activation_checkpointing(check_fn=isinstance CLASS) or "
           "Hugging Face's gradient_checkpointing_enable()\n"
           "  selective       only each layer's attention core recomputed, as Megatron's "
           "--recompute-granularity selective: the matmul feeding the softmax through the "
           "matmul after it (or a fused attention op); its q, k, v and output kept\n"
           "  save:OPS        each layer checkpointed, the outputs of OPS saved and the rest "
           "recomputed (torch.utils.checkpoint's MUST_SAVE / PREFER_RECOMPUTE); OPS as PyTorch "
           "names them (save:aten::mm,aten::addmm) or kinds: matmul (mm, addmm, bmm, linear, "
           "…), attention (scaled_dot_product_attention and its kernels)\n"
           "  (selective and save:OPS need the run's ops: recorded by memscope-cli record, or "
           "inferred from a snapshot's C++ frames)\n"
           "  opt-in-bwd      the optimizer step fused into backward; +opt-in-bwd composes "
           "with any of the above\n\n";
}

std::vector<WhatIfPolicy> defaultWhatIfPolicies(const LayerChain& chain) {
    std::vector<WhatIfPolicy> out;
    const int64_t n = static_cast<int64_t>(chain.layers.size());
    std::vector<Policy> base{{Recompute::Block}, {Recompute::Sqrt}};
    for (int k : {2, 4})
        if (k <= n) base.push_back({Recompute::Segments, false, k});
    auto add = [&](const Policy& p) {
        WhatIfPolicy w;
        w.policy = p;
        w.name = policyName(p);
        out.push_back(std::move(w));
    };
    for (const Policy& p : base) add(p);
    add(Policy{Recompute::None, true});
    for (Policy p : base) {
        p.optimizer_in_backward = true;
        add(p);
    }
    return out;
}

}  // namespace memscope
