#pragma once
// A stacked bar per run: what the peak is made of, by category.

#include <QWidget>
#include <vector>

#include "compare/summary_model.h"

class QCustomPlot;

namespace memscope::gui {

class CompositionChart : public QWidget {
    Q_OBJECT
public:
    explicit CompositionChart(QWidget* parent = nullptr);
    void setEntries(const std::vector<CompareEntry>& entries);
    bool exportTo(const QString& path, QString* error);

protected:
    void changeEvent(QEvent* event) override;

private:
    QCustomPlot* plot_ = nullptr;
};

}  // namespace memscope::gui
