#pragma once
// What the decoder must remember between buffers, because a release record
// alone cannot be trusted to say how much memory it gives back:
// - the size of every live allocation, by device and address (the reserved
//   curve uses the allocation's size for its release, not the release
//   record's byte count);
// - the current size of every stream-ordered memory pool, by pool address
//   (pool records and cudaMallocAsync records carry the pool's size; the
//   reserved curve follows its changes).
// Thread-safe: CUPTI may deliver buffers on more than one thread.

#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace memscope::cupti {

class AllocationBook {
public:
    void allocated(int16_t device, uint64_t address, uint64_t bytes);
    // The allocation's size, forgotten; nullopt (and counted) when the address
    // was not allocated while we recorded.
    std::optional<uint64_t> released(int16_t device, uint64_t address);

    // The pool's new size; returns the change (new - previous, previous 0 for
    // a pool not seen before).
    int64_t poolResized(uint64_t pool_address, uint64_t new_size);
    void poolDestroyed(uint64_t pool_address);
    std::optional<uint64_t> poolSize(uint64_t pool_address) const;

    uint64_t unknownReleases() const;
    size_t liveAllocations() const;

private:
    struct Key {
        int16_t device;
        uint64_t address;
        bool operator==(const Key&) const = default;
    };
    struct KeyHash {
        size_t operator()(const Key& k) const {
            return std::hash<uint64_t>{}(k.address ^ (uint64_t(uint16_t(k.device)) << 48));
        }
    };
    mutable std::mutex mutex_;
    std::unordered_map<Key, uint64_t, KeyHash> live_;
    std::unordered_map<uint64_t, uint64_t> pools_;
    uint64_t unknown_releases_ = 0;
};

}  // namespace memscope::cupti
