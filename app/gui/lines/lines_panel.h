#pragma once
// The "lines at peak" dock: core's linesAtPeak for the run view's device,
// one row per source line (the innermost frame of the user's code) with the
// layer that made most of its bytes, its bytes and count, then the lines
// beyond the table's length and the allocations without a user frame, so
// that the rows add up to the peak. A click on a line asks for its
// allocations to be highlighted in the plot.

#include <QWidget>
#include <vector>

#include "loading/run.h"
#include "memscope/analysis/source_lines.h"

class QLabel;
class QPushButton;
class QTableWidget;

namespace memscope::gui {

class LinesPanel : public QWidget {
    Q_OBJECT
public:
    enum Column { Line, Module, Bytes, Count, Share, ColumnCount };
    static constexpr int RawRole = Qt::UserRole + 1;  // Bytes, Count: the number

    explicit LinesPanel(QWidget* parent = nullptr);
    void setSource(RunPtr run, DeviceRef ref);
    void clear();

    QString headline() const;
    QTableWidget* table() const { return table_; }
    const LinesAtPeak& lines() const { return lines_; }
    // What a click on row `row` (lines().rows order) does (tests).
    void activateRow(int row);

signals:
    // A line was clicked: its allocations (DeviceTimeline::intervals); empty to clear.
    void allocationsHighlightRequested(memscope::gui::RunPtr run, memscope::gui::DeviceRef ref,
                                       std::vector<uint32_t> intervals);

private:
    QLabel* head_ = nullptr;
    QPushButton* clear_ = nullptr;
    QTableWidget* table_ = nullptr;
    RunPtr run_;
    DeviceRef ref_;
    LinesAtPeak lines_;
};

}  // namespace memscope::gui
