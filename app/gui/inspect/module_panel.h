#pragma once
// The "by module at the peak" dock: core's modulesAtPeak for the current
// run's device, grouped as its run view groups them; a click on a row asks
// for that module's allocations to be highlighted in the plot. A trace
// without modules gets the one message that says so, not an empty table.

#include <QWidget>
#include <optional>

#include "loading/run.h"
#include "memscope/analysis/module_breakdown.h"

class QLabel;
class QPushButton;
class QTableView;

namespace memscope::gui {

class ModuleTableModel;

class ModulePanel : public QWidget {
    Q_OBJECT
public:
    explicit ModulePanel(QWidget* parent = nullptr);
    void setSource(RunPtr run, DeviceRef ref, ModuleGroupingSpec spec);
    void clear();
    ModuleTableModel* model() const { return model_; }
    QTableView* view() const { return view_; }
    // The heading, or the no-modules message.
    QString headline() const;
    bool showsTable() const;
    // What a click on a row does (tests).
    void activateRow(int row);

signals:
    // A row was clicked: its group (a ModuleBytes::module), nullopt to clear.
    void moduleHighlightRequested(std::optional<memscope::ModuleId> group);

private:
    QLabel* head_ = nullptr;
    QTableView* view_ = nullptr;
    QPushButton* clear_ = nullptr;
    ModuleTableModel* model_ = nullptr;
    RunPtr run_;
    DeviceRef ref_;
    ModuleGroupingSpec spec_;
};

}  // namespace memscope::gui
