#include "memscope/timeline/event_index_list.h"

#include <algorithm>

namespace memscope {

std::vector<uint64_t> EventIndexList::toVector() const {
    return std::vector<uint64_t>(begin(), end());
}

bool EventIndexList::within(size_t events) const {
    if (isAll()) return size_ <= events;
    return std::all_of(indexes_.begin(), indexes_.end(), [&](uint64_t i) { return i < events; });
}

bool operator==(const EventIndexList& a, const EventIndexList& b) {
    if (a.size() != b.size()) return false;
    if (a.isAll() && b.isAll()) return true;
    return std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace memscope
