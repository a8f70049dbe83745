#include "memscope/view/allocation_layout.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <utility>

#include "memscope/base/gallop.h"
#include "memscope/base/parallel_for.h"
#include "memscope/view/allocation_order.h"
#include "memscope/view/layout_pyramid.h"

namespace memscope {

namespace {

constexpr uint64_t kMaxBytes = std::numeric_limits<uint64_t>::max();

// Bytes stacked on `acc`, saturating: a hostile size cannot wrap the stack.
uint64_t clampedSize(uint64_t acc, uint64_t size) {
    return std::min(size, kMaxBytes - acc);
}

// Column edges and each column's sample: the moment of its highest live total
// (from the min/max pyramid), so the outline is the envelope a by-category
// view draws, not whatever the column's first instant held.
std::vector<LayoutColumn> columnsFor(const DeviceTimeline& tl, int64_t lo, int64_t hi,
                                     size_t count) {
    std::vector<LayoutColumn> cols(count);
    const long double width = ((long double)hi - (long double)lo) / (long double)count;
    for (size_t k = 0; k < count; ++k) {
        cols[k].x0 = k == 0 ? lo : cols[k - 1].x1;
        cols[k].x1 = k + 1 == count ? hi : int64_t((long double)lo + (long double)(k + 1) * width);
        cols[k].x1 = std::max(cols[k].x1, cols[k].x0 + 1);
        cols[k].sample = cols[k].x0;
    }
    if (count > 0) cols.back().x1 = std::max(cols.back().x1, hi);
    const std::vector<SeriesPoint> lod = tl.live.levelOfDetail(lo, hi - 1, 2 * count + 2);
    size_t j = 0;
    int64_t inForce = lod.empty() ? 0 : lod.front().y;
    for (LayoutColumn& c : cols) {
        while (j < lod.size() && lod[j].x <= c.x0) inForce = lod[j++].y;
        int64_t best = inForce;
        for (; j < lod.size() && lod[j].x < c.x1; ++j) {
            if (lod[j].y > best) {
                best = lod[j].y;
                c.sample = lod[j].x;
            }
            inForce = lod[j].y;
        }
    }
    return cols;
}

// Run-x per column of a grid layout: the even width rounded up to 4
// significant bits, so that a pan, whose range keeps its width give or take a
// unit, keeps the grid. 0: a range too wide for a grid (past 2^62).
int64_t gridStep(int64_t lo, int64_t hi, size_t count) {
    const uint64_t span = uint64_t(hi) - uint64_t(lo);
    if (span > (uint64_t(1) << 62)) return 0;
    const uint64_t raw = std::max<uint64_t>(1, (span + count - 1) / std::max<size_t>(count, 1));
    const int shift = std::max(0, int(std::bit_width(raw)) - 4);
    const uint64_t mantissa = (raw + (uint64_t(1) << shift) - 1) >> shift;
    return int64_t(mantissa << shift);
}

// Columns on the grid of `step`: each whole multiple of it in (lo, hi) is an
// edge, and each column samples its own highest moment, so a column is the
// same whatever range it is part of.
std::vector<LayoutColumn> gridColumns(const DeviceTimeline& tl, int64_t lo, int64_t hi,
                                      int64_t step) {
    std::vector<int64_t> edges{lo};
    // Distances, not multiples, are compared with the range's width: near
    // either end of int64 a multiple of the step may lie outside it.
    const int64_t below = ((lo % step) + step) % step;  // lo's distance above its multiple
    uint64_t ahead = uint64_t(step - below);            // to the next multiple
    const uint64_t span = uint64_t(hi) - uint64_t(lo);
    for (; ahead < span; ahead += uint64_t(step)) edges.push_back(int64_t(uint64_t(lo) + ahead));
    edges.push_back(hi);
    const std::vector<SeriesPoint> maxima = tl.live.cellMaxima(edges);
    std::vector<LayoutColumn> cols(edges.size() - 1);
    for (size_t k = 0; k < cols.size(); ++k) {
        cols[k].x0 = edges[k];
        cols[k].x1 = edges[k + 1];
        cols[k].sample = maxima[k].x;
    }
    return cols;
}

// The columns of `out` (a grid layout, columns placed, nothing swept yet) that
// `previous` holds whole and built for the same index, scale and bands:
// out's [from, from + count), previous's from `at`.
struct Reuse {
    size_t from = 0, count = 0, at = 0;
};

Reuse reusableColumns(const AllocationLayout& out, const AllocationLayout& previous) {
    const int64_t step = out.grid_step;
    if (step == 0 || previous.grid_step != step || previous.shared_segments ||
        previous.min_band_bytes != out.min_band_bytes || previous.source != out.source ||
        previous.source_intervals != out.source_intervals || previous.columns.empty() ||
        out.columns.empty())
        return {};
    const auto whole = [step](const LayoutColumn& c) {
        return uint64_t(c.x1) - uint64_t(c.x0) == uint64_t(step);
    };
    // Both are grids of one step: only their first and last columns may be
    // partial, and a whole column of one at the same x0 is the other's.
    const auto& prev = previous.columns;
    const size_t p0 = whole(prev.front()) ? 0 : 1;
    const size_t p1 = whole(prev.back()) ? prev.size() : prev.size() - 1;
    const size_t k0 = whole(out.columns.front()) ? 0 : 1;
    const size_t k1 = whole(out.columns.back()) ? out.columns.size() : out.columns.size() - 1;
    if (p0 >= p1 || k0 >= k1) return {};
    const int64_t a = std::max(prev[p0].x0, out.columns[k0].x0);
    const int64_t b = std::min(prev[p1 - 1].x1, out.columns[k1 - 1].x1);
    if (a >= b) return {};
    Reuse r;
    r.from = k0 + size_t((a - out.columns[k0].x0) / step);
    r.at = p0 + size_t((a - prev[p0].x0) / step);
    r.count = size_t((b - a) / step);
    // Checked, not assumed: a layout that is not what it says is not used.
    if (r.at + r.count > prev.size() || r.from + r.count > out.columns.size()) return {};
    const std::span<const LayoutSegment> segments = previous.drawnSegments();
    // The run's segments are then one block, from its first column's first
    // to its last column's last.
    for (size_t i = 0; i < r.count; ++i) {
        const LayoutColumn& p = prev[r.at + i];
        const LayoutColumn& c = out.columns[r.from + i];
        if (p.x0 != c.x0 || p.x1 != c.x1 || p.first > p.last || p.last > segments.size()) return {};
        if (i > 0 && (p.first < prev[r.at + i - 1].first || p.last < prev[r.at + i - 1].last))
            return {};
    }
    return r;
}

// Room for `count` segments in all. Past the room held it grows by half at
// least, so that buffers handed from frame to frame (LayoutBuffers) settle
// at a size that holds every frame, rather than each frame taking fresh
// pages for a few more segments than the last.
void makeRoom(std::vector<LayoutSegment>& segments, size_t count) {
    if (count > segments.capacity())
        segments.reserve(std::max(count, segments.capacity() + segments.capacity() / 2));
}

// A live allocation with what a column needs of it, side by side: each
// column walks the changed part of the live list, which stays in cache so.
struct LiveEntry {
    uint32_t interval;
    uint32_t site;
    uint64_t size;
    int64_t end;  // effectiveEnd
};

// The live allocations at each of a sweep's samples in turn, in allocation
// order, updated from one sample to the next: of the allocations that started
// in between only the ones still live are visited (IntervalEnds), and each
// step drops the ended ones from the lowest of them up, so a step costs the
// part of the list above the lowest change, never the whole list. It tells
// the builder that position: in a training step the bottom of the stack
// (parameters, optimizer state, early activations) lives long and the churn
// is at the top. (A scan of the whole list per column was most of a
// zoomed-in layout's time on a 1 GB snapshot with 9,600 allocations live,
// where the changes touched the top 600.)
//
// The samples are known ahead, so an allocation is filed on arrival under the
// first sample at or past its end, where it leaves; a step reads the lowest
// filed under it. (A heap of ends cost half a zoomed-in layout of a 10 M
// event trace, where most allocations live a column or a few.)
class LiveSweep {
public:
    // At samples[0]; `samples` ascending, and outliving the sweep.
    LiveSweep(const DeviceTimeline& tl, const AllocationIndex& index,
              std::span<const int64_t> samples)
        : tl_(tl), index_(index), samples_(samples), leaving_(samples.size(), kNone) {
        next_ = startsAfter(samples_[0]);
        work_ = index_.ends.collectLive(tl_, 0, next_, samples_[0], found_);
        append(0);
    }

