#include "memscope/view/layout_pyramid.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <system_error>
#include <thread>

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

// Room for `adding` more segments before part `done` of `parts` is
// appended, so that the pyramid's segments move rarely: the whole build's
// need projected from the parts appended so far (a quarter more), at least
// twice the room there was, never more than `cap`. The room of a uniform
// trace is set once, after its first part. Room never written is address
// space, not memory: no page of it is touched.
void makeRoom(std::vector<LayoutSegment>& segments, size_t adding, size_t done, size_t parts,
              size_t cap) {
    const size_t needed = segments.size() + adding;
    if (needed <= segments.capacity()) return;
    const double projected = double(needed) * double(parts) / double(done + 1);
    const double wanted = std::max(projected * 1.25, 2.0 * double(segments.capacity()));
    const size_t room = wanted >= double(cap) ? cap : size_t(wanted);
    segments.reserve(std::max(needed, room));
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

// Own bands are at least min_band tall, and so is a run that ends where
// another site begins; a shorter run is followed by an own band or ends the
// column; no column holds more than the peak. And every segment holds at
// least one allocation.
size_t maxSegmentsPerPyramidColumn(const DeviceTimeline& tl, uint64_t min_band_bytes) {
    const uint64_t peak = uint64_t(std::max<int64_t>(tl.peak.bytes, 1));
    const uint64_t bands =
        std::min<uint64_t>(peak / std::max<uint64_t>(min_band_bytes, 1) + 1, uint64_t(1) << 32);
    return size_t(std::min<uint64_t>(
        {3 * bands + 2, uint64_t(tl.intervals.size()) + 1, std::numeric_limits<uint32_t>::max()}));
}

size_t LayoutPyramid::memoryBytes() const {
    // The segments' size, not their room: room never written is never mapped.
    size_t bytes = columns.capacity() * sizeof(LayoutColumn) +
                   (segments ? segments->size() * sizeof(LayoutSegment) : 0);
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
    // each task sweeps its own range, so they are independent. A task's part
    // is appended to the pyramid as soon as every part before it is, and
    // freed: the parts never live all at once beside the pyramid (100 MB at
    // the peak of the 1 GB churn snapshot, and fresh pages are what a load
    // pays most for), and the next tasks reuse their memory. The room is
    // projected as they go, never past what the columns can hold.
    const size_t tasks = (count + kColumnsPerTask - 1) / kColumnsPerTask;
    auto segments = std::make_shared<std::vector<LayoutSegment>>();
    const size_t perColumn = maxSegmentsPerPyramidColumn(tl, p.min_band_bytes);
    const size_t cap = count + 1 < segments->max_size() / perColumn ? (count + 1) * perColumn
                                                                    : segments->max_size();
    p.columns.reserve(count);
    std::vector<AllocationLayout> parts(tasks);
    std::vector<char> done(tasks, 0);
    size_t appended = 0;  // parts [0, appended) are in the pyramid
    std::mutex appending;
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
                const std::lock_guard lock(appending);
                done[t] = 1;
                for (; appended < tasks && done[appended]; ++appended) {
                    makeRoom(*segments, parts[appended].segments.size(), appended, tasks, cap);
                    append(p.columns, *segments, parts[appended]);
                    parts[appended] = {};
                }
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
    if (stopped || appended != tasks) return {};
    LayoutRequest last = base;
    last.lo = tl.end;
    last.hi = tl.end + 1;
    last.columns = 1;
    const AllocationLayout tail = layoutAllocations(tl, *sweepIndex, last);
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
