#include "memo_run_cache.h"

#include <cstring>

namespace memscope::pickle {
namespace {

uint64_t load64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v * 0x9e3779b97f4a7c15ull;
    h = (h << 27 | h >> 37) * 0xff51afd7ed558ccdull;
    return h;
}

}  // namespace

uint64_t MemoRunCache::hashPrefix(const uint8_t* run) {
    static_assert(kPrefix == 16);
    const uint64_t h = mix(mix(kPrefix, load64(run)), load64(run + 8));
    return h ^ (h >> 29);
}

MemoRunCache::Hit MemoRunCache::find(const uint8_t* at, size_t available, uint64_t prefix_hash,
                                     uint8_t terminator) {
    if (!enabled_) return {};
    ++lookups_;
    if (lookups_ == kTrialLookups && hits_ * kMinHitShare < lookups_) {
        clear();
        enabled_ = false;
        return {};
    }
    if (slots_.empty()) return {};
    const size_t mask = slots_.size() - 1;
    for (size_t i = prefix_hash & mask;; i = (i + 1) & mask) {
        const Slot& s = slots_[i];
        if (s.length == 0) return {};
        if (s.hash == prefix_hash && s.length < available && at[s.length] == terminator &&
            std::memcmp(keys_.data() + s.offset, at, s.length) == 0) {
            ++hits_;
            return {&s.replacement, s.length, s.values};
        }
    }
}

void MemoRunCache::insert(std::span<const uint8_t> run, uint64_t values, uint64_t prefix_hash,
                          const Value& replacement) {
    if (!enabled_ || run.size() < kPrefix || run.size() > UINT32_MAX || values > run.size() ||
        keys_.size() + run.size() > kMaxBytes)
        return;
    if ((entries_ + 1) * 2 > slots_.size()) grow();
    const size_t mask = slots_.size() - 1;
    size_t i = prefix_hash & mask;
    while (slots_[i].length != 0) {
        const Slot& s = slots_[i];
        if (s.hash == prefix_hash && s.length == run.size() &&
            std::memcmp(keys_.data() + s.offset, run.data(), run.size()) == 0)
            return;  // already there (the first replacement stays)
        i = (i + 1) & mask;
    }
    slots_[i] =
        Slot{prefix_hash, keys_.size(), uint32_t(run.size()), uint32_t(values), replacement};
    keys_.insert(keys_.end(), run.begin(), run.end());
    ++entries_;
}

void MemoRunCache::clear() {
    std::vector<Slot>().swap(slots_);
    std::vector<uint8_t>().swap(keys_);
    entries_ = 0;
}

void MemoRunCache::grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 1024 : old.size() * 2, Slot{});
    const size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
        if (s.length == 0) continue;
        size_t i = s.hash & mask;
        while (slots_[i].length != 0) i = (i + 1) & mask;
        slots_[i] = s;
    }
}

}  // namespace memscope::pickle
