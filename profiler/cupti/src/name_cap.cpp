#include "name_cap.h"

#include <functional>

namespace memscope::cupti {

std::string_view NameCap::prefixClass(std::string_view name) {
    const size_t cut = name.find_first_of(",(");
    if (cut == std::string_view::npos) return {};
    std::string_view prefix = name.substr(0, cut);
    while (!prefix.empty() && (prefix.back() == ' ' || prefix.back() == '\t'))
        prefix.remove_suffix(1);
    return prefix;
}

NameCap::Admitted NameCap::admit(std::string_view name) {
    const uint64_t hash = std::hash<std::string_view>{}(name);
    std::lock_guard lock(mutex_);
    // A hash collision only lets one more distinct name through: harmless.
    if (names_.count(hash) || names_.size() < max_names_) {
        names_.insert(hash);
        return Admitted{name};
    }
    Admitted out;
    out.replaced = true;
    out.first_cap = replaced_.fetch_add(1, std::memory_order_relaxed) == 0;
    out.name = kCapReachedName;
    if (const std::string_view prefix = prefixClass(name); !prefix.empty()) {
        const uint64_t class_hash = std::hash<std::string_view>{}(prefix);
        if (names_.count(class_hash) || classes_.count(class_hash) ||
            classes_.size() < max_classes_) {
            classes_.insert(class_hash);
            out.name = prefix;
        }
    }
    return out;
}

}  // namespace memscope::cupti
