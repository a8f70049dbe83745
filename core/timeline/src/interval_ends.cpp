#include "memscope/timeline/interval_ends.h"

#include <algorithm>

namespace memscope {

IntervalEnds IntervalEnds::build(const DeviceTimeline& tl) {
    IntervalEnds out;
    out.count_ = tl.intervals.size();
    out.ends_.reserve(tl.intervals.size());
    for (const AllocationInterval& a : tl.intervals) out.ends_.push_back(effectiveEnd(a));
    std::vector<int64_t> below = out.ends_;  // the level under the one being built
    // Levels up to one of at most kFan groups.
    while (below.size() > 1 || out.levels_.empty()) {
        std::vector<int64_t> level((below.size() + kFan - 1) / kFan, INT64_MIN);
        for (size_t i = 0; i < below.size(); ++i)
            level[i / kFan] = std::max(level[i / kFan], below[i]);
        out.levels_.push_back(level);
        below = std::move(level);
        if (below.size() <= kFan) break;
    }
    return out;
}

size_t IntervalEnds::collectLive(const DeviceTimeline& tl, size_t begin, size_t end, int64_t x,
                                 std::vector<uint32_t>& out) const {
    // An index built for another timeline answers nothing rather than wrongly.
    if (levels_.empty() || count_ != tl.intervals.size()) return 0;
    end = std::min(end, count_);
    size_t work = 0;
    for (size_t i = begin; i < end;) {
        // Skip the largest group starting at i, inside the range, that ended
        // by x. A group that did not is looked into: the groups above it
        // contain it, so they did not end either.
        size_t skip = 0, span = kFan;
        for (size_t k = 0; k < levels_.size() && i % span == 0 && i + span <= end; ++k) {
            ++work;
            if (levels_[k][i / span] > x) break;
            skip = span;
            span *= kFan;
        }
        if (skip > 0) {
            i += skip;
            continue;
        }
        ++work;
        if (ends_[i] > x) out.push_back(uint32_t(i));
        ++i;
    }
    return work;
}

size_t IntervalEnds::memoryBytes() const {
    size_t bytes = ends_.capacity() * sizeof(int64_t);
    for (const auto& l : levels_) bytes += l.capacity() * sizeof(int64_t);
    return bytes;
}

}  // namespace memscope
