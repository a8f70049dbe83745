#pragma once
// The difference of two runs' live memory on the compare axis (core's
// differenceCurve), redrawn for the shared visible range.

#include <QWidget>

#include "loading/run.h"
#include "memscope/analysis/compare.h"

class QCustomPlot;
class QCPGraph;

namespace memscope::gui {

class ZoomState;

class DifferencePlot : public QWidget {
    Q_OBJECT
public:
    explicit DifferencePlot(QWidget* parent = nullptr);
    struct Side {
        RunPtr run;
        DeviceRef device;
        AxisMap map;
        QString name;
    };
    void setRuns(const Side& a, const Side& b, const QString& xLabel);
    void setZoomState(ZoomState* zoom);
    bool exportTo(const QString& path, QString* error);
    size_t pointCount() const { return points_; }

protected:
    void changeEvent(QEvent* event) override;

private:
    void rebuild();
    QCustomPlot* plot_ = nullptr;
    QCPGraph* graph_ = nullptr;
    ZoomState* zoom_ = nullptr;
    Side a_, b_;
    size_t points_ = 0;
};

}  // namespace memscope::gui
