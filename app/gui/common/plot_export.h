#pragma once
// Saves a plot or any widget as PNG, SVG or PDF, chosen by the path's suffix.
// Plots export as vectors (QCustomPlot's own painter path); other widgets are
// rendered through QWidget::render.

#include <QString>

class QCustomPlot;
class QWidget;

namespace memscope::gui {

bool exportPlot(QCustomPlot* plot, const QString& path, QString* error);
bool exportWidget(QWidget* widget, const QString& path, QString* error);
// The file-dialog filter for the formats above.
QString plotExportFilter();

}  // namespace memscope::gui
