#pragma once
// The "leaks" dock: core's findLeaks for the run's part, one row per device
// ("cuda:0: grows 2.50 MiB per step: head 2.00 MiB", "no growth", "(steps
// inferred)" when the steps were inferred), the groups that pile up under
// it (module, site, bytes and count per step, first step). A click on a
// group asks for its surviving allocations to be highlighted in the plot.

#include <QWidget>
#include <vector>

#include "loading/run.h"
#include "memscope/analysis/leak_finder.h"

class QLabel;
class QPushButton;
class QTreeWidget;

namespace memscope::gui {

class LeakPanel : public QWidget {
    Q_OBJECT
public:
    explicit LeakPanel(QWidget* parent = nullptr);
    // Every device of `run`'s part of `ref`.
    void setSource(RunPtr run, DeviceRef ref);
    void clear();

    QString headline() const;
    QTreeWidget* tree() const { return tree_; }
    const LeakReport& report() const { return report_; }
    // The text of a device's row, in report() order.
    QString deviceText(int device) const;
    // What a click on group `group` of device `device` does (tests).
    void activateGroup(int device, int group);

signals:
    // A group was clicked: its allocations on that device; empty to clear.
    void allocationsHighlightRequested(memscope::gui::RunPtr run, memscope::gui::DeviceRef ref,
                                       std::vector<uint32_t> intervals);

private:
    QLabel* head_ = nullptr;
    QPushButton* clear_ = nullptr;
    QTreeWidget* tree_ = nullptr;
    RunPtr run_;
    int part_ = 0;
    LeakReport report_;
};

}  // namespace memscope::gui