    // Moves to samples[k], k one past the last; whether the live set changed.
    bool advance(size_t k) {
        const int64_t x = samples_[k];
        bool changed = false;
        if (leaving_[k] != kNone) {
            dropEnded(x, leaving_[k]);
            changed = true;
        }
        const size_t end = startsAfter(x);
        if (end > next_) {
            found_.clear();
            work_ += index_.ends.collectLive(tl_, next_, end, x, found_);
            changed = changed || !found_.empty();
            append(k);
            next_ = end;
        }
        return changed;
    }

    const std::vector<LiveEntry>& live() const { return live_; }
    // The lowest position changed since the last call.
    size_t takeFirstChanged() { return std::exchange(firstChanged_, live_.size()); }
    size_t work() const { return work_; }

private:
    // The first interval starting after x, searched forward from next_: a
    // linear walk over every kStartBlock-th start (small, in cache, a column
    // moves by few), then a search inside one block of starts. A search over
    // all starts would cost a cache miss per step.
    size_t startsAfter(int64_t x) const {
        const auto& starts = index_.starts;
        const auto& blocks = index_.start_blocks;
        constexpr size_t kBlock = AllocationIndex::kStartBlock;
        size_t b = next_ / kBlock;
        while (b + 1 < blocks.size() && blocks[b + 1] <= x) ++b;
        const size_t lo = std::max(next_, b * kBlock);
        const size_t hi = std::min(starts.size(), (b + 1) * kBlock);
        if (lo >= hi) return std::max(lo, next_);
        return size_t(
            std::upper_bound(starts.begin() + ptrdiff_t(lo), starts.begin() + ptrdiff_t(hi), x) -
            starts.begin());
    }
    // Adds what was found at samples[k], each filed under the sample where
    // it will have ended.
    void append(size_t k) {
        firstChanged_ = std::min(firstChanged_, live_.size());
        // The index was built for this timeline: layoutAllocations checked.
        for (uint32_t i : found_) {
            live_.push_back({i, index_.sites.siteOf(i), index_.sizes[i], index_.ends.end(i)});
            const size_t leaves = firstSampleFrom(k + 1, live_.back().end);
            if (leaves < samples_.size()) leaving_[leaves] = std::min(leaving_[leaves], i);
        }
    }

