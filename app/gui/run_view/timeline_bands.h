#pragma once
// What the timeline plot draws for one visible range: stacked bands by
// category or by module group (module_stack.h) and the reserved line, built
// only from StepSeries::levelOfDetail,
// so the cost per frame depends on the plot's width, never on the trace size.
// By allocation, the bands come from core's allocation layout
// (allocation_layout.h, drawn by allocation_layer.h); here only the reserved
// line and the visible maximum.

#include <QColor>
#include <QString>
#include <cstdint>
#include <vector>

#include "memscope/analysis/alignment.h"
#include "memscope/timeline/timeline.h"
#include "memscope/view/allocation_order.h"
#include "memscope/view/module_stack.h"

namespace memscope::gui {

struct Band {
    QString label;
    QColor color;
    int64_t key = -1;        // category index; by module, index into ModuleStack::groups
    std::vector<double> ys;  // top edge (cumulative), parallel to BandSet::xs
    // The columns worth drawing, [begin, end).
    size_t begin = 0;
    size_t end = SIZE_MAX;
    // By category: memscope inferred (some of) these bytes' category; by
    // module: the trace's modules are inferred. Drawn hatched and named so,
    // never mixed silently with recorded ones.
    bool inferred = false;
};

struct BandSet {
    std::vector<double> xs;          // shared-axis x, ascending
    std::vector<Band> bands;         // bottom first
    std::vector<double> total;       // the live total at each of xs, in every mode
    std::vector<double> reserved_x;  // shared-axis x
    std::vector<double> reserved_y;
    double y_max = 0;  // highest value drawn (by allocation: the live total's)
};

struct BandRequest {
    ViewMode mode = ViewMode::Category;
    double x0 = 0, x1 = 1;     // visible shared-axis range
    size_t max_points = 2000;  // about twice the plot width in pixels
    // By module: the groups to stack (none: only the live total is drawn).
    const ModuleStack* modules = nullptr;
};

BandSet computeBands(const DeviceTimeline& tl, const AxisMap& map, const BandRequest& request);

// The value in force at each of `xs` (ascending) of a step function given by
// level-of-detail points: how a band's reduction is read at the total's columns.
void sampleInto(const std::vector<SeriesPoint>& lod, const std::vector<int64_t>& xs,
                std::vector<double>& out);

}  // namespace memscope::gui
