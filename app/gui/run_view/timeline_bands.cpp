#include "run_view/timeline_bands.h"

#include <algorithm>
#include <array>

#include "common/category_colors.h"
#include "common/format.h"
#include "memscope/base/parallel_for.h"
#include "memscope/base/units.h"

namespace memscope::gui {

namespace {

void addReserved(BandSet& out, const std::vector<SeriesPoint>& lod, const AxisMap& map) {
    for (const SeriesPoint& p : lod) {
        out.reserved_x.push_back(map.forward(p.x));
        out.reserved_y.push_back(double(p.y));
        out.y_max = std::max(out.y_max, double(p.y));
    }
}

// The reductions a frame needs, computed before any is used: they only read
// the timeline, so on a large trace they run on every core (a zoomed-out
// frame of a 10 M event trace reduces ten series of millions of points, a
// third of the frame on one core).
class Reductions {
public:
    Reductions(int64_t lo, int64_t hi) : lo_(lo), hi_(hi) {}
    // Returns the index of the series' reduction to `points` points.
    size_t add(const StepSeries& series, size_t points) {
        jobs_.push_back({&series, points, {}});
        work_ += series.size();
        return jobs_.size() - 1;
    }
    void run() {
        // Below this many points in all, a thread costs more than it saves.
        constexpr size_t kParallelPoints = 200'000;
        const auto reduce = [this](size_t i) {
            jobs_[i].lod = jobs_[i].series->levelOfDetail(lo_, hi_, jobs_[i].points);
        };
        if (work_ >= kParallelPoints) {
            parallelFor(jobs_.size(), 0, reduce);
        } else {
            for (size_t i = 0; i < jobs_.size(); ++i) reduce(i);
        }
    }
    const std::vector<SeriesPoint>& operator[](size_t i) const { return jobs_[i].lod; }

private:
    struct Job {
        const StepSeries* series;
        size_t points;
        std::vector<SeriesPoint> lod;
    };
    int64_t lo_, hi_;
    std::vector<Job> jobs_;
    size_t work_ = 0;
};

}  // namespace

// The value in force at each of `xs` (ascending) of a step function given by
// level-of-detail points, by one forward walk: no search in the full series.
void sampleInto(const std::vector<SeriesPoint>& lod, const std::vector<int64_t>& xs,
                std::vector<double>& out) {
    out.resize(xs.size());
    size_t j = 0;
    double v = lod.empty() ? 0.0 : double(lod.front().y);
    for (size_t k = 0; k < xs.size(); ++k) {
        while (j < lod.size() && lod[j].x <= xs[k]) v = double(lod[j++].y);
        out[k] = v;
    }
}

namespace {

QColor moduleBandColor(const ModuleStackGroup& g, size_t shown) {
    if (g.other) return QColor(0x70, 0x70, 0x70);
    if (g.module.isNull()) return QColor(0xa8, 0xa8, 0xa8);  // outside: grey, as "unknown"
    // Neighbouring layers must stay apart: Tableau 10's hues in order, then
    // their lighter partners (the band cap is 12). Greys are taken above.
    static const std::array<QRgb, 18> palette = {
        0x4e79a7, 0xf28e2b, 0xe15759, 0x76b7b2, 0x59a14f, 0xedc948, 0xb07aa1, 0xff9da7, 0x9c755f,
        0xa0cbe8, 0xffbe7d, 0xff9d9a, 0x86bcb6, 0x8cd17d, 0xf1ce63, 0xd4a6c8, 0xfabfd2, 0xd7b5a6};
    return QColor(palette[shown % palette.size()]);
}

// One band per group of the module stack, as the category bands are made:
// each group's series reduced to about n/2 points, sampled at the total's
// columns, capped by the total, the top edge the exact total.
void addModuleBands(BandSet& out, const ModuleStack& stack, const std::vector<int64_t>& src,
                    const std::vector<double>& total, const Reductions& reduced,
                    size_t first_group) {
    std::vector<double> acc(src.size(), 0.0), value;
    size_t shown = 0;
    for (size_t k = 0; k < stack.groups.size(); ++k) {
        const ModuleStackGroup& g = stack.groups[k];
        QString label = toQString(g.path);
        if (g.other) label = QStringLiteral("%1 other modules").arg(g.members);
        Band b{label, moduleBandColor(g, shown), int64_t(k), {}};
        if (!g.other && !g.module.isNull()) ++shown;
        if (stack.source == ModuleSource::Inferred && !g.module.isNull()) {
            b.inferred = true;
            b.label += QStringLiteral(" (inferred)");
        }
        sampleInto(reduced[first_group + k], src, value);
        b.ys.resize(src.size());
        for (size_t i = 0; i < src.size(); ++i) {
            acc[i] = std::min(acc[i] + value[i], total[i]);
            b.ys[i] = acc[i];
        }
        out.bands.push_back(std::move(b));
    }
    if (!out.bands.empty()) out.bands.back().ys = total;
}

}  // namespace

BandSet computeBands(const DeviceTimeline& tl, const AxisMap& map, const BandRequest& req) {
    BandSet out;
    const int64_t lo = map.inverse(req.x0);
    const int64_t hi = std::max(addSaturating(map.inverse(req.x1), 1), addSaturating(lo, 1));
    const size_t n = std::max<size_t>(req.max_points, 4);
    // Everything below comes from levelOfDetail: its cost depends on n, not on
    // the trace size. The total is exact at its points; the bands inside it
    // use coarser reductions, fine at pixel scale, and never exceed the total.
    const size_t nBand = std::max<size_t>(n / 2, 4);
    Reductions reduced(lo, hi);
    const size_t totalJob = reduced.add(tl.live, n);
    const bool hasReserved = !(tl.reserved.empty() && tl.reserved.initial == 0);
    const size_t reservedJob = hasReserved ? reduced.add(tl.reserved, n) : 0;
    const size_t firstBandJob = totalJob + 1 + (hasReserved ? 1 : 0);
    std::vector<Category> categories;  // those with a band, bottom first
    const ModuleStack* modules = req.mode == ViewMode::Module ? req.modules : nullptr;
    if (modules) {
        for (const ModuleStackGroup& g : modules->groups) reduced.add(g.live, nBand);
    } else if (req.mode == ViewMode::Category) {
        for (Category c : kAllCategories) {
            const StepSeries& s = tl.live_by_category[size_t(index(c))];
            if (s.empty() && s.initial == 0) continue;  // never used: no band, no legend entry
            categories.push_back(c);
            reduced.add(s, nBand);
        }
    }
    reduced.run();

    const std::vector<SeriesPoint>& lod = reduced[totalJob];
    std::vector<int64_t> src;  // run-x of every column
    src.reserve(lod.size());
    for (const SeriesPoint& p : lod) src.push_back(p.x);
    std::vector<double> total;
    sampleInto(lod, src, total);

    out.xs.reserve(src.size());
    for (int64_t x : src) out.xs.push_back(map.forward(x));
    out.total = total;  // a predicted run's hatching covers it, whatever is stacked

    if (modules) {
        addModuleBands(out, *modules, src, total, reduced, firstBandJob);
    } else if (req.mode == ViewMode::Category) {
        std::vector<double> acc(src.size(), 0.0), value;
        for (size_t j = 0; j < categories.size(); ++j) {
            const Category c = categories[j];
            const CategorySources sources = tl.category_sources[size_t(index(c))];
            Band b{categoryLabel(c), categoryColor(c), index(c), {}};
            if (sources.inferred) {
                b.inferred = true;
                b.label += sources.recorded ? QStringLiteral(" (partly inferred)")
                                            : QStringLiteral(" (inferred)");
            }
            sampleInto(reduced[firstBandJob + j], src, value);
            b.ys.resize(src.size());
            for (size_t k = 0; k < src.size(); ++k) {
                acc[k] = std::min(acc[k] + value[k], total[k]);
                b.ys[k] = acc[k];
            }
            out.bands.push_back(std::move(b));
        }
        // The top edge is the exact total (sub-pixel differences between the
        // reductions go to the top band).
        if (!out.bands.empty()) out.bands.back().ys = total;
    } else {
        // By allocation the layout draws the bands; the total sets the scale.
        for (double y : total) out.y_max = std::max(out.y_max, y);
    }
    if (!out.bands.empty())
        for (double y : out.bands.back().ys) out.y_max = std::max(out.y_max, y);
    for (const Band& b : out.bands)
        for (size_t k = b.begin; k < std::min(b.end, b.ys.size()); ++k)
            out.y_max = std::max(out.y_max, b.ys[k]);
    if (hasReserved) addReserved(out, reduced[reservedJob], map);
    return out;
}

}  // namespace memscope::gui
