#pragma once
// Figures in saturating arithmetic (private to core): a hostile trace's sizes
// (up to 2^64 - 1) must give a clamped figure, never signed overflow.

#include <cstdint>

namespace memscope::detail {

inline int64_t clampSize(uint64_t size) {
    return size > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(size);
}
inline void addSat(int64_t& acc, int64_t v) {
    if (__builtin_add_overflow(acc, v, &acc)) acc = v > 0 ? INT64_MAX : INT64_MIN;
}
inline void subSat(int64_t& acc, int64_t v) {
    if (__builtin_sub_overflow(acc, v, &acc)) acc = v > 0 ? INT64_MIN : INT64_MAX;
}

}  // namespace memscope::detail
