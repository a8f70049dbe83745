#pragma once
// The allocations open at a moment of a trace, by address: what pairs each
// free with its alloc. Open addressing with linear probing in one flat array,
// at most half full, and deletion by backward shift (no tombstones), because
// the pattern is millions of inserts and erases over a few thousand keys
// live at once: the table stays in the L2 cache, where a node-based
// std::unordered_map allocated, freed and missed the cache on every event,
// about a third of a 1 GB snapshot's timeline build.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace memscope {

template <class Value>
class AddressMap {
public:
    // The value stored under `address` (replaced if there was one): a second
    // alloc at a live address replaces the first, as memory_viz does.
    void put(uint64_t address, Value value) {
        if (address == kEmpty) {
            empty_key_ = {true, value};
            return;
        }
        if ((count_ + 1) * 2 > slots_.size()) grow();
        size_t i = home(address);
        while (slots_[i].address != kEmpty) {
            if (slots_[i].address == address) {
                slots_[i].value = value;
                return;
            }
            i = (i + 1) & mask_;
        }
        slots_[i] = {address, value};
        ++count_;
    }

    // Removes `address` and gives its value in `out`; false if it is absent.
    bool take(uint64_t address, Value& out) {
        if (address == kEmpty) {
            if (!empty_key_.first) return false;
            out = empty_key_.second;
            empty_key_.first = false;
            return true;
        }
        if (slots_.empty()) return false;
        size_t i = home(address);
        while (slots_[i].address != address) {
            if (slots_[i].address == kEmpty) return false;
            i = (i + 1) & mask_;
        }
        out = slots_[i].value;
        eraseAt(i);
        return true;
    }

    // The value stored under `address`, or null; valid until the next put.
    Value* find(uint64_t address) {
        if (address == kEmpty) return empty_key_.first ? &empty_key_.second : nullptr;
        if (slots_.empty()) return nullptr;
        for (size_t i = home(address);; i = (i + 1) & mask_) {
            if (slots_[i].address == address) return &slots_[i].value;
            if (slots_[i].address == kEmpty) return nullptr;
        }
    }

    bool contains(uint64_t address) const {
        if (address == kEmpty) return empty_key_.first;
        if (slots_.empty()) return false;
        for (size_t i = home(address);; i = (i + 1) & mask_) {
            if (slots_[i].address == address) return true;
            if (slots_[i].address == kEmpty) return false;
        }
    }

    size_t size() const { return count_ + (empty_key_.first ? 1 : 0); }

    void clear() {
        for (Slot& s : slots_) s.address = kEmpty;
        count_ = 0;
        empty_key_.first = false;
    }

    // f(address, value) for every entry, in no particular order.
    template <class F>
    void forEach(F&& f) const {
        for (const Slot& s : slots_)
            if (s.address != kEmpty) f(s.address, s.value);
        if (empty_key_.first) f(kEmpty, empty_key_.second);
    }

private:
    // No allocation starts at the last byte of the address space; a trace
    // that says one does still pairs, through empty_key_.
    static constexpr uint64_t kEmpty = UINT64_MAX;
    struct Slot {
        uint64_t address = kEmpty;
        Value value{};
    };

    // Addresses are multiples of 512, whose low bits carry nothing: a full
    // 64-bit mix spreads them all over the high bits the table uses. The key
    // is salted with a per-process seed, so that no file can be crafted whose
    // addresses all land on one slot (quadratic probing time).
    size_t home(uint64_t address) const {
        uint64_t x = address ^ seed_;
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdull;
        x ^= x >> 33;
        x *= 0xc4ceb9fe1a85ec53ull;
        x ^= x >> 33;
        return static_cast<size_t>(x >> shift_);
    }

    static uint64_t processSeed() {
        static const uint64_t seed = [] {
            static int anchor;  // placed by ASLR
            const auto now =
                static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
            return (reinterpret_cast<uintptr_t>(&anchor) * 0x9E3779B97F4A7C15ull) ^ now;
        }();
        return seed;
    }

    void grow() {
        std::vector<Slot> old = std::move(slots_);
        const size_t capacity = old.empty() ? 64 : old.size() * 2;
        slots_.assign(capacity, Slot{});
        mask_ = capacity - 1;
        shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(capacity));
        count_ = 0;
        for (const Slot& s : old)
            if (s.address != kEmpty) put(s.address, s.value);
    }

    // Backward shift: moves later entries of the probe run into the hole
    // when that brings them no further from their home slot.
    void eraseAt(size_t hole) {
        for (size_t j = (hole + 1) & mask_; slots_[j].address != kEmpty; j = (j + 1) & mask_) {
            const size_t want = home(slots_[j].address);
            // Whether `want` lies cyclically in (hole, j]: then j's entry stays.
            const bool stays = hole <= j ? (hole < want && want <= j) : (hole < want || want <= j);
            if (stays) continue;
            slots_[hole] = slots_[j];
            hole = j;
        }
        slots_[hole].address = kEmpty;
        --count_;
    }

    std::vector<Slot> slots_;
    size_t mask_ = 0;
    unsigned shift_ = 64;
    size_t count_ = 0;
    uint64_t seed_ = processSeed();
    std::pair<bool, Value> empty_key_{false, Value{}};
};

}  // namespace memscope
