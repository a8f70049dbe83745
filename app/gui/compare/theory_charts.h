#pragma once
// Theory next to measurement: for each compared run of memscope-train, a
// chart of the activation bytes each layer keeps at the end of forward
// (bars) against the literature's prediction for the run's policy (line):
// Korthikanti et al.'s s·b·h·(34 + 5as/h), 34sbh and 2sbh, Chen et al.'s
// checkpointed segments of ceil(sqrt(L)). The figures are core's
// (activation_theory.h), the same `memscope-cli summary` prints.

#include <QWidget>
#include <optional>
#include <vector>

#include "compare/summary_model.h"
#include "memscope/analysis/activation_theory.h"

class QCustomPlot;
class QGridLayout;
class QLabel;

namespace memscope::gui {

class TheoryCharts : public QWidget {
    Q_OBJECT
public:
    explicit TheoryCharts(QWidget* parent = nullptr);
    void setEntries(const std::vector<CompareEntry>& entries);

    // The runs charted, in entry order, and their figures.
    size_t chartCount() const { return charts_.size(); }
    const ActivationTheory& theory(size_t chart) const { return charts_[chart].theory; }
    QCustomPlot* plot(size_t chart) const { return charts_[chart].plot; }
    // The chart's title line: run, formula, measured / predicted and ratio.
    QString title(size_t chart) const;
    // Why runs have no chart ("name: reason" per run), empty when all have one.
    QString note() const;

protected:
    void changeEvent(QEvent* event) override;

private:
    struct Chart {
        QString name;
        ActivationTheory theory;
        QCustomPlot* plot = nullptr;
    };
    void draw(Chart& chart);

    QGridLayout* grid_ = nullptr;
    QLabel* note_ = nullptr;
    std::vector<Chart> charts_;
};

}  // namespace memscope::gui
