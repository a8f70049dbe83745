#pragma once
// Colours a plot from the widget palette, so plots follow the system theme
// (dark too) and re-colour when it changes.

#include <QPalette>
#include <QSharedPointer>

class QCustomPlot;
class QCPAxisTicker;

namespace memscope::gui {

void applyPlotPalette(QCustomPlot* plot, const QPalette& palette);
// Byte labels on binary steps (1, 2, 4 ... of KiB/MiB/GiB), for value axes.
QSharedPointer<QCPAxisTicker> byteTicker();
// A dark Fusion palette for `memscope --dark` (platforms without a dark theme).
QPalette darkPalette();

}  // namespace memscope::gui
