#include "compare/composition_chart.h"

#include <qcustomplot.h>

#include <QVBoxLayout>

#include "common/category_colors.h"
#include "common/format.h"
#include "common/plot_export.h"
#include "common/plot_style.h"

namespace memscope::gui {

CompositionChart::CompositionChart(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    plot_ = new QCustomPlot(this);
    layout->addWidget(plot_);
    plot_->yAxis->setTicker(byteTicker());
    plot_->yAxis->setLabel(QStringLiteral("live memory at peak"));
    plot_->legend->setVisible(true);
    plot_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
}

void CompositionChart::setEntries(const std::vector<CompareEntry>& entries) {
    plot_->clearPlottables();
    QSharedPointer<QCPAxisTickerText> names(new QCPAxisTickerText);
    QVector<double> keys;
    for (int i = 0; i < int(entries.size()); ++i) {
        keys << i + 1;
        names->addTick(i + 1, entries[size_t(i)].shownName());
    }
    plot_->xAxis->setTicker(names);
    plot_->xAxis->setRange(0.4, double(entries.size()) + 0.6);
    QCPBars* below = nullptr;
    double top = 1;
    std::vector<double> stack(entries.size(), 0.0);
    for (Category c : kAllCategories) {
        QVector<double> values;
        bool any = false;
        for (size_t i = 0; i < entries.size(); ++i) {
            const double v = double(entries[i].summary.peak_by_category[size_t(index(c))]);
            values << v;
            stack[i] += v;
            any = any || v > 0;
        }
        if (!any) continue;
        // Inferred categories read as such here too: named and hatched.
        bool inferred = false;
        for (const CompareEntry& e : entries) {
            const DeviceTimeline* tl = e.run ? e.run->timeline(e.device) : nullptr;
            inferred = inferred || (tl && tl->category_sources[size_t(index(c))].inferred);
        }
        auto* bars = new QCPBars(plot_->xAxis, plot_->yAxis);
        bars->setName(inferred ? categoryLabel(c) + QStringLiteral(" (inferred)")
                               : categoryLabel(c));
        bars->setPen(QPen(categoryColor(c).darker(120)));
        bars->setBrush(inferred ? QBrush(categoryColor(c).lighter(115), Qt::Dense2Pattern)
                                : QBrush(categoryColor(c)));
        bars->setWidth(0.6);
        bars->setData(keys, values, true);
        if (below) bars->moveAbove(below);
        below = bars;
    }
    for (double s : stack) top = std::max(top, s);
    plot_->yAxis->setRange(0, top * 1.15);
    applyPlotPalette(plot_, palette());  // also replots
}

bool CompositionChart::exportTo(const QString& path, QString* error) {
    return exportPlot(plot_, path, error);
}

void CompositionChart::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) applyPlotPalette(plot_, palette());
}

}  // namespace memscope::gui
