#include "memscope/base/units.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace memscope {

std::string formatBytes(int64_t bytes) {
    static constexpr std::array<const char*, 6> kUnits = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    // The magnitude as unsigned: -INT64_MIN does not fit int64.
    const uint64_t magnitude = bytes < 0 ? uint64_t(0) - uint64_t(bytes) : uint64_t(bytes);
    const char* sign = bytes < 0 ? "-" : "";
    char buf[48];
    if (magnitude < 1024) {
        std::snprintf(buf, sizeof buf, "%s%llu B", sign,
                      static_cast<unsigned long long>(magnitude));
        return buf;
    }
    double v = double(magnitude);
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < kUnits.size()) {
        v /= 1024.0;
        ++u;
    }
    // Three significant digits; 1023.6 KiB would print as "1024 KiB", so
    // values that round up to 1024 move to the next unit.
    if (v >= 1023.5 && u + 1 < kUnits.size()) {
        v /= 1024.0;
        ++u;
    }
    const int decimals = v < 9.995 ? 2 : (v < 99.95 ? 1 : 0);
    std::snprintf(buf, sizeof buf, "%s%.*f %s", sign, decimals, v, kUnits[u]);
    return buf;
}

namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

Error badSize(std::string_view text, const char* why) {
    return makeError("'" + std::string(text) + "' is not a size: " + why +
                     " (examples: 1073741824, 7.5GiB, 800MB)");
}

}  // namespace

std::string formatSignedBytes(int64_t bytes) {
    return (bytes > 0 ? "+" : "") + formatBytes(bytes);
}

Result<int64_t> parseByteSize(std::string_view text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
        text.remove_prefix(1);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
        text.remove_suffix(1);
    if (text.empty()) return badSize(text, "empty");
    size_t n = 0;
    while (n < text.size() && (std::isdigit(static_cast<unsigned char>(text[n])) || text[n] == '.'))
        ++n;
    if (n == 0) return badSize(text, "it does not start with a number");
    const std::string_view number = text.substr(0, n);
    std::string_view unit = text.substr(n);
    while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);

    double scale = 1;
    const std::string u = lower(unit);
    static constexpr std::array<std::pair<const char*, double>, 14> kUnits = {{
        {"", 1.0},
        {"b", 1.0},
        {"kb", 1e3},
        {"mb", 1e6},
        {"gb", 1e9},
        {"tb", 1e12},
        {"kib", 1024.0},
        {"mib", 1048576.0},
        {"gib", 1073741824.0},
        {"tib", 1099511627776.0},
        {"k", 1024.0},
        {"m", 1048576.0},
        {"g", 1073741824.0},
        {"t", 1099511627776.0},
    }};
    bool known = false;
    for (const auto& [name, factor] : kUnits)
        if (u == name) {
            scale = factor;
            known = true;
        }
    if (!known) return badSize(text, "unknown unit (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)");

    if (number.find('.') == std::string_view::npos && scale == 1) {
        int64_t v = 0;
        const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
        if (ec == std::errc::result_out_of_range) return badSize(text, "too large");
        if (ec != std::errc() || end != number.data() + number.size())
            return badSize(text, "not a number");
        return v;
    }
    double v = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
    if (ec != std::errc() || end != number.data() + number.size())
        return badSize(text, "not a number");
    const double bytes = std::round(v * scale);
    if (!std::isfinite(bytes) || bytes >= 9.2e18) return badSize(text, "too large");
    return int64_t(bytes);
}

}  // namespace memscope
