#include "allocation_book.h"

namespace memscope::cupti {

void AllocationBook::allocated(int16_t device, uint64_t address, uint64_t bytes) {
    std::lock_guard lock(mutex_);
    live_.insert_or_assign(Key{device, address}, bytes);
}

std::optional<uint64_t> AllocationBook::released(int16_t device, uint64_t address) {
    std::lock_guard lock(mutex_);
    const auto it = live_.find(Key{device, address});
    if (it == live_.end()) {
        ++unknown_releases_;
        return std::nullopt;
    }
    const uint64_t bytes = it->second;
    live_.erase(it);
    return bytes;
}

int64_t AllocationBook::poolResized(uint64_t pool_address, uint64_t new_size) {
    std::lock_guard lock(mutex_);
    uint64_t& size = pools_[pool_address];
    const int64_t change = int64_t(new_size) - int64_t(size);
    size = new_size;
    return change;
}

void AllocationBook::poolDestroyed(uint64_t pool_address) {
    std::lock_guard lock(mutex_);
    pools_.erase(pool_address);
}

std::optional<uint64_t> AllocationBook::poolSize(uint64_t pool_address) const {
    std::lock_guard lock(mutex_);
    const auto it = pools_.find(pool_address);
    return it == pools_.end() ? std::nullopt : std::optional<uint64_t>(it->second);
}

uint64_t AllocationBook::unknownReleases() const {
    std::lock_guard lock(mutex_);
    return unknown_releases_;
}

size_t AllocationBook::liveAllocations() const {
    std::lock_guard lock(mutex_);
    return live_.size();
}

}  // namespace memscope::cupti
