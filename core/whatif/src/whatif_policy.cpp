// whatif's policy vocabulary: memscope-train's, plus layers:LIST.

#include <algorithm>
#include <charconv>

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

std::string layerListName(const std::vector<int64_t>& layers) {
    std::string s = "layers:";
    for (size_t i = 0; i < layers.size(); ++i) s += (i ? "," : "") + std::to_string(layers[i]);
    return s;
}

bool isLayerListItem(std::string_view item) {
    const std::string_view head = item.substr(0, item.find('+'));
    return !head.empty() && std::all_of(head.begin(), head.end(),
                                        [](char c) { return (c >= '0' && c <= '9') || c == '-'; });
}

}  // namespace

Result<WhatIfPolicy> parseWhatIfPolicy(std::string_view text) {
    WhatIfPolicy w;
    if (text.rfind("layers:", 0) == 0) {
        const size_t plus = text.find('+');
        const std::string_view list = text.substr(7, plus == text.npos ? text.npos : plus - 7);
        auto layers = parseLayerList(list, text);
        if (!layers) return layers.error();
        if (plus != text.npos) {
            auto rest = parsePolicy(text.substr(plus + 1));
            if (!rest) return rest.error();
            if (rest->recompute != Recompute::None || !rest->optimizer_in_backward)
                return makeError("policy '" + std::string(text) +
                                 "': layers:LIST composes only with +opt-in-bwd");
            w.policy.optimizer_in_backward = true;
        }
        w.policy.recompute = Recompute::Block;  // each listed layer is its own region
        w.layers = std::move(*layers);
        w.explicit_layers = true;
        w.name = layerListName(w.layers) + (w.policy.optimizer_in_backward ? "+opt-in-bwd" : "");
        return w;
    }
    auto policy = parsePolicy(text);
    if (!policy)
        return makeError(policy.message() + "; whatif also takes layers:LIST (layer indices)");
    w.policy = *policy;
    w.name = policyName(w.policy);
    return w;
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
            const bool continues =
                !items.empty() &&
                ((items.back().rfind("layers:", 0) == 0 &&
                  items.back().find('+') == std::string::npos && isLayerListItem(item)) ||
                 (items.back().rfind("save:", 0) == 0 &&
                  items.back().find('+') == std::string::npos && continuesSaveList(item)));
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
    return "block, sqrt, segments:K, layers:LIST (layer indices, e.g. layers:0,2,4 or "
           "layers:1-3), selective, save:OPS, opt-in-bwd, or a '+' composition such as "
           "block+opt-in-bwd";
}

std::vector<WhatIfPolicy> defaultWhatIfPolicies(const LayerChain& chain) {
    std::vector<WhatIfPolicy> out;
    const int64_t n = static_cast<int64_t>(chain.layers.size());
    std::vector<Policy> base{{Recompute::Block}, {Recompute::Sqrt}};
    for (int k : {2, 4})
        if (k <= n) base.push_back({Recompute::Segments, false, k});
    auto add = [&](Policy p) {
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
