#pragma once
// The phase strip under a timeline: steps, forward/backward/optimizer, blocks
// and recomputation, and annotations, one row each. Built once per run; painted
// with a plain QPainter so that it draws the same in the plot, in exports and
// in screenshots.

#include <QColor>
#include <QPainter>
#include <QPalette>
#include <QRgb>
#include <QString>
#include <array>
#include <vector>

#include "memscope/analysis/compare.h"
#include "memscope/view/first_reaching.h"
#include "memscope/model/trace.h"

namespace memscope::gui {

// Small and trivially copyable: a 10 M event trace has 180,000 phases, and
// a QString and a QColor per item made building them (conversions, mallocs,
// a sort moving strings) 40 ms of the first paint.
struct PhaseBandItem {
    int64_t start = 0;
    int64_t end = 0;    // == start for instant annotations
    uint32_t name = 0;  // index into PhaseBandData::names
    QRgb color = 0;
    uint8_t row = 0;
};

struct PhaseBandData {
    static constexpr int kRows = 4;  // step, pass, block/recompute, ranges+annotations
    std::vector<QString> names;      // each distinct label once
    // Per row: its items by start, side by side in memory (a frame visits a
    // few per pixel column, and scattered they were a cache miss each), and a
    // search over their ends, so painting and hovering start at the first
    // item that can reach the view, and painting steps over the items hidden
    // under pixels already painted, instead of walking every phase.
    std::array<std::vector<PhaseBandItem>, kRows> rows;
    std::array<FirstReaching, kRows> row_reach;
    size_t itemCount() const;
    bool empty() const { return itemCount() == 0; }
    const QString& nameOf(const PhaseBandItem& item) const { return names[item.name]; }
    // The first position in rows[row] whose item ends at or after x.
    size_t firstReaching(int row, int64_t x) const { return nextReaching(row, 0, x); }
    // The same, from position `from` on.
    size_t nextReaching(int row, size_t from, int64_t x) const {
        return row_reach[size_t(row)].find(from, x);
    }
};

PhaseBandData buildPhaseBands(const Trace& trace, int16_t device);

// Paints the items visible in [x0, x1] (shared axis) into `area`.
void paintPhaseBands(QPainter& painter, const QRectF& area, const PhaseBandData& data,
                     const AxisMap& map, double x0, double x1, const QPalette& palette);

// The names of the phases under shared x (innermost row last), for hover text.
QString phasesAt(const PhaseBandData& data, const AxisMap& map, double x);

}  // namespace memscope::gui
