#include "log.h"

#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>

namespace memscope::cupti {

void logLine(const char* format, ...) {
    char line[512] = "memscope: ";
    const size_t prefix = sizeof("memscope: ") - 1;
    va_list args;
    va_start(args, format);
    int n = std::vsnprintf(line + prefix, sizeof(line) - prefix - 1, format, args);
    va_end(args);
    if (n < 0) return;
    size_t len = prefix + std::min<size_t>(size_t(n), sizeof(line) - prefix - 2);
    line[len++] = '\n';
    // One write so that lines from several processes (ranks) do not interleave.
    [[maybe_unused]] ssize_t ignored = ::write(STDERR_FILENO, line, len);
}

}  // namespace memscope::cupti
