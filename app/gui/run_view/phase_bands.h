#pragma once
// The phase strip under a timeline (its data: memscope/view/phase_bands.h),
// painted with a plain QPainter so that it draws the same in the plot, in
// exports and in screenshots.

#include <QColor>
#include <QPainter>
#include <QPalette>
#include <QRgb>
#include <QString>

#include "memscope/analysis/compare.h"
#include "memscope/view/phase_bands.h"

namespace memscope::gui {

// The colour an item is painted in (paler where memscope inferred the phase).
QRgb phaseBandColor(const PhaseBandItem& item);

// Paints the items visible in [x0, x1] (shared axis) into `area`.
void paintPhaseBands(QPainter& painter, const QRectF& area, const PhaseBandData& data,
                     const AxisMap& map, double x0, double x1, const QPalette& palette);

// The names of the phases under shared x (innermost row last), for hover text.
QString phasesAt(const PhaseBandData& data, const AxisMap& map, double x);

}  // namespace memscope::gui