    // The first sample from `from` on at or past `end` (the size: none): a
    // gallop, as most allocations end within a few samples.
    size_t firstSampleFrom(size_t from, int64_t end) const {
        return gallopTo(from, samples_.size(), [&](size_t i) { return samples_[i] >= end; });
    }

    // Drops every allocation that ended by x, the lowest of them `lowest`
    // (the list is in allocation order): one walk above it keeps the rest,
    // by their own ends.
    void dropEnded(int64_t x, uint32_t lowest) {
        const auto at = std::lower_bound(
            live_.begin(), live_.end(), lowest,
            [](const LiveEntry& e, uint32_t interval) { return e.interval < interval; });
        const auto first = size_t(at - live_.begin());
        size_t kept = first;
        for (size_t k = first; k < live_.size(); ++k)
            if (live_[k].end > x) live_[kept++] = live_[k];
        work_ += live_.size() - first;
        live_.resize(kept);
        firstChanged_ = std::min(firstChanged_, first);
    }

    static constexpr uint32_t kNone = UINT32_MAX;

    const DeviceTimeline& tl_;
    const AllocationIndex& index_;
    std::vector<LiveEntry> live_;
    std::vector<uint32_t> found_;  // started since the last sample and live
    std::span<const int64_t> samples_;
    std::vector<uint32_t> leaving_;  // per sample, the lowest allocation filed to leave there
    size_t next_ = 0;
    size_t firstChanged_ = 0;
    size_t work_ = 0;
};

// One column's segments: own segments for tall allocations, per-site runs of
// thin ones. A run of at least min_band bytes ends where another site begins;
// a shorter one keeps collecting, named by its largest member's site.
//
// The builder's state is saved every kCheckpoint live positions, so the next
// column copies the segments below its first changed position and walks only
// the rest.
class ColumnBuilder {
public:
    ColumnBuilder(std::vector<LayoutSegment>& out, uint64_t minBand)
        : out_(out), minBand_(std::max<uint64_t>(minBand, 1)) {}

    // Segments for `live`, whose positions below `firstChanged` hold what the
    // previous build saw.
    uint64_t build(const std::vector<LiveEntry>& live, size_t firstChanged) {
        const size_t prevFirst = first_;
        first_ = out_.size();
        size_t start = 0;
        Walk walk;
        // The latest checkpoint the change left intact.
        const auto cp =
            std::upper_bound(checkpoints_.begin(), checkpoints_.end(), firstChanged,
                             [](size_t pos, const Checkpoint& c) { return pos < c.pos; });
        if (cp != checkpoints_.begin()) {
            const Checkpoint& c = *(cp - 1);
            room(live.size() - std::min(c.pos, live.size()) + c.segments);
            // The segments below the checkpoint's last as the previous column
            // has them, then that last as it was then (a later run may have
            // grown it).
            const auto below = ptrdiff_t(c.hasBack ? c.segments - 1 : c.segments);
            std::copy_n(out_.begin() + ptrdiff_t(prevFirst), below, scratch_.begin());
            if (c.hasBack) scratch_[size_t(below)] = c.back;
            walk.written = c.segments;
            start = c.pos;
            walk.acc = c.acc;
            walk.run = c.run;
            checkpoints_.erase(cp, checkpoints_.end());
        } else {
            room(live.size());
            checkpoints_.clear();
        }
        for (size_t k = start; k < live.size();) {
            if (k % kCheckpoint == 0 && (checkpoints_.empty() || checkpoints_.back().pos < k))
                save(k, walk);
            const size_t end = std::min(live.size(), (k / kCheckpoint + 1) * kCheckpoint);
            for (; k < end; ++k) add(walk, live[k]);
        }
        flush(walk);
        out_.insert(out_.end(), scratch_.begin(), scratch_.begin() + ptrdiff_t(walk.written));
        return walk.acc;
    }

private:
    static constexpr size_t kCheckpoint = 32;

