#include "memscope/analysis/layout_pyramid.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <system_error>
#include <thread>

#include "memscope/base/page_warmer.h"
#include "memscope/base/parallel_for.h"

namespace memscope {

namespace {

// Finest columns per build task: small enough that a cancel is seen within
// a few milliseconds and the tasks spread over the threads, large enough
// that each task's first live set (found afresh) is paid for many columns.
constexpr size_t kColumnsPerTask = 128;

// How much thicker than a request's own bands the stored ones may be.
constexpr long double kBandSlack = 1.5L;

// The run-x edge of finest column k of `count` over [lo, hi): the same
// arithmetic as the sweep's columns, so a task's columns line up.
int64_t edgeAt(int64_t lo, int64_t hi, size_t count, size_t k) {
    if (k >= count) return hi;
    const long double width = ((long double)hi - (long double)lo) / (long double)count;
    return int64_t((long double)lo + (long double)k * width);
}

size_t finestColumns(const DeviceTimeline& tl, const PyramidOptions& o, int64_t lo, int64_t hi) {
    const size_t live = std::max<size_t>(tl.peak.live_intervals.size(), 1);
    const size_t budget = std::max<size_t>(o.work_budget / live, 1);
    size_t count =
        std::bit_floor(std::clamp(budget, o.min_columns, std::max(o.max_columns, o.min_columns)));
    // Never more columns than x values: a column is at least one x wide.
    const uint64_t span = uint64_t(hi) - uint64_t(lo);
    while (count > 1 && count > span) count /= 2;
    return count;
}

// Appends `part`'s columns and segments, its segment indexes moved.
void append(std::vector<LayoutColumn>& columns, std::vector<LayoutSegment>& segments,
            const AllocationLayout& part) {
    const auto base = uint32_t(segments.size());
    segments.insert(segments.end(), part.segments.begin(), part.segments.end());
    for (LayoutColumn c : part.columns) {
        c.first += base;
        c.last += base;
        columns.push_back(c);
    }
}

void buildLevels(LayoutPyramid& p) {
    const auto& cols = p.columns;
    auto higher = [&](uint32_t a, uint32_t b) { return cols[b].total > cols[a].total ? b : a; };
    std::vector<uint32_t> below(cols.size());
    for (uint32_t i = 0; i < below.size(); ++i) below[i] = i;
    while (below.size() > 1) {
        std::vector<uint32_t> level((below.size() + 1) / 2);
        for (size_t j = 0; j < level.size(); ++j)
            level[j] =
                2 * j + 1 < below.size() ? higher(below[2 * j], below[2 * j + 1]) : below[2 * j];
        p.levels.push_back(level);
        below = std::move(level);
    }
}

}  // namespace

size_t LayoutPyramid::memoryBytes() const {
    size_t bytes = columns.capacity() * sizeof(LayoutColumn) +
                   (segments ? segments->capacity() * sizeof(LayoutSegment) : 0);
    for (const auto& l : levels) bytes += l.capacity() * sizeof(uint32_t);
    return bytes;
}

LayoutPyramid buildLayoutPyramid(const DeviceTimeline& tl, const AllocationIndex& index,
                                 const PyramidOptions& options) {
    const auto began = std::chrono::steady_clock::now();
    LayoutPyramid p;
    if (tl.intervals.empty() || tl.end == std::numeric_limits<int64_t>::max()) return p;
    p.lo = tl.start;
    p.hi = tl.end + 1;
    const uint64_t peak = uint64_t(std::max<int64_t>(tl.peak.bytes, 1));
    p.min_band_bytes = std::max<uint64_t>(1, peak / std::max<uint64_t>(options.rows, 1));
    const size_t count = finestColumns(tl, options, p.lo, p.hi);

    LayoutRequest base;
    base.min_band_bytes = p.min_band_bytes;
    base.max_work = std::numeric_limits<size_t>::max();
    base.max_starts = std::numeric_limits<size_t>::max();
    // The sweep must not read a pyramid while one is built from it.
    AllocationIndex sweepOnly;
    const AllocationIndex* sweepIndex = &index;
    if (index.pyramid) {
        sweepOnly = index;
        sweepOnly.pyramid.reset();
        sweepIndex = &sweepOnly;
    }

    // Tasks of kColumnsPerTask finest columns, taken in turn by the threads;
    // each task sweeps its own range, so they are independent.
    const size_t tasks = (count + kColumnsPerTask - 1) / kColumnsPerTask;
    std::vector<AllocationLayout> parts(tasks);
    std::atomic<size_t> next{0};
    std::atomic<bool> stopped{false};
    auto work = [&] {
        for (size_t t; (t = next.fetch_add(1)) < tasks;) {
            if (options.cancel && options.cancel->load(std::memory_order_relaxed)) {
                stopped = true;
                return;
            }
            const size_t a = t * kColumnsPerTask, b = std::min(count, a + kColumnsPerTask);
            LayoutRequest r = base;
            r.lo = edgeAt(p.lo, p.hi, count, a);
            r.hi = edgeAt(p.lo, p.hi, count, b);
            r.columns = b - a;
            // An exception must not leave a thread (std::terminate): out of
            // memory here means no pyramid, and the views sweep.
            try {
                parts[t] = layoutAllocations(tl, *sweepIndex, r);
            } catch (...) {
                stopped = true;
                return;
            }
        }
    };
    unsigned threads = options.threads ? options.threads : hardwareThreads();
    threads = unsigned(std::clamp<size_t>(threads, 1, std::max<size_t>(tasks, 1)));
    {
        std::vector<std::jthread> pool;
        try {
            for (unsigned i = 1; i < threads; ++i) pool.emplace_back(work);
        } catch (const std::system_error&) {
            // Fewer threads than wished: the ones running (and this one) do it all.
        }
        work();
    }
    if (stopped) return {};
    LayoutRequest last = base;
    last.lo = tl.end;
    last.hi = tl.end + 1;
    last.columns = 1;
    const AllocationLayout tail = layoutAllocations(tl, *sweepIndex, last);

    size_t total = tail.segments.size();
    for (const AllocationLayout& part : parts) total += part.segments.size();
    auto segments = std::make_shared<std::vector<LayoutSegment>>();
    segments->reserve(total);
    p.columns.reserve(count);
    {
        // The copy runs at memory speed and would wait on its fresh pages
        // (100 MB on a 1 GB snapshot): the back half is faulted in on the
        // other core while this one fills the front half.
        const std::span<const std::byte> room = PageWarmer::unfilled(*segments, total);
        PageWarmer back_half;
        back_half.warm({room.subspan(room.size() / 2)});
        for (const AllocationLayout& part : parts) append(p.columns, *segments, part);
    }
    parts.clear();
    std::vector<LayoutColumn> tailColumns;
    append(tailColumns, *segments, tail);
    if (!tailColumns.empty()) p.tail = tailColumns.front();
    p.segments = std::move(segments);
    buildLevels(p);
    p.build_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    return p;
}

uint32_t highestColumn(const LayoutPyramid& p, uint32_t first, uint32_t last) {
    const auto& cols = p.columns;
    uint32_t best = first;
    for (size_t i = first; i <= last;) {
        // The largest aligned block starting at i that ends by `last`.
        size_t k = 0;
        while (k < p.levels.size() && i % (size_t(2) << k) == 0 && i + (size_t(2) << k) - 1 <= last)
            ++k;
        const uint32_t c = k == 0 ? uint32_t(i) : p.levels[k - 1][i >> k];
        if (cols[c].total > cols[best].total) best = c;
        i += size_t(1) << k;
    }
    return best;
}

std::optional<AllocationLayout> layoutFromPyramid(const DeviceTimeline& tl, const LayoutPyramid& p,
                                                  const LayoutRequest& req, double max_column_px) {
    if (p.empty() || p.lo != tl.start || p.hi != tl.end + 1) return std::nullopt;
    // Own bands a little thicker than asked for are still under two pixels:
    // the picture does not change, the hit test reads the same layout.
    if ((long double)req.min_band_bytes * kBandSlack < (long double)p.min_band_bytes)
        return std::nullopt;
    const int64_t lo = std::min(req.lo, req.hi);
    const int64_t hi = std::max(req.lo, req.hi);
    if (hi <= lo) return std::nullopt;
    const size_t count = req.columns;
    if (count == 0) return std::nullopt;
    const long double pixel = ((long double)hi - (long double)lo) / (long double)count;
    const auto& stored = p.columns;
    const long double finestWidth =
        ((long double)p.hi - (long double)p.lo) / (long double)stored.size();
    // Finer than the pyramid: the sweep resolves it (or coarsens as much).
    if (pixel < 1 || finestWidth > pixel * (long double)std::max(1.0, max_column_px))
        return std::nullopt;

    AllocationLayout out;
    out.column_width = size_t(std::max(1.0L, std::round(finestWidth / pixel)));
    out.columns.resize(count);
    // The finest column holding x (x in [p.lo, p.hi)).
    auto storedAt = [&](int64_t x) {
        auto it = std::upper_bound(stored.begin(), stored.end(), x,
                                   [](int64_t v, const LayoutColumn& c) { return v < c.x0; });
        return uint32_t(std::max<ptrdiff_t>(it - stored.begin() - 1, 0));
    };
    out.shared_segments = p.segments;
    for (size_t k = 0; k < count; ++k) {
        LayoutColumn& c = out.columns[k];
        c.x0 = k == 0 ? lo : out.columns[k - 1].x1;
        c.x1 = k + 1 == count ? hi : int64_t((long double)lo + (long double)(k + 1) * pixel);
        c.x1 = std::max(c.x1, c.x0 + 1);
        // The column this pixel shows: the highest it overlaps.
        const LayoutColumn* shown = nullptr;
        if (c.x1 > p.lo && c.x0 < p.hi) {
            const uint32_t a = storedAt(std::max(c.x0, p.lo));
            const uint32_t b = storedAt(std::min(c.x1, p.hi) - 1);
            shown = &stored[highestColumn(p, a, b)];
            out.work += 2 * size_t(std::bit_width(b - a + 1u));
        }
        if (c.x1 > p.hi && (!shown || p.tail.total > shown->total)) shown = &p.tail;
        if (!shown) {  // before the first allocation: nothing live
            c.sample = c.x0;
            c.first = c.last = 0;
            continue;
        }
        c.sample = shown->sample;
        c.total = shown->total;
        c.first = shown->first;
        c.last = shown->last;
        out.max_total = std::max(out.max_total, c.total);
        out.work += 1;
    }
    return out;
}

}  // namespace memscope
