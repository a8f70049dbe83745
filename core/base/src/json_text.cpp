#include "memscope/base/json_text.h"

#include <cstdio>

#include "memscope/base/text_escape.h"

namespace memscope {

void appendJsonString(std::string& out, std::string_view s) {
    // Always valid UTF-8: an invalid byte from a file becomes U+FFFD.
    std::string valid;
    if (!isValidUtf8(s)) s = valid = validUtf8(s);
    out += '"';
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        // clang-format off
        switch (ch) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            case '\r': out += "\\r"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
                    out += buf;
                } else {
                    out += ch;
                }
        }
        // clang-format on
    }
    out += '"';
}

std::string jsonStringList(const std::vector<std::string>& items, size_t max_bytes) {
    std::string json = "[";
    for (const std::string& a : items) {
        std::string item;
        appendJsonString(item, a);
        if (json.size() + item.size() + 2 > max_bytes) break;
        if (json.size() > 1) json += ",";
        json += item;
    }
    return json + "]";
}

}  // namespace memscope
