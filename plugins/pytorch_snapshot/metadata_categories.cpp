#include "metadata_categories.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace memscope::pytorch_snapshot {
namespace {

// Lower case, spaces and dashes as underscores, trimmed: "Optimizer State"
// and "optimizer-state" are "optimizer_state".
std::string normalized(std::string_view text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
        text.remove_prefix(1);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
        text.remove_suffix(1);
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        out += c == ' ' || c == '-' ? '_' : char(std::tolower(u));
    }
    return out;
}

std::optional<Category> fromName(std::string_view text) {
    if (text.size() > 64) return std::nullopt;
    static const std::array<std::pair<std::string_view, Category>, 20> kNames = {{
        {"parameter", Category::Parameter},
        {"parameters", Category::Parameter},
        {"param", Category::Parameter},
        {"params", Category::Parameter},
        {"weights", Category::Parameter},
        {"buffer", Category::Parameter},
        {"buffers", Category::Parameter},
        {"gradient", Category::Gradient},
        {"gradients", Category::Gradient},
        {"grad", Category::Gradient},
        {"grads", Category::Gradient},
        {"optimizer_state", Category::OptimizerState},
        {"optimizer_states", Category::OptimizerState},
        {"optim_state", Category::OptimizerState},
        {"activation", Category::Activation},
        {"activations", Category::Activation},
        {"input", Category::Input},
        {"inputs", Category::Input},
        {"temporary", Category::Temporary},
        {"autograd_detail", Category::AutogradDetail},
    }};
    const std::string name = normalized(text);
    for (const auto& [alias, category] : kNames)
        if (name == alias) return category;
    return std::nullopt;
}

}  // namespace

std::optional<Category> categoryFromMetadata(std::string_view text) {
    std::string_view trimmed = text;
    while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.front())))
        trimmed.remove_prefix(1);
    if (trimmed.empty() || trimmed.front() != '{') return fromName(trimmed);
    // A dict given to _set_memory_metadata, as compact JSON: its "category".
    const nlohmann::json doc = nlohmann::json::parse(trimmed, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) return std::nullopt;
    for (const char* key : {"category", "memscope_category"}) {
        const auto it = doc.find(key);
        if (it != doc.end() && it->is_string()) return fromName(it->get<std::string>());
    }
    return std::nullopt;
}

uint64_t labelFromMetadata(Trace& trace) {
    // The metadata attribute's key is one interned string; others are skipped
    // by id after the first look.
    std::unordered_map<uint32_t, bool> is_metadata;
    struct Label {
        uint64_t event;
        Category category;
    };
    std::vector<Label> annotations;  // entries without an allocation of their own
    uint64_t labelled = 0;
    for (const EventAttribute& a : trace.attributes) {
        auto [it, fresh] = is_metadata.try_emplace(a.key.value, false);
        if (fresh) it->second = trace.string(a.key) == "user_metadata";
        if (!it->second || a.event >= trace.events.size()) continue;
        const std::optional<Category> category = categoryFromMetadata(trace.string(a.value));
        if (!category) continue;
        Event& e = trace.events[a.event];
        if (e.kind == EventKind::Alloc && e.category == Category::Unknown) {
            e.category = *category;
            ++labelled;
        } else if (e.kind == EventKind::Marker) {
            annotations.push_back({a.event, *category});
        }
    }
    if (annotations.empty()) return labelled;
    std::sort(annotations.begin(), annotations.end(),
              [](const Label& a, const Label& b) { return a.event < b.event; });
    // An annotation labels the allocation live at its address when it comes.
    std::unordered_map<uint64_t, uint64_t> live;  // (device, address) hashed -> alloc event
    auto key = [](const Event& e) { return e.address ^ (uint64_t(uint16_t(e.device)) << 48); };
    size_t next = 0;
    for (uint64_t i = 0; i < trace.events.size() && next < annotations.size(); ++i) {
        const Event& e = trace.events[i];
        if (e.kind == EventKind::Alloc) live[key(e)] = i;
        if (e.kind == EventKind::FreeCompleted) live.erase(key(e));
        for (; next < annotations.size() && annotations[next].event == i; ++next) {
            const auto it = live.find(key(e));
            if (it == live.end()) continue;
            Event& alloc = trace.events[it->second];
            if (alloc.category != Category::Unknown) continue;
            alloc.category = annotations[next].category;
            ++labelled;
        }
    }
    return labelled;
}

}  // namespace memscope::pytorch_snapshot
