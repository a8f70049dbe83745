#pragma once
// The compare table as a Qt model. Every figure and every cell's text comes
// from core's CompareTable (the same one `memscope-cli compare` prints); the
// model only displays it. RawRole gives the numbers the CSV export writes.
// Predicted runs (the what-if) are set in italics, say so in their tooltip,
// and, where a measured run of their policy is compared too, get core's
// check against it in a column of its own, "vs measured".

#include <QAbstractTableModel>
#include <vector>

#include "loading/run.h"
#include "memscope/analysis/compare_table.h"
#include "memscope/analysis/prediction_check.h"

namespace memscope::gui {

// One run of the comparison: the run and the device compared.
struct CompareEntry {
    RunPtr run;
    DeviceRef device;
    RunSummary summary;  // the table row's summary, for the charts
    // The run as shown: its name, told apart from the others' (distinctNames);
    // "" = the run's own name.
    QString name;
    // A what-if's predicted run (Trace::prediction), filled by setRuns.
    bool predicted = false;

    QString shownName() const { return !name.isEmpty() ? name : run ? run->name : QString(); }
};

class SummaryTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    static constexpr int RawRole = Qt::UserRole + 1;
    // Any cell: whether the row is a predicted run.
    static constexpr int PredictedRole = Qt::UserRole + 2;

    explicit SummaryTableModel(QObject* parent = nullptr);
    // Builds the table with core's buildCompareTable; `entries`' summaries are
    // filled from it.
    void setRuns(std::vector<CompareEntry> entries, int baseline, AlignMode align, PeakScope scope);
    void setBaseline(int baseline);
    int baseline() const { return int(table_.baseline); }
    const std::vector<CompareEntry>& entries() const { return entries_; }
    const CompareTable& table() const { return table_; }
    // The column shown at a model column (the Run column for the check's).
    CompareColumn column(int section) const;
    // The model column of "vs measured" (core's predictionChecks: a predicted
    // peak against the measured run of its policy), after the baseline's
    // difference; -1 when no row has one.
    int predictionCheckColumn() const;
    const std::vector<std::optional<PredictionCheck>>& predictionChecks() const { return checks_; }
    // The model column of "Why" (core's CompareTable::why: why a run's peak
    // changed against the baseline's, or did not), after the difference and
    // the check; -1 when no row has one.
    int whyColumn() const { return whyColumn_; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

    QString toCsv() const;        // core's toCsv
    QString toTextTable() const;  // core's toText

private:
    // The index into columns_ shown at a model column; -1 for "vs measured",
    // "Why" or none.
    int coreColumn(int section) const;
    QVariant checkData(size_t row, int role) const;
    QString predictionTooltip(size_t row) const;

    std::vector<CompareEntry> entries_;
    CompareTable table_;
    std::vector<CompareColumn> columns_;
    std::vector<std::optional<PredictionCheck>> checks_;  // per row
    int checkColumn_ = -1;                          // the model column of "vs measured", -1 = none
    std::vector<std::optional<std::string>> whys_;  // per row
    int whyColumn_ = -1;                            // the model column of "Why", -1 = none
};

}  // namespace memscope::gui
