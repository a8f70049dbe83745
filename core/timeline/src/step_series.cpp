#include "memscope/timeline/step_series.h"

#include <algorithm>

#include "memscope/base/gallop.h"
#include "memscope/base/page_warmer.h"
#include "saturating.h"

namespace memscope {
namespace {

// Leaf blocks of 32 points, each level 8 times coarser: a range query touches
// at most 32 + 2 * 8 * levels entries.
constexpr size_t kLeaf = 32;
constexpr size_t kFan = 8;

}  // namespace

void StepSeries::reserve(size_t n) {
    x_.reserve(n);
    y_.reserve(n);
}

void StepSeries::unfilled(std::vector<std::span<const std::byte>>& out) const {
    out.push_back(PageWarmer::unfilled(x_, x_.capacity()));
    out.push_back(PageWarmer::unfilled(y_, y_.capacity()));
}

void StepSeries::shiftBefore(int64_t by) {
    if (by == 0) return;
    detail::addSat(initial, by);
    for (int64_t& y : y_) detail::addSat(y, by);
}

void StepSeries::append(int64_t x, int64_t y) {
    x_.push_back(x);
    y_.push_back(y);
}

void StepSeries::finalize() {
    levels_.clear();
    if (x_.size() <= kLeaf) return;
    std::vector<MinMax> level((x_.size() + kLeaf - 1) / kLeaf);
    for (size_t b = 0; b < level.size(); ++b) {
        const size_t begin = b * kLeaf;
        const size_t end = std::min(begin + kLeaf, x_.size());
        MinMax m{y_[begin], y_[begin], uint32_t(begin), uint32_t(begin)};
        for (size_t i = begin + 1; i < end; ++i) {
            if (y_[i] < m.min) m.min = y_[i], m.min_at = uint32_t(i);
            if (y_[i] > m.max) m.max = y_[i], m.max_at = uint32_t(i);
        }
        level[b] = m;
    }
    levels_.push_back(std::move(level));
    while (levels_.back().size() > 1) {
        const auto& below = levels_.back();
        std::vector<MinMax> up((below.size() + kFan - 1) / kFan);
        for (size_t b = 0; b < up.size(); ++b) {
            MinMax m = below[b * kFan];
            for (size_t i = b * kFan + 1; i < std::min((b + 1) * kFan, below.size()); ++i) {
                if (below[i].min < m.min) m.min = below[i].min, m.min_at = below[i].min_at;
                if (below[i].max > m.max) m.max = below[i].max, m.max_at = below[i].max_at;
            }
            up[b] = m;
        }
        levels_.push_back(std::move(up));
    }
}

int64_t StepSeries::indexAt(int64_t x) const {
    const auto it = std::upper_bound(x_.begin(), x_.end(), x);
    return int64_t(it - x_.begin()) - 1;
}

int64_t StepSeries::valueAt(int64_t x) const {
    const int64_t i = indexAt(x);
    return i < 0 ? initial : y_[size_t(i)];
}

StepSeries::MinMax StepSeries::rangeMinMax(size_t begin, size_t end) const {
    MinMax m{y_[begin], y_[begin], uint32_t(begin), uint32_t(begin)};
    auto takePoint = [&](size_t i) {
        if (y_[i] < m.min) m.min = y_[i], m.min_at = uint32_t(i);
        if (y_[i] > m.max) m.max = y_[i], m.max_at = uint32_t(i);
    };
    auto takeBlock = [&](const MinMax& b) {
        if (b.min < m.min) m.min = b.min, m.min_at = b.min_at;
        if (b.max > m.max) m.max = b.max, m.max_at = b.max_at;
    };
    size_t i = begin;
    while (i < end && (i % kLeaf != 0 || levels_.empty())) takePoint(i++);
    size_t level = 0;
    size_t block = kLeaf;
    while (!levels_.empty() && i + block <= end) {
        while (level + 1 < levels_.size() && i % (block * kFan) == 0 && i + block * kFan <= end) {
            block *= kFan;
            ++level;
        }
        takeBlock(levels_[level][i / block]);
        i += block;
        while (level > 0 && i + block > end) {
            block /= kFan;
            --level;
        }
    }
    while (i < end) takePoint(i++);
    return m;
}

std::vector<SeriesPoint> StepSeries::levelOfDetail(int64_t x0, int64_t x1, size_t maxPoints) const {
    std::vector<SeriesPoint> out;
    if (x1 < x0) std::swap(x0, x1);
    maxPoints = std::max<size_t>(maxPoints, 4);
    out.push_back({x0, valueAt(x0)});
    const size_t i0 = size_t(std::upper_bound(x_.begin(), x_.end(), x0) - x_.begin());
    const size_t i1 = size_t(std::upper_bound(x_.begin(), x_.end(), x1) - x_.begin());
    auto push = [&](size_t i) {
        if (out.back().x == x_[i] && out.size() > 1 && out.back().y == y_[i]) return;
        out.push_back({x_[i], y_[i]});
    };
    if (i1 > i0) {
        if (i1 - i0 <= maxPoints - 2) {
            for (size_t i = i0; i < i1; ++i) push(i);
        } else {
            // Buckets of equal width in x, so each covers about the same pixels.
            const size_t buckets = (maxPoints - 2) / 2;
            // In long double: a span past 2^63 ns overflows int64 arithmetic.
            const long double width = ((long double)x1 - (long double)x0) / (long double)buckets;
            size_t begin = i0;
            for (size_t b = 0; b < buckets && begin < i1; ++b) {
                const auto edge =
                    b + 1 == buckets ? x1 : int64_t((long double)x0 + (long double)(b + 1) * width);
                const size_t end = std::max(
                    begin, size_t(std::upper_bound(x_.begin() + begin, x_.begin() + i1, edge) -
                                  x_.begin()));
                if (end == begin) continue;
                const MinMax m = rangeMinMax(begin, end);
                push(std::min(m.min_at, m.max_at));
                if (m.min_at != m.max_at) push(std::max(m.min_at, m.max_at));
                begin = end;
            }
        }
    }
    // Close on the value in force at x1 (a bucket ends on its extremes, which
    // need not be its last value).
    const int64_t last = valueAt(x1);
    if (out.back().x < x1 || out.back().y != last) out.push_back({x1, last});
    return out;
}

std::vector<SeriesPoint> StepSeries::cellMaxima(std::span<const int64_t> edges) const {
    std::vector<SeriesPoint> out;
    if (edges.size() < 2) return out;
    out.reserve(edges.size() - 1);
    // Cells a few points apart: a gallop from the last place costs a few looks.
    const auto firstAfter = [this](size_t from, int64_t x, bool inclusive) {
        return gallopTo(from, x_.size(),
                        [&](size_t i) { return inclusive ? x_[i] > x : x_[i] >= x; });
    };
    size_t i = 0;
    for (size_t k = 0; k + 1 < edges.size(); ++k) {
        const int64_t lo = edges[k], hi = edges[k + 1];
        // The value in force at lo: the last point at or before it.
        i = firstAfter(i, lo, true);
        SeriesPoint best{lo, i > 0 ? y_[i - 1] : initial};
        const size_t end = std::max(i, firstAfter(i, hi, false));  // points in (lo, hi)
        if (end > i) {
            const MinMax m = rangeMinMax(i, end);
            if (m.max > best.y) best = {x_[m.max_at], m.max};
            i = end;
        }
        out.push_back(best);
    }
    return out;
}

size_t StepSeries::memoryBytes() const {
    size_t bytes = (x_.capacity() + y_.capacity()) * sizeof(int64_t);
    for (const auto& l : levels_) bytes += l.capacity() * sizeof(MinMax);
    return bytes;
}

}  // namespace memscope