    struct Run {
        uint64_t bottom = 0, bytes = 0, largest = 0;
        uint32_t site = AllocationSites::kNoSite, count = 0;
    };
    // The walk's state, a local of build(), and the column's segments in a
    // scratch block of room made once: in members, and appended to `out_`
    // one by one, every update went to memory and back around each segment
    // stored (which may alias them). A zoomed-in layout of the 1 GB churn
    // snapshot took a quarter longer so.
    struct Walk {
        uint64_t acc = 0;
        Run run;
        size_t written = 0;  // the column's segments so far, in scratch_
    };
    struct Checkpoint {
        size_t pos;          // live position about to be added
        size_t segments;     // this column's segments then
        LayoutSegment back;  // the last of them as it was then (a later run may grow it)
        bool hasBack;
        uint64_t acc;
        Run run;
    };

    // Room in scratch_ for `count` segments and one more, so that the walk
    // writes without a check: a column holds at most its checkpoint's
    // segments, one per allocation walked (a run ends, with an allocation of
    // its own or a site, after at least one member) and the run the
    // checkpoint carried.
    void room(size_t count) {
        if (scratch_.size() < count + 1)
            scratch_.resize(std::max(count + 1, scratch_.size() + scratch_.size() / 2));
    }

    void save(size_t pos, const Walk& w) {
        const size_t n = w.written;
        checkpoints_.push_back(
            {pos, n, n > 0 ? scratch_[n - 1] : LayoutSegment{}, n > 0, w.acc, w.run});
    }

    void add(Walk& w, const LiveEntry& e) {
        const uint64_t size = clampedSize(w.acc, e.size);
        const uint32_t site = e.site;
        if (size >= minBand_) {
            flush(w);
            scratch_[w.written++] = {w.acc + size, site, 1, int64_t(e.interval)};
            w.acc += size;
            return;
        }
        Run& run = w.run;
        if (run.count > 0 && run.bytes >= minBand_ && site != run.site) flush(w);
        if (run.count == 0) run.bottom = w.acc;
        if (run.count == 0 || size > run.largest) {
            run.largest = size;
            run.site = site;
        }
        run.bytes += size;
        ++run.count;
        w.acc += size;
    }

    void flush(Walk& w) {
        Run& run = w.run;
        if (run.count == 0 || run.bytes == 0) {
            run = {};
            return;
        }
        if (w.written > 0) {
            LayoutSegment& prev = scratch_[w.written - 1];
            if (prev.interval < 0 && prev.site == run.site && prev.top == run.bottom) {
                prev.top += run.bytes;
                prev.count += run.count;
                run = {};
                return;
            }
        }
        scratch_[w.written++] = {run.bottom + run.bytes, run.site, run.count, -1};
        run = {};
    }

