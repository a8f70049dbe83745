#pragma once
// The compare table: one row per run, figures from core's summarizeRun and
// compareToBaseline. Displays formatted text; RawRole gives the numbers that
// the CSV export writes.

#include <QAbstractTableModel>
#include <vector>

#include "memscope/compare.h"
#include "run.h"

namespace memscope::gui {

struct CompareEntry {
    RunPtr run;
    DeviceRef device;
    RunSummary summary;
};

class SummaryTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        Name,
        Peak,
        PeakDelta,
        PeakTime,
        PeakPhase,
        ReservedPeak,
        StepTime,
        StepTimeRatio,
        RecomputeOverhead,
        FirstCategory,  // then one column per category
        ColumnCount = FirstCategory + kCategoryCount
    };
    static constexpr int RawRole = Qt::UserRole + 1;

    explicit SummaryTableModel(QObject* parent = nullptr);
    void setEntries(std::vector<CompareEntry> entries, int baseline);
    void setBaseline(int baseline);
    int baseline() const { return baseline_; }
    const std::vector<CompareEntry>& entries() const { return entries_; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    QString toCsv() const;        // raw numbers, one header line
    QString toTextTable() const;  // aligned, for stdout

private:
    std::vector<CompareEntry> entries_;
    std::vector<SummaryDelta> deltas_;
    int baseline_ = 0;
};

}  // namespace memscope::gui
