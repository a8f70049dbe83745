#pragma once
// One-line messages on stderr from inside someone else's process: prefixed,
// written with a single write(2) (no stdio state, no locks), and the ones
// that could repeat are said once.

#include <atomic>

namespace memscope::cupti {

void logLine(const char* format, ...) __attribute__((format(printf, 1, 2)));

// Says it only the first time `flag` is passed.
#define MEMSCOPE_LOG_ONCE(flag, ...)                                         \
    do {                                                                     \
        if (!(flag).exchange(true)) ::memscope::cupti::logLine(__VA_ARGS__); \
    } while (0)

}  // namespace memscope::cupti
