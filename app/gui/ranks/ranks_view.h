#pragma once
// The Ranks view of a multi-rank run: a rank x time heat map of live memory
// (one row per rank, each on its own clock, readable at a thousand rows),
// each rank's peak as a bar of its composition, and the imbalance in words.
// Everything it shows is core's (RankDigest, rankHeatMap, rankImbalance), so
// `memscope-cli summary FOLDER` prints the same figures. Hover names the rank,
// the time, the live bytes and the step; a click opens that rank as a run.

#include <QWidget>
#include <memory>

#include "loading/run.h"
#include "memscope/ranks/rank_heatmap.h"

class QCustomPlot;
class QLabel;
class QMouseEvent;

namespace memscope::gui {

class RanksView : public QWidget {
    Q_OBJECT
public:
    explicit RanksView(RunPtr run, QWidget* parent = nullptr);

    RunPtr run() const { return run_; }
    const RankHeatMap& heatMap() const { return heat_; }
    const std::vector<RankDigest>& shownRanks() const { return shown_; }
    QString imbalanceText() const;
    // The tooltip text at a heat-map cell (tests, hover).
    QString describeCell(size_t row, size_t column) const;

signals:
    // A rank was clicked: its trace's path, for the window to open.
    void openRankRequested(const QString& path);

private:
    void buildHeatMap();
    void buildPeakBars();
    // The row and column under a position of the heat map, if any.
    bool cellAt(const QPointF& pos, size_t& row, size_t& column) const;

    RunPtr run_;
    std::vector<RankDigest> shown_;  // the compared ranks (comparedRanks), one row each
    RankHeatMap heat_;
    QLabel* imbalance_ = nullptr;
    QCustomPlot* heatPlot_ = nullptr;
    QCustomPlot* peaksPlot_ = nullptr;
};

}  // namespace memscope::gui
