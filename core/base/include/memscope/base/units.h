#pragma once
// Byte counts as people read and write them: "1.50 GiB" out, "7.5GiB" or
// "800MB" in. One definition for the CLI's tables, the GUI and the CI gate.

#include <cstdint>
#include <string>
#include <string_view>

#include "memscope/base/result.h"

namespace memscope {

// Nanoseconds to whole microseconds, rounded down / up, also before 1970 and
// without overflow at the ends of int64 (snapshot time_us, JSON reports).
constexpr int64_t nanosToMicrosFloor(int64_t ns) {
    return ns >= 0 ? ns / 1000 : -((-(ns + 1)) / 1000) - 1;
}
constexpr int64_t nanosToMicrosCeil(int64_t ns) {
    return ns > 0 ? (ns - 1) / 1000 + 1 : ns / 1000;
}

// a + b, held at the ends of int64 instead of overflowing (times at the ends
// of hostile traces: "the end plus one", "the start minus a margin").
constexpr int64_t addSaturating(int64_t a, int64_t b) {
    int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

// Binary units, three significant digits: "512 B", "1.50 GiB", "-12.0 MiB", "640 MiB".
std::string formatBytes(int64_t bytes);
// A change of bytes: formatBytes with a '+' before a positive one ("+1.50 GiB").
std::string formatSignedBytes(int64_t bytes);

// Plain bytes ("1048576"), or a number with a unit: B, KB/MB/GB/TB (powers of
// 1000), KiB/MiB/GiB/TiB and K/M/G/T (powers of 1024); case-insensitive, a
// space allowed before the unit. Negative, fractional bytes below one, and
// values past 2^63 are errors naming the text.
Result<int64_t> parseByteSize(std::string_view text);

}  // namespace memscope
