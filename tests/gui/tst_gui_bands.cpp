// The by-category bands of one visible range (timeline_bands.h) on a trace
// large enough that their reductions run on several threads: each band is its
// own category's reduction, stacked and capped by the total, the top edge the
// exact total, the reserved line the reserved series' reduction.
#include <QtTest>
#include <algorithm>

#include "loading/run_loader.h"
#include "run_view/band_cache.h"
#include "run_view/timeline_bands.h"

using namespace memscope;
using namespace memscope::gui;

namespace {

// 120,000 allocations of three categories, each freed a few allocations
// later, and one segment: a live series of 240,000 points (past the
// threshold where the reductions go parallel).
Trace makeLargeTrace() {
    Trace t;
    t.metadata.name = "large";
    t.metadata.source_format = "test";
    const Category categories[] = {Category::Activation, Category::Gradient, Category::Temporary};
    Event segment;
    segment.kind = EventKind::SegmentAlloc;
    segment.address = 0x100000;
    segment.size = 1ull << 30;
    t.events.push_back(segment);
    constexpr int kAllocations = 120000;
    constexpr int kLifetime = 5;
    for (int i = 0; i < kAllocations + kLifetime; ++i) {
        if (i < kAllocations) {
            Event e;
            e.time = 10 * int64_t(i) + 1;
            e.kind = EventKind::Alloc;
            e.address = 0x100000 + 4096 * uint64_t(i % 64);
            e.size = 512 * uint64_t(1 + (i * 7919) % 97);
            e.category = categories[i % 3];
            t.events.push_back(e);
        }
        if (i >= kLifetime) {
            Event f = t.events[size_t(i - kLifetime) + 1];
            f.time = 10 * int64_t(i) + 6;
            f.kind = EventKind::FreeCompleted;
            t.events.push_back(f);
        }
    }
    return t;
}

}  // namespace

class BandsTest : public QObject {
    Q_OBJECT
private slots:
    void eachBandIsItsOwnCategoryStackedUnderTheTotal() {
        auto run = makeRun(makeLargeTrace(), QStringLiteral("large.memscope"));
        QVERIFY2(run.ok(), run.ok() ? "" : run.message().c_str());
        const DeviceTimeline* tl = (*run)->timeline((*run)->busiestDevice());
        QVERIFY(tl);
        QVERIFY(tl->live.size() >= 200000);
        const AxisMap map = AxisMap::linear(tl->start, 1.0);
        BandRequest req;
        req.mode = ViewMode::Category;
        req.x0 = map.forward(tl->start + (tl->end - tl->start) / 7);
        req.x1 = map.forward(tl->end - (tl->end - tl->start) / 5);
        req.max_points = 1800;
        const BandSet set = computeBands(*tl, map, req);

        // What each band must be, computed here one series at a time.
        const int64_t lo = map.inverse(req.x0);
        const int64_t hi = std::max(map.inverse(req.x1) + 1, lo + 1);
        const std::vector<SeriesPoint> totalLod = tl->live.levelOfDetail(lo, hi, req.max_points);
        std::vector<int64_t> src;
        for (const SeriesPoint& p : totalLod) src.push_back(p.x);
        std::vector<double> total;
        sampleInto(totalLod, src, total);
        QCOMPARE(set.total, total);
        QCOMPARE(set.xs.size(), src.size());

        QCOMPARE(int(set.bands.size()), 3);
        std::vector<double> acc(src.size(), 0.0), value;
        for (size_t j = 0; j < set.bands.size(); ++j) {
            const Band& b = set.bands[j];
            const StepSeries& s = tl->live_by_category[size_t(b.key)];
            sampleInto(s.levelOfDetail(lo, hi, req.max_points / 2), src, value);
            for (size_t k = 0; k < src.size(); ++k) acc[k] = std::min(acc[k] + value[k], total[k]);
            if (j + 1 < set.bands.size())
                QCOMPARE(b.ys, acc);
            else
                QCOMPARE(b.ys, total);  // the top edge is the exact total
        }
        // Bottom first in the categories' fixed order, whatever order they came in.
        std::vector<int64_t> keys, expected;
        for (const Band& b : set.bands) keys.push_back(b.key);
        for (Category c : kAllCategories)
            if (c == Category::Activation || c == Category::Gradient || c == Category::Temporary)
                expected.push_back(index(c));
        QCOMPARE(keys, expected);

        std::vector<double> reservedY;
        for (const SeriesPoint& p : tl->reserved.levelOfDetail(lo, hi, req.max_points))
            reservedY.push_back(double(p.y));
        QCOMPARE(set.reserved_y, reservedY);
        QCOMPARE(set.y_max, std::max(*std::max_element(total.begin(), total.end()),
                                     *std::max_element(reservedY.begin(), reservedY.end())));
    }

    // The last four ranges' bands are remembered, the same as computed; a
    // fifth range evicts the oldest, another mode is another range, and a
    // new source forgets them all.
    void theLastRangesBandsAreRememberedAsComputed() {
        auto run = makeRun(makeLargeTrace(), QStringLiteral("large.memscope"));
        QVERIFY2(run.ok(), run.ok() ? "" : run.message().c_str());
        const DeviceTimeline* tl = (*run)->timeline((*run)->busiestDevice());
        QVERIFY(tl);
        const AxisMap map = AxisMap::linear(tl->start, 1.0);
        auto request = [&](int k, ViewMode mode) {
            BandRequest req;
            req.mode = mode;
            req.x0 = map.forward(tl->start + (tl->end - tl->start) * k / 20);
            req.x1 = map.forward(tl->end - (tl->end - tl->start) * k / 20);
            req.max_points = 1200;
            return req;
        };
        BandCache cache;
        const BandRequest whole = request(0, ViewMode::Category);
        const BandSet first = cache.bands(*tl, map, whole, nullptr);
        const BandSet again = cache.bands(*tl, map, whole, nullptr);
        QCOMPARE(cache.computed(), size_t(1));
        const BandSet direct = computeBands(*tl, map, whole);
        QCOMPARE(again.xs, direct.xs);
        QCOMPARE(again.total, direct.total);
        QCOMPARE(again.reserved_y, direct.reserved_y);
        QCOMPARE(again.bands.size(), direct.bands.size());
        for (size_t j = 0; j < direct.bands.size(); ++j)
            QCOMPARE(again.bands[j].ys, direct.bands[j].ys);
        QCOMPARE(first.total, again.total);

        (void)cache.bands(*tl, map, request(0, ViewMode::Allocation), nullptr);
        QCOMPARE(cache.computed(), size_t(2));  // another mode
        for (int k = 1; k <= 3; ++k)
            (void)cache.bands(*tl, map, request(k, ViewMode::Category), nullptr);
        QCOMPARE(cache.computed(), size_t(5));
        (void)cache.bands(*tl, map, whole, nullptr);  // evicted by the fifth range
        QCOMPARE(cache.computed(), size_t(6));
        (void)cache.bands(*tl, map, request(3, ViewMode::Category), nullptr);
        QCOMPARE(cache.computed(), size_t(6));  // still held
        cache.clear();
        (void)cache.bands(*tl, map, whole, nullptr);
        QCOMPARE(cache.computed(), size_t(7));
    }
};

QTEST_MAIN(BandsTest)
#include "tst_gui_bands.moc"
