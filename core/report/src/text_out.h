#pragma once
// printf into a string: the text reports are built as strings (the CLI
// prints them, tests read them) with the column formats printf spells best.

#include <cstdarg>
#include <cstdio>
#include <string>

namespace memscope {

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
inline void
appendf(std::string& out, const char* format, ...) {
    char small[256];
    va_list args;
    va_start(args, format);
    va_list again;
    va_copy(again, args);
    const int n = std::vsnprintf(small, sizeof small, format, args);
    va_end(args);
    if (n < 0) {
        va_end(again);
        return;
    }
    if (size_t(n) < sizeof small) {
        out.append(small, size_t(n));
    } else {
        const size_t at = out.size();
        out.resize(at + size_t(n) + 1);
        std::vsnprintf(out.data() + at, size_t(n) + 1, format, again);
        out.resize(at + size_t(n));
    }
    va_end(again);
}

}  // namespace memscope
