#pragma once
// The compare view's "Allocations" tab: core's diffAllocations of the
// baseline run (A) against one other run (B) at a moment (the peaks, or a
// step and phase of A's), one row per site with the bytes and counts only
// in A, in both and only in B, and a totals row whose only-A minus only-B is
// A's live bytes minus B's. A click on a site asks for its allocations to be
// highlighted in both runs' plots.

#include <QWidget>
#include <optional>
#include <vector>

#include "compare/summary_model.h"
#include "memscope/analysis/allocation_diff.h"

class QComboBox;
class QLabel;
class QTableWidget;

namespace memscope::gui {

class AllocationDiffPanel : public QWidget {
    Q_OBJECT
public:
    enum Column {
        Site,
        OnlyA,
        OnlyACount,
        Both,
        BothCount,
        OnlyB,
        OnlyBCount,
        Change,
        ColumnCount
    };
    static constexpr int RawRole = Qt::UserRole + 1;  // the number behind a cell

    explicit AllocationDiffPanel(QWidget* parent = nullptr);
    // The runs as the compare table holds them; `baseline` (A) indexes them.
    void setEntries(const std::vector<CompareEntry>& entries, int baseline);
    // B (an index into the entries; not the baseline).
    void setCandidate(int index);
    int candidate() const { return candidate_; }
    int baseline() const { return baseline_; }
    // "peak", "step:N" or "step:N:PHASE" (parseAllocationMoment); a moment
    // the box does not offer is ignored.
    void setMoment(const QString& moment);
    // The diff shown; nullopt when it could not be made (headline() says why).
    const std::optional<AllocationDiff>& diff() const { return diff_; }
    QTableWidget* table() const { return table_; }
    QString headline() const;
    // What a click on group `group` (diff()->groups order) does (tests).
    void activateGroup(int group);

signals:
    // A group was clicked: its allocations in run `a` (DeviceTimeline::intervals)
    // and in run `b`; both empty to clear.
    void highlightRequested(int a, std::vector<uint32_t> aIntervals, int b,
                            std::vector<uint32_t> bIntervals);

private:
    void fillMoments();
    void update();

    std::vector<CompareEntry> entries_;
    int baseline_ = 0;
    int candidate_ = -1;
    std::optional<AllocationDiff> diff_;
    QComboBox* candidateBox_ = nullptr;
    QComboBox* momentBox_ = nullptr;
    QLabel* head_ = nullptr;
    QTableWidget* table_ = nullptr;
};

}  // namespace memscope::gui
