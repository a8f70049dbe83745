#include "compare/difference_plot.h"

#include <qcustomplot.h>

#include <QVBoxLayout>

#include "common/format.h"
#include "common/plot_export.h"
#include "common/plot_style.h"
#include "run_view/zoom_state.h"

namespace memscope::gui {

DifferencePlot::DifferencePlot(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    plot_ = new QCustomPlot(this);
    layout->addWidget(plot_);
    plot_->yAxis->setTicker(byteTicker());
    graph_ = plot_->addGraph();
    graph_->setLineStyle(QCPGraph::lsStepLeft);
    graph_->setPen(QPen(QColor(0xe1, 0x57, 0x59), 1.5));
    graph_->setBrush(QColor(0xe1, 0x57, 0x59, 70));
    applyPlotPalette(plot_, palette());
}

void DifferencePlot::setRuns(const Side& a, const Side& b, const QString& xLabel) {
    a_ = a;
    b_ = b;
    plot_->xAxis->setLabel(xLabel);
    plot_->yAxis->setLabel(QStringLiteral("%1 − %2").arg(a.name, b.name));
    rebuild();
}

void DifferencePlot::setZoomState(ZoomState* zoom) {
    zoom_ = zoom;
    connect(zoom_, &ZoomState::rangeChanged, this, &DifferencePlot::rebuild);
    rebuild();
}

void DifferencePlot::rebuild() {
    const DeviceTimeline* ta = a_.run ? a_.run->timeline(a_.device) : nullptr;
    const DeviceTimeline* tb = b_.run ? b_.run->timeline(b_.device) : nullptr;
    if (!ta || !tb || !zoom_) {
        graph_->data()->clear();
        points_ = 0;
        plot_->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    const auto curve = differenceCurve(ta->live, a_.map, tb->live, b_.map, zoom_->begin(),
                                       zoom_->end(), size_t(std::max(200, plot_->width())));
    QVector<QCPGraphData> data(qsizetype(curve.size()));
    double lo = 0, hi = 1;
    for (size_t i = 0; i < curve.size(); ++i) {
        data[qsizetype(i)] = QCPGraphData(curve[i].x, double(curve[i].y));
        lo = std::min(lo, double(curve[i].y));
        hi = std::max(hi, double(curve[i].y));
    }
    points_ = curve.size();
    graph_->data()->set(data, true);
    plot_->xAxis->setRange(zoom_->begin(), zoom_->end());
    const double pad = (hi - lo) * 0.08;
    plot_->yAxis->setRange(lo - pad, hi + pad);
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

bool DifferencePlot::exportTo(const QString& path, QString* error) {
    return exportPlot(plot_, path, error);
}

void DifferencePlot::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) applyPlotPalette(plot_, palette());
}

}  // namespace memscope::gui
