#pragma once
// A search forward from a known place in a sorted array, for sweeps whose
// next answer is usually a few places on: doubling strides until one passes
// the target, then a binary search inside the last stride. A target k places
// on costs about 2 log2(k) looks instead of log2(n) cache misses.

#include <cstddef>

namespace memscope {

// The first i in [from, size) with beyond(i), size when none; beyond must be
// false then true over [from, size) (as `values[i] >= x` is on ascending
// values).
template <class Beyond>
size_t gallopTo(size_t from, size_t size, Beyond beyond) {
    if (from >= size || beyond(from)) return from;
    size_t below = from;  // not beyond
    for (size_t stride = 1;; stride *= 2) {
        const size_t probe = size - below > stride ? below + stride : size;
        if (probe == size || beyond(probe)) {
            size_t lo = below + 1, hi = probe;  // the answer is in [lo, hi]
            while (lo < hi) {
                const size_t mid = lo + (hi - lo) / 2;
                if (beyond(mid))
                    hi = mid;
                else
                    lo = mid + 1;
            }
            return lo;
        }
        below = probe;
    }
}

}  // namespace memscope
