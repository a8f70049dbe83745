#include "memscope/view/first_reaching.h"

#include <algorithm>
#include <limits>

namespace memscope {

namespace {
constexpr int64_t kNone = std::numeric_limits<int64_t>::min();  // padding: reaches nothing
}

FirstReaching::FirstReaching(std::span<const int64_t> ends) : n_(ends.size()) {
    leaves_ = 1;
    while (leaves_ < n_) leaves_ *= 2;
    tree_.assign(2 * leaves_, kNone);
    std::copy(ends.begin(), ends.end(), tree_.begin() + ptrdiff_t(leaves_));
    for (size_t v = leaves_ - 1; v >= 1; --v) tree_[v] = std::max(tree_[2 * v], tree_[2 * v + 1]);
}

size_t FirstReaching::find(size_t from, int64_t x) const {
    if (from >= n_) return n_;
    size_t v = leaves_ + from;
    if (tree_[v] < x) {
        // Up while v is a right child or its right sibling falls short, then
        // across to that sibling: the leftmost subtree right of `from` that
        // holds a reaching end.
        for (;;) {
            while (v & 1) {
                v >>= 1;
                if (v <= 1) return n_;  // came up the root's right edge
            }
            ++v;
            if (tree_[v] >= x) break;
        }
        // Down to its leftmost reaching leaf (padding never reaches).
        while (v < leaves_) {
            v *= 2;
            if (tree_[v] < x) ++v;
        }
    }
    return v - leaves_;
}

}  // namespace memscope
