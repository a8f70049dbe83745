#include "compare/theory_charts.h"

#include <qcustomplot.h>

#include <QGridLayout>
#include <QLabel>
#include <QScrollArea>
#include <QVBoxLayout>
#include <algorithm>

#include "common/category_colors.h"
#include "common/format.h"
#include "common/plot_style.h"

namespace memscope::gui {
namespace {

constexpr int kColumns = 2;
constexpr int kChartHeight = 220;

}  // namespace

TheoryCharts::TheoryCharts(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    auto* page = new QWidget(scroll);
    grid_ = new QGridLayout(page);
    scroll->setWidget(page);
    layout->addWidget(scroll, 1);
    note_ = new QLabel(this);
    note_->setWordWrap(true);
    layout->addWidget(note_);
}

void TheoryCharts::setEntries(const std::vector<CompareEntry>& entries) {
    for (Chart& c : charts_) delete c.plot;
    charts_.clear();
    QStringList missing;
    for (const CompareEntry& e : entries) {
        const Trace* trace = e.run ? e.run->trace(e.device) : nullptr;
        const DeviceTimeline* tl = e.run ? e.run->timeline(e.device) : nullptr;
        if (!trace || !tl) continue;
        auto theory = activationTheory(*trace, *tl);
        if (!theory) {
            missing << QStringLiteral("%1: %2").arg(e.shownName(), toQString(theory.message()));
            continue;
        }
        Chart chart{e.shownName(), std::move(theory.value()), nullptr};
        chart.plot = new QCustomPlot(grid_->parentWidget());
        chart.plot->setMinimumHeight(kChartHeight);
        charts_.push_back(std::move(chart));
    }
    for (size_t i = 0; i < charts_.size(); ++i) {
        grid_->addWidget(charts_[i].plot, int(i) / kColumns, int(i) % kColumns);
        draw(charts_[i]);
    }
    note_->setText(charts_.empty() && missing.isEmpty()
                       ? QStringLiteral("No runs to chart.")
                       : (missing.isEmpty()
                              ? QString()
                              : QStringLiteral("No chart: ") + missing.join(QStringLiteral("; "))));
    note_->setVisible(!note_->text().isEmpty());
}

QString TheoryCharts::title(size_t i) const {
    const ActivationTheory& t = charts_[i].theory;
    QString formula = toQString(t.formulasText());
    if (formula.isEmpty()) formula = QStringLiteral("no published formula");
    QString line = QStringLiteral("%1 — %2: measured %3")
                       .arg(charts_[i].name, formula, formatBytes(double(t.measured_total)));
    if (t.predicted_total)
        line += QStringLiteral(", predicted %1, ratio %2")
                    .arg(formatBytes(*t.predicted_total))
                    .arg(*t.ratio(), 0, 'f', 3);
    return line;
}

QString TheoryCharts::note() const {
    return note_->text();
}

void TheoryCharts::draw(Chart& chart) {
    QCustomPlot* plot = chart.plot;
    const ActivationTheory& t = chart.theory;
    plot->plotLayout()->insertRow(0);
    plot->plotLayout()->addElement(
        0, 0, new QCPTextElement(plot, title(size_t(&chart - charts_.data()))));
    QCPAxis* x = plot->xAxis;
    QCPAxis* y = plot->yAxis;
    x->setLabel(QStringLiteral("layer"));
    y->setLabel(QStringLiteral("activations"));
    y->setTicker(byteTicker());

    auto* bars = new QCPBars(x, y);
    bars->setName(QStringLiteral("measured"));
    bars->setWidth(0.7);
    const QColor color = categoryColor(Category::Activation);
    bars->setBrush(color);
    bars->setPen(QPen(color.darker(130)));
    auto* predicted = new QCPGraph(x, y);
    predicted->setName(QStringLiteral("predicted (%1)")
                           .arg(toQString(std::string(formulaSource(t.main_formula)))));
    predicted->setLineStyle(QCPGraph::lsNone);
    predicted->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCrossSquare, 9));
    predicted->setPen(QPen(categoryColor(Category::Parameter), 2));
    double ymax = 1;
    for (const LayerActivation& l : t.layers) {
        bars->addData(l.layer, double(l.measured));
        ymax = std::max(ymax, double(l.measured));
        if (l.predicted) {
            predicted->addData(l.layer, *l.predicted);
            ymax = std::max(ymax, *l.predicted);
        }
    }
    x->setRange(-0.8, double(t.layers.size()) - 0.2);
    y->setRange(0, ymax * 1.5);  // room for the legend above the bars
    plot->legend->setVisible(true);
    plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
    if (predicted->data()->isEmpty()) plot->legend->removeItem(plot->legend->itemCount() - 1);
    applyPlotPalette(plot, palette());  // also replots
}

void TheoryCharts::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange)
        for (Chart& c : charts_) applyPlotPalette(c.plot, palette());
}

}  // namespace memscope::gui
