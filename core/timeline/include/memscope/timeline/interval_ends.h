#pragma once
// Which of a run of intervals are still live at x, found in time proportional
// to the ones found: the latest end of every group of 8, 64, 512, ...
// consecutive intervals (in allocation order): whole groups that ended are
// skipped. The
// by-allocation layout uses it to pick the few long-lived allocations out of
// the many short ones that began within a pixel column.

#include <cstdint>
#include <vector>

#include "memscope/timeline/timeline.h"

namespace memscope {

class IntervalEnds {
public:
    static IntervalEnds build(const DeviceTimeline& timeline);

    // Appends to `out`, ascending, every i in [begin, end) whose interval has
    // not ended by x (end > x, or never freed). The caller makes sure they
    // all began by x. Returns the groups and intervals looked at.
    size_t collectLive(const DeviceTimeline& timeline, size_t begin, size_t end, int64_t x,
                       std::vector<uint32_t>& out) const;

    // effectiveEnd of interval i (i below the count indexed).
    int64_t end(size_t i) const { return ends_[i]; }
    size_t size() const { return count_; }
    size_t memoryBytes() const;

private:
    static constexpr size_t kFan = 8;

    size_t count_ = 0;  // intervals indexed
    // effectiveEnd of each interval: 8 bytes a look instead of a whole
    // interval's cache line.
    std::vector<int64_t> ends_;
    // levels_[k][j]: the latest end of intervals [j * 8^(k+1), (j + 1) * 8^(k+1)),
    // INT64_MAX when one of them is never freed.
    std::vector<std::vector<int64_t>> levels_;
};

// The end that decides liveness: INT64_MAX for an interval never freed.
inline int64_t effectiveEnd(const AllocationInterval& a) {
    return a.free_event == kNoEvent ? INT64_MAX : a.end;
}

}  // namespace memscope
