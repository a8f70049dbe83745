#include "compare/policy_map.h"

#include <qcustomplot.h>

#include <QLabel>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/category_colors.h"
#include "common/format.h"
#include "common/plot_export.h"
#include "common/plot_style.h"

namespace memscope::gui {
namespace {

constexpr double kHitPixels = 8;

}  // namespace

PolicyMap::PolicyMap(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    plot_ = new QCustomPlot(this);
    layout->addWidget(plot_, 1);
    note_ = new QLabel(this);
    note_->setWordWrap(true);
    layout->addWidget(note_);
    plot_->xAxis->setLabel(QStringLiteral("step time (ms)"));
    plot_->yAxis->setLabel(QStringLiteral("peak memory"));
    plot_->yAxis->setTicker(byteTicker());
    plot_->setMouseTracking(true);
    connect(plot_, &QCustomPlot::mouseMove, this, &PolicyMap::onMouseMove);
    connect(plot_, &QCustomPlot::mousePress, this, &PolicyMap::onMousePress);
}

void PolicyMap::setEntries(const std::vector<CompareEntry>& entries) {
    entries_ = entries;
    points_.clear();
    entry_of_point_.clear();
    predicted_.clear();
    size_t untimed = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
        const RunSummary& s = entries[i].summary;
        if (!s.step_time_s) {
            ++untimed;
            continue;
        }
        points_.push_back(
            {entries[i].shownName().toStdString(), s.peak_bytes, *s.step_time_s * 1e3});
        entry_of_point_.push_back(int(i));
        predicted_.push_back(entries[i].predicted);
    }
    // One frontier over what the map shows, measured and predicted alike, as
    // core's what-if ranks its predictions with the measured run; the markers
    // keep the two apart.
    frontier_ = memscope::onFrontier(points_);

    plot_->clearGraphs();
    plot_->clearItems();
    const bool anyPredicted =
        std::find(predicted_.begin(), predicted_.end(), true) != predicted_.end();
    const QColor frontColor = categoryColor(Category::Activation);
    QCPGraph* all = plot_->addGraph();
    all->setLineStyle(QCPGraph::lsNone);
    all->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 8));
    all->setName(anyPredicted ? QStringLiteral("measured runs") : QStringLiteral("runs"));
    // Predicted runs: hollow diamonds, never the measured runs' circles.
    QCPGraph* guessed = plot_->addGraph();
    guessed->setLineStyle(QCPGraph::lsNone);
    guessed->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDiamond,
                                             QPen(frontColor.darker(130), 1.8), Qt::NoBrush, 12));
    guessed->setName(QStringLiteral("predicted (what-if)"));
    // The frontier's line, and a disc on its measured points (a predicted
    // point on it keeps its diamond).
    QCPGraph* front = plot_->addGraph();
    front->setLineStyle(QCPGraph::lsLine);
    front->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssNone));
    front->setName(QStringLiteral("frontier"));
    front->setPen(QPen(frontColor, 2));
    QCPGraph* frontDiscs = plot_->addGraph();
    frontDiscs->setLineStyle(QCPGraph::lsNone);
    frontDiscs->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 9));
    frontDiscs->setPen(QPen(frontColor, 2));
    frontDiscs->removeFromLegend();
    std::vector<size_t> order(points_.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return points_[a].step_ms < points_[b].step_ms; });
    double xmin = points_.empty() ? 0 : points_[order.front()].step_ms, xmax = 1, ymax = 1;
    for (size_t k : order) {
        const double x = points_[k].step_ms, y = double(points_[k].peak_bytes);
        (predicted_[k] ? guessed : all)->addData(x, y);
        if (frontier_[k]) front->addData(x, y);
        if (frontier_[k] && !predicted_[k]) frontDiscs->addData(x, y);
        xmax = std::max(xmax, x);
        ymax = std::max(ymax, y);
        auto* label = new QCPItemText(plot_);
        label->position->setCoords(x, y);
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
        label->setPadding(QMargins(6, 0, 0, 4));
        label->setText(toQString(points_[k].name));
    }
    // Step times differ by tens of percent, not from zero: the range spans the
    // points (with room on the right for the labels).
    const double span = std::max(xmax - xmin, 0.05 * xmax);
    plot_->xAxis->setRange(std::max(0.0, xmin - 0.1 * span), xmax + 0.35 * span);
    plot_->yAxis->setRange(0, ymax * 1.15);
    if (!anyPredicted) guessed->removeFromLegend();
    plot_->legend->setVisible(!points_.empty());
    note_->setText(
        untimed ? QStringLiteral("%1 run(s) without a step time (no steps recorded or inferred) "
                                 "are not on the map.")
                      .arg(untimed)
                : QString());
    note_->setVisible(untimed > 0);
    applyPlotPalette(plot_, palette());  // also replots
}

size_t PolicyMap::predictedCount() const {
    return size_t(std::count(predicted_.begin(), predicted_.end(), true));
}

QPointF PolicyMap::pixelOf(size_t point) const {
    return {plot_->xAxis->coordToPixel(points_[point].step_ms),
            plot_->yAxis->coordToPixel(double(points_[point].peak_bytes))};
}

int PolicyMap::pointAt(const QPointF& pixel) const {
    int best = -1;
    double bestDistance = kHitPixels;
    for (size_t i = 0; i < points_.size(); ++i) {
        const QPointF d = pixelOf(i) - pixel;
        const double distance = std::hypot(d.x(), d.y());
        if (distance <= bestDistance) {
            bestDistance = distance;
            best = int(i);
        }
    }
    return best;
}

QString PolicyMap::describe(size_t point) const {
    const PolicyPoint& p = points_[point];
    const RunSummary& s = entries_[size_t(entry_of_point_[point])].summary;
    QStringList lines;
    lines << QStringLiteral("<b>%1</b>: %2peak %3, %4 ms per step%5")
                 .arg(toQString(p.name).toHtmlEscaped(),
                      predicted_[point] ? QStringLiteral("predicted ") : QString(),
                      formatBytes(double(p.peak_bytes)))
                 .arg(p.step_ms, 0, 'f', 2)
                 .arg(frontier_[point] ? QStringLiteral(", on the frontier") : QString());
    for (Category c : kAllCategories) {
        const int64_t b = s.peak_by_category[size_t(index(c))];
        if (b > 0) lines << QStringLiteral("%1: %2").arg(categoryLabel(c), formatBytes(double(b)));
    }
    lines << QStringLiteral("click to open the run");
    return lines.join(QStringLiteral("<br>"));
}

void PolicyMap::onMouseMove(QMouseEvent* event) {
    const int i = pointAt(event->position());
    if (i < 0) {
        QToolTip::hideText();
        return;
    }
    QToolTip::showText(event->globalPosition().toPoint(), describe(size_t(i)), plot_);
}

void PolicyMap::onMousePress(QMouseEvent* event) {
    const int i = pointAt(event->position());
    if (i >= 0) emit runActivated(entry_of_point_[size_t(i)]);
}

bool PolicyMap::exportTo(const QString& path, QString* error) {
    return exportPlot(plot_, path, error);
}

void PolicyMap::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) applyPlotPalette(plot_, palette());
}

}  // namespace memscope::gui
