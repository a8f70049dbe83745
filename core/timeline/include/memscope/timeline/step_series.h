#pragma once
// A step function sampled at change points (x ascending), and the one tested
// level-of-detail reduction every view draws from.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace memscope {

struct SeriesPoint {
    int64_t x = 0;
    int64_t y = 0;
    friend bool operator==(const SeriesPoint&, const SeriesPoint&) = default;
};

// y holds from x[i] until x[i+1]. Before the first point the value is `initial`.
class StepSeries {
public:
    int64_t initial = 0;

    void reserve(size_t n);
    // The reserved room not appended to yet, for a PageWarmer.
    void unfilled(std::vector<std::span<const std::byte>>& out) const;
    void append(int64_t x, int64_t y);  // x must not decrease
    // Adds `by` to `initial` and every y, saturating; before finalize().
    void shiftBefore(int64_t by);
    // Call once after the last append: builds the min/max pyramid.
    void finalize();

    size_t size() const { return x_.size(); }
    bool empty() const { return x_.empty(); }
    std::span<const int64_t> xs() const { return x_; }
    std::span<const int64_t> ys() const { return y_; }

    // The value in force at x (the last point with point.x <= x).
    int64_t valueAt(int64_t x) const;
    // Index of the last point with point.x <= x, or -1.
    int64_t indexAt(int64_t x) const;

    // At most maxPoints points (maxPoints >= 4) describing the series over
    // [x0, x1]: the value in force at x0, then per bucket the min and max in the
    // order they occur, then the value at x1. Costs O(maxPoints * log n) through
    // the pyramid, independent of how many points fall in the range.
    std::vector<SeriesPoint> levelOfDetail(int64_t x0, int64_t x1, size_t maxPoints) const;

    // For each cell [edges[k], edges[k+1]) (edges ascending), the highest
    // value in force in it and its moment: the cell's start when nothing in
    // the cell rises above the value in force there, else the earliest point
    // holding the maximum. A cell's answer depends on its edges alone, never
    // on its neighbours. O(cells x log n) through the pyramid.
    std::vector<SeriesPoint> cellMaxima(std::span<const int64_t> edges) const;

    size_t memoryBytes() const;

private:
    struct MinMax {
        int64_t min;
        int64_t max;
        uint32_t min_at;  // index of the point holding min / max within the series
        uint32_t max_at;
    };
    MinMax rangeMinMax(size_t begin, size_t end) const;  // [begin, end), non-empty

    std::vector<int64_t> x_;
    std::vector<int64_t> y_;
    // levels_[k] summarizes blocks of kLeaf * kFan^k points.
    std::vector<std::vector<MinMax>> levels_;
};

}  // namespace memscope
