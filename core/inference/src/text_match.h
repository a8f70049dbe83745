#pragma once
// Substring tests for classifying frames and phases by their names and files.

#include <cctype>
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
// `part` in lower case; `s` in any case.
inline bool startsWithNoCase(std::string_view s, std::string_view p) {
    if (s.size() < p.size()) return false;
    for (size_t k = 0; k < p.size(); ++k)
        if (std::tolower(static_cast<unsigned char>(s[k])) != p[k]) return false;
    return true;
}
inline bool containsNoCase(std::string_view s, std::string_view part) {
    for (size_t i = 0; i + part.size() <= s.size(); ++i) {
        size_t k = 0;
        while (k < part.size() && std::tolower(static_cast<unsigned char>(s[i + k])) == part[k])
            ++k;
        if (k == part.size()) return true;
    }
    return false;
}

}  // namespace memscope::detail
