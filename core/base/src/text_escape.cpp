#include "memscope/base/text_escape.h"

#include <cstdint>
#include <cstdio>

namespace memscope {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the well-formed UTF-8 sequence at s[at] and its code point,
// or 0 where none starts there.
size_t sequenceAt(std::string_view s, size_t at, uint32_t& cp) {
    const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
    const unsigned char b0 = byte(at);
    if (b0 < 0x80) {
        cp = b0;
        return 1;
    }
    size_t n = 0;
    uint32_t min = 0;
    if ((b0 & 0xE0) == 0xC0) {
        n = 2, cp = b0 & 0x1Fu, min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
        n = 3, cp = b0 & 0x0Fu, min = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
        n = 4, cp = b0 & 0x07u, min = 0x10000;
    } else {
        return 0;
    }
    if (s.size() - at < n) return 0;
    for (size_t i = 1; i < n; ++i) {
        const unsigned char b = byte(at + i);
        if ((b & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (b & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

}  // namespace

bool isValidUtf8(std::string_view s) {
    for (size_t at = 0; at < s.size();) {
        if (static_cast<unsigned char>(s[at]) < 0x80) {
            ++at;
            continue;
        }
        uint32_t cp = 0;
        const size_t n = sequenceAt(s, at, cp);
        if (n == 0) return false;
        at += n;
    }
    return true;
}

std::string validUtf8(std::string_view s) {
    if (isValidUtf8(s)) return std::string(s);
    std::string out;
    out.reserve(s.size() + 16);
    for (size_t at = 0; at < s.size();) {
        uint32_t cp = 0;
        const size_t n = sequenceAt(s, at, cp);
        if (n == 0) {
            out += kReplacement;
            ++at;
        } else {
            out.append(s.substr(at, n));
            at += n;
        }
    }
    return out;
}

std::string terminalText(std::string_view s, TextLines lines) {
    std::string out;
    out.reserve(s.size());
    for (size_t at = 0; at < s.size();) {
        uint32_t cp = 0;
        const size_t n = sequenceAt(s, at, cp);
        if (n == 0) {
            out += kReplacement;
            ++at;
            continue;
        }
        const bool keep = lines == TextLines::Keep && (cp == '\n' || cp == '\t');
        char buf[16];
        if (!keep && (cp < 0x20 || cp == 0x7F)) {
            std::snprintf(buf, sizeof buf, "\\x%02x", unsigned(cp));
            out += buf;
        } else if ((cp >= 0x80 && cp < 0xA0) || (cp >= 0x202A && cp <= 0x202E) ||
                   (cp >= 0x2066 && cp <= 0x2069)) {
            std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(cp));
            out += buf;
        } else {
            out.append(s.substr(at, n));
        }
        at += n;
    }
    return out;
}

}  // namespace memscope
