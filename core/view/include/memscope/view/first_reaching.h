#pragma once
// "The first item at or after position k whose end reaches x", over items in
// start order (the phases of one row of the GUI's phase strip): an implicit
// max tree over their ends, so the query is O(log n) from any position.
// A view zoomed out over 180,000 phases asks it once per painted pixel and
// steps over the phases that would fall under pixels already painted,
// instead of visiting each one.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace memscope {

class FirstReaching {
public:
    FirstReaching() = default;
    explicit FirstReaching(std::span<const int64_t> ends);

    size_t size() const { return n_; }
    // The smallest i >= from with ends[i] >= x; size() when there is none.
    size_t find(size_t from, int64_t x) const;

private:
    size_t n_ = 0;
    size_t leaves_ = 0;          // a power of two >= n_; leaf i is tree_[leaves_ + i]
    std::vector<int64_t> tree_;  // tree_[v] = max of its children; tree_[0] unused
};

}  // namespace memscope