    std::vector<LayoutSegment>& out_;
    uint64_t minBand_;
    size_t first_ = 0;  // this column's first segment
    // The column being built, appended to out_ as one block at its end.
    std::vector<LayoutSegment> scratch_;
    std::vector<Checkpoint> checkpoints_;  // of the last column built, ascending
};

}  // namespace

uint64_t bandBytesForRow(double bytes_per_row) {
    if (!(bytes_per_row > 1)) return 1;  // NaN too
    if (bytes_per_row >= 9.2e18) return uint64_t(1) << 62;
    const auto bytes = uint64_t(std::ceil(bytes_per_row));
    const int shift = std::max(0, int(std::bit_width(bytes)) - 3);
    return (bytes >> shift) << shift;
}

size_t AllocationIndex::memoryBytes() const {
    return sites.memoryBytes() + ends.memoryBytes() + sizes.capacity() * sizeof(uint64_t) +
           (starts.capacity() + start_blocks.capacity()) * sizeof(int64_t) +
           (pyramid ? pyramid->memoryBytes() : 0);
}

AllocationIndex AllocationIndex::build(const Trace& trace, const DeviceTimeline& timeline,
                                       Detail detail, const std::atomic<bool>* cancel) {
    AllocationIndex index;
    index.sites = AllocationSites::build(trace, timeline);
    index.ends = IntervalEnds::build(timeline);
    index.sizes.reserve(timeline.intervals.size());
    index.starts.reserve(timeline.intervals.size());
    for (const AllocationInterval& a : timeline.intervals) {
        index.sizes.push_back(a.size);
        index.starts.push_back(a.start);
    }
    for (size_t i = 0; i < index.starts.size(); i += AllocationIndex::kStartBlock)
        index.start_blocks.push_back(index.starts[i]);
    if (detail == Detail::WithPyramid) {
        PyramidOptions options;
        options.cancel = cancel;
        auto pyramid =
            std::make_shared<const LayoutPyramid>(buildLayoutPyramid(timeline, index, options));
        if (!pyramid->empty()) index.pyramid = std::move(pyramid);
    }
    return index;
}

namespace {

bool smallerRoom(const std::vector<LayoutSegment>& a, const std::vector<LayoutSegment>& b) {
    return a.capacity() < b.capacity();
}

}  // namespace

std::vector<LayoutSegment> LayoutBuffers::take() {
    if (rooms_.empty()) return {};
    const auto largest = std::max_element(rooms_.begin(), rooms_.end(), smallerRoom);
    std::vector<LayoutSegment> room = std::move(*largest);
    rooms_.erase(largest);
    return room;
}

void LayoutBuffers::recycle(AllocationLayout&& layout) {
    if (layout.segments.capacity() == 0) return;  // read from the pyramid
    layout.segments.clear();
    rooms_.push_back(std::move(layout.segments));
    if (rooms_.size() > kRooms)
        rooms_.erase(std::min_element(rooms_.begin(), rooms_.end(), smallerRoom));
}

size_t LayoutBuffers::memoryBytes() const {
    size_t bytes = piece_.capacity() * sizeof(LayoutSegment);
    for (const auto& room : rooms_) bytes += room.capacity() * sizeof(LayoutSegment);
    return bytes;
}

namespace {

// An index built for this timeline: one entry per interval, one start block
// per kStartBlock starts.
bool indexMatches(const DeviceTimeline& tl, const AllocationIndex& index) {
    const size_t n = tl.intervals.size();
    constexpr size_t kBlock = AllocationIndex::kStartBlock;
    return index.sizes.size() == n && index.starts.size() == n && index.ends.size() == n &&
           index.start_blocks.size() == (n + kBlock - 1) / kBlock;
}

// What a sweep of [lo, hi) would cost, and the column width that keeps it
// within the request's budgets.
struct SweepEstimate {
    size_t wanted = 1;        // columns asked for: one per pixel, at most one per run-x
    size_t liveEstimate = 1;  // allocations live at once, at the peak
    size_t budget = 1;        // req.max_work
    size_t startsIn = 0;      // allocations starting in the range
    size_t columnWidth = 1;   // columns wanted per column swept
};

// Coarser columns when many allocations are live at once (each changed
// column walks its whole stack), or when many start in the range (each
// column visits those alive at its sample: with heavy churn, about all of
// them at one column per pixel).
SweepEstimate estimateSweep(const DeviceTimeline& tl, const AllocationIndex& index,
                            const LayoutRequest& req, int64_t lo, int64_t hi) {
    SweepEstimate e;
    const size_t span = uint64_t(hi) - uint64_t(lo) < req.columns
                            ? size_t(uint64_t(hi) - uint64_t(lo))
                            : req.columns;
    e.wanted = std::max<size_t>(span, 1);
    e.liveEstimate = std::max<size_t>(tl.peak.live_intervals.size(), 1);
    e.budget = std::max<size_t>(req.max_work, 1);
    const size_t startBudget = std::max<size_t>(req.max_starts, 1);
    e.startsIn = size_t(std::lower_bound(index.starts.begin(), index.starts.end(), hi) -
                        std::lower_bound(index.starts.begin(), index.starts.end(), lo));
    e.columnWidth = std::max<size_t>({1, (e.wanted * e.liveEstimate + e.budget - 1) / e.budget,
                                      (e.startsIn + startBudget - 1) / startBudget});
    return e;
}

// The layout read from the pyramid, when it is at least as fine as the sweep
// would be: a frame then costs the pixels, not the allocations.
std::optional<AllocationLayout> readFromPyramid(const DeviceTimeline& tl,
                                                const AllocationIndex& index,
                                                const LayoutRequest& req, int64_t lo, int64_t hi,
                                                const SweepEstimate& e) {
    if (!index.pyramid) return std::nullopt;
    LayoutRequest r = req;
    r.lo = lo;
    r.hi = hi;
    r.columns = e.wanted;
    return layoutFromPyramid(tl, *index.pyramid, r, double(e.columnWidth));
}

// `count` columns over [lo, hi): on a grid when asked and the range allows
// one (the layout then records what a later frame needs to reuse them),
// else even columns.
void placeColumns(AllocationLayout& out, const DeviceTimeline& tl, const AllocationIndex& index,
                  const LayoutRequest& req, int64_t lo, int64_t hi, size_t count) {
    const int64_t step = req.grid ? gridStep(lo, hi, count) : 0;
    if (step > 0) {
        out.columns = gridColumns(tl, lo, hi, step);
        out.grid_step = step;
        out.min_band_bytes = req.min_band_bytes;
        out.source = &index;
        out.source_intervals = tl.intervals.size();
    } else {
        out.columns = columnsFor(tl, lo, hi, count);
    }
}

// The columns in pieces, in order: swept, or copied from `previous`. A pan
// sweeps the columns that came into view on either side and copies the
// rest. A sweep that visits many allocations (zoomed in on heavy churn,
// below the pyramid's resolution) runs as two, on the left and right halves
// of the columns: the right one starts from the live set at its first
// column, as the whole sweep starts from the range's first. Same columns and
// segments; a piece's first column is built rather than carried over.
struct LayoutPiece {
    size_t from, to;
    bool copied;
    std::vector<LayoutSegment> segments;  // a swept piece's, but the first's
    size_t work = 0;
};

constexpr size_t kParallelWork = 200'000;

std::vector<LayoutPiece> planPieces(const Reuse& reuse, size_t columns, size_t expectedWork) {
    std::vector<LayoutPiece> pieces;
    if (reuse.count > 0) {
        if (reuse.from > 0) pieces.push_back({0, reuse.from, false, {}});
        pieces.push_back({reuse.from, reuse.from + reuse.count, true, {}});
        if (reuse.from + reuse.count < columns)
            pieces.push_back({reuse.from + reuse.count, columns, false, {}});
    } else if (expectedWork >= kParallelWork && columns >= 64 && hardwareThreads() > 1) {
        pieces.push_back({0, columns / 2, false, {}});
        pieces.push_back({columns / 2, columns, false, {}});
    } else {
        pieces.push_back({0, columns, false, {}});
    }
    return pieces;
}

// The swept one of the pieces that is not the first, if any. At most one
// swept piece is not the first (the pieces are a swept or copied middle with
// a swept piece on either side, or two halves): its segments go into the
// buffers' second room, lent here and handed back once joined.
LayoutPiece* lendSecondRoom(std::vector<LayoutPiece>& pieces,
                            const std::vector<LayoutPiece*>& swept, LayoutBuffers* buffers) {
    LayoutPiece* second =
        swept.size() > 0 && swept.back() != &pieces.front() ? swept.back() : nullptr;
    if (buffers && second) {
        second->segments = std::move(buffers->piece());
        second->segments.clear();
    }
    return second;
}

// Sweeps the columns of a layout whose columns are placed.
class ColumnSweeper {
public:
    ColumnSweeper(const DeviceTimeline& tl, const AllocationIndex& index, const LayoutRequest& req,
                  AllocationLayout& out)
        : tl_(tl), index_(index), req_(req), out_(out), columns_(out.columns.size()) {}

