#pragma once
// What a string of the input means (a trace entry's key, its action), by
// where the string is. CPython memoizes every string it writes once, so a
// snapshot's millions of "action", "time_us", "alloc" are each one place in
// the input: the same offset and length are the same bytes. A hit here is
// one compare of two integers, where each key was compared with up to ten
// names (37 M keys in a 1 GB snapshot).
//
// A miss (a string first seen, or a writer that does not memoize)
// classifies it and takes a slot, so the cost is bounded by the
// classification it replaces.

#include <array>
#include <cstdint>
#include <string_view>

#include "pickle_value.h"

namespace memscope::pickle {

template <typename Class, Class (*classify)(std::string_view)>
class StringClassCache {
public:
    // `text` is what `v` (a Str) spells in the input.
    Class of(const Value& v, std::string_view text) {
        const size_t home = slotOf(v.bits);
        for (size_t p = 0; p < kProbes; ++p) {
            const Slot& s = slots_[(home + p) & (kSlots - 1)];
            if (s.used && s.bits == v.bits && s.length == v.aux) return s.value;
        }
        // A miss takes the first free slot of the window, else the home one.
        size_t at = home;
        for (size_t p = 0; p < kProbes; ++p)
            if (!slots_[(home + p) & (kSlots - 1)].used) {
                at = (home + p) & (kSlots - 1);
                break;
            }
        slots_[at] = Slot{v.bits, v.aux, classify(text), true};
        return slots_[at].value;
    }

private:
    // A dozen keys or actions in 256 slots, 8 probed: strings evict each
    // other (every entry missing twice) only when more than eight want the
    // same eight slots, which none of 1,000 random sets of ten did.
    static constexpr unsigned kBits = 8;
    static constexpr size_t kSlots = size_t(1) << kBits;
    static constexpr size_t kProbes = 8;
    static size_t slotOf(uint64_t offset) {
        return size_t((offset * 0x9e3779b97f4a7c15ull) >> (64 - kBits));
    }
    struct Slot {
        uint64_t bits = 0;
        uint32_t length = 0;
        Class value{};
        bool used = false;
    };
    std::array<Slot, kSlots> slots_{};
};

}  // namespace memscope::pickle
