#pragma once
// A flat hash table from a live allocation's address to its ledger entry:
// open addressing with linear probing and backward-shift deletion, so that
// inserting and erasing (once per recorded allocation and free) allocates
// nothing once the table has grown to the run's live set. std::unordered_map
// allocates a node per insert, which at ~1,000 tensors per millisecond of
// compute showed up in the recording overhead.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace memscope::trainer {

template <typename Value>
class AddressTable {
public:
    AddressTable() { slots_.resize(kInitialCapacity); }

    // The entry for `address`; 0 marks an empty slot, so it is never a key.
    Value* find(uint64_t address) {
        if (address == 0) return nullptr;
        for (size_t i = home(address);; i = next(i)) {
            Slot& s = slots_[i];
            if (s.address == address) return &s.value;
            if (s.address == 0) return nullptr;
        }
    }
    // Inserts or replaces; address 0 is ignored.
    void put(uint64_t address, const Value& value) {
        if (address == 0) return;
        if ((size_ + 1) * 4 > slots_.size() * 3) grow();
        for (size_t i = home(address);; i = next(i)) {
            Slot& s = slots_[i];
            if (s.address == address) {
                s.value = value;
                return;
            }
            if (s.address == 0) {
                s = Slot{address, value};
                ++size_;
                return;
            }
        }
    }
    void erase(uint64_t address) {
        if (address == 0) return;
        size_t i = home(address);
        while (slots_[i].address != address) {
            if (slots_[i].address == 0) return;
            i = next(i);
        }
        // Backward shift: move later entries of the probe run into the hole
        // when their home position allows it, so lookups never need tombstones.
        for (size_t j = next(i);; j = next(j)) {
            if (slots_[j].address == 0) break;
            const size_t h = home(slots_[j].address);
            const bool movable = i <= j ? (h <= i || h > j) : (h <= i && h > j);
            if (movable) {
                slots_[i] = slots_[j];
                i = j;
            }
        }
        slots_[i] = Slot{};
        --size_;
    }
    size_t size() const { return size_; }

    // Calls f(address, value&) for every entry.
    template <typename F>
    void forEach(F&& f) {
        for (Slot& s : slots_)
            if (s.address != 0) f(s.address, s.value);
    }

private:
    static constexpr size_t kInitialCapacity = 1024;  // a power of two
    struct Slot {
        uint64_t address = 0;
        Value value{};
    };
    size_t home(uint64_t address) const {
        // Allocations are aligned: mix the bits so neighbours spread out.
        uint64_t x = address * 0x9E3779B97F4A7C15ull;
        return static_cast<size_t>(x >> (64 - std::countr_zero(slots_.size()))) &
               (slots_.size() - 1);
    }
    size_t next(size_t i) const { return (i + 1) & (slots_.size() - 1); }
    void grow() {
        std::vector<Slot> old(slots_.size() * 2);
        old.swap(slots_);
        size_ = 0;
        for (const Slot& s : old)
            if (s.address != 0) put(s.address, s.value);
    }

    std::vector<Slot> slots_;
    size_t size_ = 0;
};

}  // namespace memscope::trainer