    // Sweeps the pieces not copied, the two of a pan or the halves in
    // parallel where the work is worth a thread. The first piece sweeps into
    // the layout's own segments: no copy after.
    void sweepPieces(std::vector<LayoutPiece>& pieces, const std::vector<LayoutPiece*>& swept,
                     size_t reused, size_t expectedWork) {
        const auto sweepPiece = [&](LayoutPiece& p) {
            p.work = sweepColumns(p.from, p.to, &p == &pieces.front() ? out_.segments : p.segments);
        };
        const size_t sweptColumns = columns_ - reused;  // what the two pieces of a pan share out
        if (swept.size() == 2 &&
            expectedWork / std::max<size_t>(columns_, 1) * sweptColumns >= kParallelWork &&
            hardwareThreads() > 1) {
            parallelFor(2, 2, [&](size_t i) { sweepPiece(*swept[i]); });
        } else {
            for (LayoutPiece* p : swept) sweepPiece(*p);
        }
    }

private:
    // Columns [from, to) into `segments`, numbered from 0 there: a sweep of
    // its own from the first column's sample. Returns the sweep's work.
    size_t sweepColumns(size_t from, size_t to, std::vector<LayoutSegment>& segments) {
        std::vector<int64_t> samples(to - from);
        for (size_t k = from; k < to; ++k) samples[k - from] = out_.columns[k].sample;
        LiveSweep sweep(tl_, index_, samples);
        const bool noRoom = segments.capacity() == 0;
        ColumnBuilder builder(segments, req_.min_band_bytes);
        for (size_t k = from; k < to; ++k) {
            LayoutColumn& c = out_.columns[k];
            const bool changed = k == from || sweep.advance(k - from);
            if (!changed) {
                // The same live set: the same segments.
                c.first = out_.columns[k - 1].first;
                c.last = out_.columns[k - 1].last;
                c.total = out_.columns[k - 1].total;
                continue;
            }
            c.first = uint32_t(segments.size());
            c.total = builder.build(sweep.live(), sweep.takeFirstChanged());
            c.last = uint32_t(segments.size());
            if (k == from) makeRoomForSweep(segments, noRoom, from, to, c);
        }
        return sweep.work();
    }

