#pragma once
// The compare view's "By module" tab: core's compareModules between the
// baseline's and one candidate's modules at their peaks (matched by path),
// the changes in core's words above (describeModuleChanges). Runs without
// modules get the message that says so instead of an empty table.

#include <QAbstractTableModel>
#include <QWidget>
#include <vector>

#include "compare/summary_model.h"
#include "memscope/analysis/module_breakdown.h"

class QComboBox;
class QLabel;
class QTableView;

namespace memscope::gui {

class ModuleDeltaModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Module, Baseline, Candidate, Change, ByCategory, ColumnCount };
    static constexpr int RawRole = Qt::UserRole + 1;  // Baseline, Candidate, Change: the number

    explicit ModuleDeltaModel(QObject* parent = nullptr);
    void setDeltas(std::vector<ModuleDelta> deltas, QString baseline, QString candidate);
    const std::vector<ModuleDelta>& deltas() const { return deltas_; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

private:
    std::vector<ModuleDelta> deltas_;
    QString baseline_, candidate_;
};

class ModuleComparePanel : public QWidget {
    Q_OBJECT
public:
    explicit ModuleComparePanel(QWidget* parent = nullptr);
    // The runs as the compare table holds them; `baseline` indexes them.
    void setEntries(const std::vector<CompareEntry>& entries, int baseline);
    // The candidate compared (an index into the entries; not the baseline).
    void setCandidate(int index);
    int candidate() const { return candidate_; }
    ModuleDeltaModel* model() const { return model_; }
    QString headline() const;
    bool showsTable() const;

private:
    void update();

    std::vector<CompareEntry> entries_;
    std::vector<ModuleBreakdown> breakdowns_;  // parallel to entries_, at each run's peak
    int baseline_ = 0;
    int candidate_ = -1;
    QComboBox* candidateBox_ = nullptr;
    QLabel* head_ = nullptr;
    QTableView* view_ = nullptr;
    ModuleDeltaModel* model_ = nullptr;
};

}  // namespace memscope::gui
