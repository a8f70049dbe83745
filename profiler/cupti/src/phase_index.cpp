#include "phase_index.h"

#include <algorithm>
#include <limits>

namespace memscope::cupti {
namespace {
constexpr int64_t kOpen = std::numeric_limits<int64_t>::max();
constexpr size_t kMaxScan = 512;
}  // namespace

void PhaseIndex::open(PhaseId id, int64_t start) {
    std::lock_guard lock(mutex_);
    // Keep the order by start even when two threads race: insert from the back.
    auto it = entries_.end();
    while (it != entries_.begin() && std::prev(it)->start > start) --it;
    entries_.insert(it, Entry{start, kOpen, id});
    if (++opens_since_prune_ >= kPruneEvery) {
        opens_since_prune_ = 0;
        pruneLocked(entries_.back().start);
    }
}

void PhaseIndex::pruneLocked(int64_t newest_start) {
    if (newest_start > kHorizonNs) {
        const int64_t horizon = newest_start - kHorizonNs;
        std::erase_if(entries_, [horizon](const Entry& e) { return e.end < horizon; });
    }
    if (entries_.size() <= kMaxEntries) return;
    // Oldest closed first, down to 3/4 of the bound so that this is rare.
    size_t excess = entries_.size() - kMaxEntries * 3 / 4;
    std::erase_if(entries_, [&excess](const Entry& e) {
        if (excess == 0 || e.end == kOpen) return false;
        --excess;
        return true;
    });
}

void PhaseIndex::close(PhaseId id, int64_t end) {
    std::lock_guard lock(mutex_);
    // The phase closed is almost always among the newest.
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
        if (it->id == id) {
            it->end = end;
            return;
        }
    }
}

PhaseId PhaseIndex::innermostAt(int64_t time) const {
    std::lock_guard lock(mutex_);
    auto it = std::upper_bound(entries_.begin(), entries_.end(), time,
                               [](int64_t t, const Entry& e) { return t < e.start; });
    for (size_t scanned = 0; it != entries_.begin() && scanned < kMaxScan; ++scanned) {
        --it;
        if (time < it->end) return it->id;
    }
    return PhaseId{};
}

void PhaseIndex::forgetBefore(int64_t horizon) {
    std::lock_guard lock(mutex_);
    // erase_if keeps the order by start; an old phase still open (a "train"
    // range around everything) stays, the closed ranges inside it go.
    std::erase_if(entries_, [horizon](const Entry& e) { return e.end < horizon; });
}

size_t PhaseIndex::size() const {
    std::lock_guard lock(mutex_);
    return entries_.size();
}

}  // namespace memscope::cupti
