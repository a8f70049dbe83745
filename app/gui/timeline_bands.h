#pragma once
// What the timeline plot draws for one visible range: stacked bands (by
// category, or the largest allocations as their own bands over the rest) and
// the reserved line, built only from StepSeries::levelOfDetail and a bounded
// list of large intervals, so the cost per frame depends on the plot's width,
// never on the trace size.

#include <QColor>
#include <QString>
#include <cstdint>
#include <vector>

#include "memscope/alignment.h"
#include "memscope/allocation_order.h"
#include "memscope/timeline.h"

namespace memscope::gui {

struct Band {
    QString label;
    QColor color;
    int64_t key = -1;        // category index, or interval index; -1 = the rest
    std::vector<double> ys;  // top edge (cumulative), parallel to BandSet::xs
    // The columns worth drawing, [begin, end): a by-allocation band only over
    // its lifetime.
    size_t begin = 0;
    size_t end = SIZE_MAX;
    // By category: memscope inferred (some of) these bytes' category; drawn
    // hatched and named so, never mixed silently with recorded ones.
    bool inferred = false;
};

struct BandSet {
    std::vector<double> xs;          // shared-axis x, ascending
    std::vector<Band> bands;         // bottom first
    std::vector<double> reserved_x;  // shared-axis x
    std::vector<double> reserved_y;
    std::vector<uint32_t> shown;  // by-allocation: intervals with their own band, bottom first
    double y_max = 0;             // highest value drawn
};

struct BandRequest {
    StackMode mode = StackMode::ByCategory;
    double x0 = 0, x1 = 1;     // visible shared-axis range
    size_t max_points = 2000;  // about twice the plot width in pixels
    int max_bands = 64;        // by-allocation: own bands at most
};

BandSet computeBands(const DeviceTimeline& tl, const std::vector<uint32_t>* largest,
                     const AxisMap& map, const BandRequest& request);

}  // namespace memscope::gui