    // Room for the rest at the first column's size and a quarter: growing by
    // doubling copied megabytes a frame, and pages reserved but never written
    // cost nothing. The layout's own segments, when they start with no room,
    // get room for every column, so that the pieces after the first are
    // appended without moving them. A room that earlier frames left
    // (buffers) is kept as it is: it holds the pieces, or the join makes what
    // room is missing, and moving to a room as large as this guess would
    // write every segment into fresh pages.
    void makeRoomForSweep(std::vector<LayoutSegment>& segments, bool noRoom, size_t from, size_t to,
                          const LayoutColumn& first) const {
        const size_t room = &segments == &out_.segments && noRoom ? columns_ - from : to - from;
        makeRoom(segments, segments.size() + room * (first.last - first.first) * 5 / 4);
    }

    const DeviceTimeline& tl_;
    const AllocationIndex& index_;
    const LayoutRequest& req_;
    AllocationLayout& out_;
    const size_t columns_;
};

// Segments of the pieces joined: what the first piece swept into the layout
// already, and what the others add.
size_t joinedSize(const AllocationLayout& out, const std::vector<LayoutPiece>& pieces,
                  const AllocationLayout* previous, const Reuse& reuse) {
    size_t joined = out.segments.size();
    for (const LayoutPiece& p : pieces) {
        if (p.copied)
            joined += previous->columns[reuse.at + reuse.count - 1].last -
                      previous->columns[reuse.at].first;
        else if (&p != &pieces.front())
            joined += p.segments.size();
    }
    return joined;
}

// The copied piece: `previous`'s block of segments for its columns, appended,
// and the columns pointed at it.
void appendCopiedPiece(AllocationLayout& out, LayoutPiece& p, const AllocationLayout& previous,
                       const Reuse& reuse) {
    const auto offset = uint32_t(out.segments.size());
    const std::span<const LayoutSegment> from = previous.drawnSegments();
    const uint32_t first = previous.columns[reuse.at].first;
    const uint32_t last = previous.columns[reuse.at + reuse.count - 1].last;
    out.segments.insert(out.segments.end(), from.begin() + first, from.begin() + last);
    for (size_t k = p.from; k < p.to; ++k) {
        const LayoutColumn& was = previous.columns[reuse.at + (k - p.from)];
        LayoutColumn& c = out.columns[k];
        c.first = was.first - first + offset;
        c.last = was.last - first + offset;
        c.total = was.total;
    }
    p.work = last - first;
    out.reused_columns = reuse.count;
}

// A swept piece after the first: its segments appended, its columns moved
// past the segments before them.
void appendSweptPiece(AllocationLayout& out, const LayoutPiece& p) {
    const auto offset = uint32_t(out.segments.size());
    out.segments.insert(out.segments.end(), p.segments.begin(), p.segments.end());
    for (size_t k = p.from; k < p.to; ++k) {
        out.columns[k].first += offset;
        out.columns[k].last += offset;
    }
}

// The pieces, in order, as the layout's segments, and their work added up.
// One room for all the pieces: appending them one by one grew the segments
// by doubling, a copy of megabytes into fresh pages each time.
void joinPieces(AllocationLayout& out, std::vector<LayoutPiece>& pieces,
                const AllocationLayout* previous, const Reuse& reuse) {
    makeRoom(out.segments, joinedSize(out, pieces, previous, reuse));
    for (LayoutPiece& p : pieces) {
        if (p.copied)
            appendCopiedPiece(out, p, *previous, reuse);
        else if (&p != &pieces.front())
            appendSweptPiece(out, p);
        out.work += p.work;
    }
}

// The highest column, and the segments read, counted as work.
void addColumnTotals(AllocationLayout& out) {
    for (const LayoutColumn& c : out.columns) {
        out.max_total = std::max(out.max_total, c.total);
        out.work += c.last - c.first;
    }
}

}  // namespace

AllocationLayout layoutAllocations(const DeviceTimeline& tl, const AllocationIndex& index,
                                   const LayoutRequest& req, const AllocationLayout* previous,
                                   LayoutBuffers* buffers) {
    AllocationLayout out;
    const int64_t lo = std::min(req.lo, req.hi);
    int64_t hi = std::max(req.lo, req.hi);
    if (!indexMatches(tl, index)) return out;  // another timeline's
    if (hi == lo) {
        if (lo == std::numeric_limits<int64_t>::max()) return out;
        hi = lo + 1;
    }
    const SweepEstimate estimate = estimateSweep(tl, index, req, lo, hi);
    out.column_width = estimate.columnWidth;
    if (auto read = readFromPyramid(tl, index, req, lo, hi, estimate)) return std::move(*read);
    if (buffers) out.segments = buffers->take();
    const size_t count = (estimate.wanted + out.column_width - 1) / out.column_width;
    placeColumns(out, tl, index, req, lo, hi, count);
    const size_t columns = out.columns.size();

    const Reuse reuse = previous ? reusableColumns(out, *previous) : Reuse{};
    const size_t expectedWork =
        std::min(columns * estimate.liveEstimate, estimate.budget) + estimate.startsIn;
    std::vector<LayoutPiece> pieces = planPieces(reuse, columns, expectedWork);
    std::vector<LayoutPiece*> swept;
    for (LayoutPiece& p : pieces)
        if (!p.copied) swept.push_back(&p);
    LayoutPiece* second = lendSecondRoom(pieces, swept, buffers);
    ColumnSweeper(tl, index, req, out).sweepPieces(pieces, swept, reuse.count, expectedWork);
    joinPieces(out, pieces, previous, reuse);
    if (buffers && second) {
        buffers->piece() = std::move(second->segments);
        buffers->piece().clear();
    }
    addColumnTotals(out);
    return out;
}

std::vector<uint32_t> mostDrawnSites(const AllocationLayout& layout, size_t count) {
    const auto& cols = layout.columns;
    const std::span<const LayoutSegment> segments = layout.drawnSegments();
    // Columns sharing their segments are one group, weighed once by its width.
    std::vector<std::pair<size_t, size_t>> groups;  // columns [first, end)
    size_t total = 0;
    for (size_t k = 0; k < cols.size();) {
        size_t end = k + 1;
        while (end < cols.size() && cols[end].first == cols[k].first &&
               cols[end].last == cols[k].last)
            ++end;
        groups.emplace_back(k, end);
        total += cols[k].last - cols[k].first;
        k = end;
    }
    // A legend needs the large sites, not every byte: past kLegendSegments
    // segments, one group in `stride` stands for the window it opens. (At
    // 200,000 this read 6 MB of segments per frame, a millisecond and more.)
    constexpr size_t kLegendSegments = 64'000;
    const size_t stride = std::max<size_t>(1, (total + kLegendSegments - 1) / kLegendSegments);
    std::vector<double> area;  // bytes x run-x: doubles keep the order of sites
    for (size_t g = 0; g < groups.size(); g += stride) {
        const size_t first = groups[g].first;
        const size_t windowEnd = groups[std::min(groups.size(), g + stride) - 1].second;
        const double width = double(cols[windowEnd - 1].x1) - double(cols[first].x0);
        const uint32_t begin = cols[first].first;
        for (uint32_t i = begin; i < cols[first].last && i < segments.size(); ++i) {
            const LayoutSegment& s = segments[i];
            if (s.site >= area.size()) area.resize(size_t(s.site) + 1, 0);
            area[s.site] += double(s.top - segmentBottom(segments, begin, i)) * width;
        }
    }
    std::vector<uint32_t> sites;
    for (uint32_t s = 0; s < area.size(); ++s)
        if (area[s] > 0) sites.push_back(s);
    const size_t n = std::min(count, sites.size());
    std::partial_sort(sites.begin(), sites.begin() + ptrdiff_t(n), sites.end(),
                      [&](uint32_t a, uint32_t b) { return area[a] > area[b]; });
    sites.resize(n);
    return sites;
}

const LayoutColumn* columnAt(const AllocationLayout& layout, int64_t x) {
    const auto& cols = layout.columns;
    auto it = std::upper_bound(cols.begin(), cols.end(), x,
                               [](int64_t v, const LayoutColumn& c) { return v < c.x0; });
    if (it == cols.begin()) return nullptr;
    --it;
    return x < it->x1 ? &*it : nullptr;
}

const LayoutSegment* segmentAt(const AllocationLayout& layout, int64_t x, double bytes) {
    const LayoutColumn* c = columnAt(layout, x);
    if (!c || !(bytes >= 0)) return nullptr;
    const std::span<const LayoutSegment> segments = layout.drawnSegments();
    if (c->last > segments.size() || c->first > c->last) return nullptr;
    const auto begin = segments.begin() + c->first;
    const auto end = segments.begin() + c->last;
    // The stack has no gaps: the first segment whose top is above `bytes`
    // holds it.
    const auto it = std::upper_bound(
        begin, end, bytes, [](double v, const LayoutSegment& s) { return v < double(s.top); });
    if (it == end) return nullptr;
    return &*it;
}

std::optional<uint32_t> allocationAt(const DeviceTimeline& tl, const AllocationLayout& layout,
                                     int64_t x, double bytes) {
    const LayoutSegment* s = segmentAt(layout, x, bytes);
    if (!s) return std::nullopt;
    if (s->interval >= 0) return uint32_t(s->interval);
    // Inside an aggregate: the column's stack, stacked as the layout stacked it.
    const LayoutColumn* c = columnAt(layout, x);
    uint64_t acc = 0;
    for (uint32_t i : stackedAt(tl, ViewMode::Allocation, c->sample)) {
        acc += clampedSize(acc, tl.intervals[i].size);
        if (bytes < double(acc)) return i;
    }
    return std::nullopt;
}

}  // namespace memscope
