#include "memscope/model/trace.h"

namespace memscope {

StringTable::StringTable() {
    strings_.emplace_back();
    index_.emplace(strings_.front(), 0);
}

StringTable::StringTable(const StringTable& other) : strings_(other.strings_) {
    rebuildIndex();
}

StringTable& StringTable::operator=(const StringTable& other) {
    if (this != &other) {
        strings_ = other.strings_;
        rebuildIndex();
    }
    return *this;
}

void StringTable::rebuildIndex() {
    // The copied index would view the other table's strings: rebuild over ours.
    index_.clear();
    index_.reserve(strings_.size());
    for (size_t i = 0; i < strings_.size(); ++i) index_.emplace(strings_[i], uint32_t(i));
}

StringId StringTable::intern(std::string_view text) {
    if (auto it = index_.find(text); it != index_.end()) return StringId(it->second);
    const auto id = uint32_t(strings_.size());
    strings_.emplace_back(text);
    index_.emplace(strings_.back(), id);
    return StringId(id);
}

std::string_view StringTable::get(StringId id) const {
    return id.value < strings_.size() ? std::string_view(strings_[id.value]) : std::string_view();
}

void StringTable::reserve(size_t n) {
    index_.reserve(n);
}

}  // namespace memscope
