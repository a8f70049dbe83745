#pragma once
// The policy map: one point per compared run, peak memory against step time,
// with the frontier (core's policy_frontier.h: no other run both smaller and
// faster) drawn through its points. Predicted runs (the what-if) are hollow
// diamonds beside the measured runs' circles, with their own legend entry. Hovering a point shows
// the run's peak composition; clicking it asks for the run to be opened.

#include <QWidget>
#include <vector>

#include "compare/summary_model.h"
#include "memscope/whatif/policy_frontier.h"

class QCustomPlot;
class QLabel;
class QMouseEvent;

namespace memscope::gui {

class PolicyMap : public QWidget {
    Q_OBJECT
public:
    explicit PolicyMap(QWidget* parent = nullptr);
    void setEntries(const std::vector<CompareEntry>& entries);
    bool exportTo(const QString& path, QString* error);

    // The points drawn (runs with a step time), their entries and frontier flags.
    size_t pointCount() const { return points_.size(); }
    int entryOfPoint(size_t point) const { return entry_of_point_[point]; }
    bool onFrontier(size_t point) const { return frontier_[point]; }
    // Whether a point is a predicted run's (drawn as a hollow diamond).
    bool isPredicted(size_t point) const { return predicted_[point]; }
    size_t predictedCount() const;
    // The point within a few pixels of `pixel` (plot coordinates), else -1.
    int pointAt(const QPointF& pixel) const;
    // Where a point is drawn, in plot coordinates.
    QPointF pixelOf(size_t point) const;
    // The hover text: name, peak, step time, frontier, composition at the peak.
    QString describe(size_t point) const;
    QCustomPlot* plot() const { return plot_; }

signals:
    void runActivated(int entry);  // index into the entries given

protected:
    void changeEvent(QEvent* event) override;

private:
    void onMouseMove(QMouseEvent* event);
    void onMousePress(QMouseEvent* event);

    QCustomPlot* plot_ = nullptr;
    QLabel* note_ = nullptr;
    std::vector<CompareEntry> entries_;
    std::vector<PolicyPoint> points_;
    std::vector<int> entry_of_point_;
    std::vector<bool> frontier_;
    std::vector<bool> predicted_;  // parallel to points_
};

}  // namespace memscope::gui
