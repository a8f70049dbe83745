#pragma once
// The compare view's "Lines" tab: bytes by source line at each run's peak
// (core's linesAtPeak), the runs side by side, a line matched across runs by
// function, file name and line (core's compareLines), and a last row of each
// run's peak that its column adds up to. A click on a line asks for its
// allocations to be highlighted in every run's plot.

#include <QWidget>
#include <vector>

#include "compare/summary_model.h"
#include "memscope/analysis/line_compare.h"

class QLabel;
class QTableWidget;

namespace memscope::gui {

class LineComparePanel : public QWidget {
    Q_OBJECT
public:
    static constexpr int RawRole = Qt::UserRole + 1;  // a bytes cell's number

    explicit LineComparePanel(QWidget* parent = nullptr);
    // The runs as the compare table holds them.
    void setEntries(const std::vector<CompareEntry>& entries);
    const LinesCompared& lines() const { return lines_; }
    QTableWidget* table() const { return table_; }
    // The column of run `run`'s bytes (its count is the next).
    static int bytesColumn(int run) { return 2 + 2 * run; }
    QString headline() const;
    // What a click on row `row` (lines().rows order) does (tests).
    void activateRow(int row);

signals:
    // A line was clicked: its allocations in each run (parallel to the
    // entries, DeviceTimeline::intervals); every one empty to clear.
    void highlightRequested(std::vector<std::vector<uint32_t>> intervals);

private:
    std::vector<CompareEntry> entries_;
    LinesCompared lines_;
    QLabel* head_ = nullptr;
    QTableWidget* table_ = nullptr;
};

}  // namespace memscope::gui
