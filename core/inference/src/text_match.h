#pragma once
// Substring tests for classifying frames by their names and files.

#include <string_view>

namespace memscope::detail {

inline bool contains(std::string_view s, std::string_view part) {
    return s.find(part) != std::string_view::npos;
}
inline bool startsWith(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}
inline bool endsWith(std::string_view s, std::string_view p) {
    return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

}  // namespace memscope::detail
