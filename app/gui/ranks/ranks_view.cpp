#include "ranks/ranks_view.h"

#include <qcustomplot.h>

#include <QHBoxLayout>
#include <QLabel>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>

#include "common/category_colors.h"
#include "common/format.h"
#include "common/plot_style.h"
#include "memscope/base/units.h"
#include "memscope/ranks/rank_imbalance.h"

namespace memscope::gui {
namespace {

// Heat-map columns: about a pixel each on a wide screen.
constexpr size_t kHeatColumns = 1200;

double toSeconds(const RankDigest& r, int64_t t) {
    return r.time_base == TimeBase::Nanoseconds ? double(t) / 1e9 : double(t);
}

// Row labels: every rank when they fit, else every k-th so that about 32 show.
QSharedPointer<QCPAxisTickerText> rankTicker(const std::vector<RankDigest>& ranks) {
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    const size_t every = std::max<size_t>(1, ranks.size() / 32);
    for (size_t i = 0; i < ranks.size(); i += every)
        ticker->addTick(double(i), toQString(ranks[i].name));
    return ticker;
}

}  // namespace

RanksView::RanksView(RunPtr run, QWidget* parent) : QWidget(parent), run_(std::move(run)) {
    setObjectName(QStringLiteral("ranksView"));
    auto* layout = new QVBoxLayout(this);
    imbalance_ = new QLabel(this);
    imbalance_->setObjectName(QStringLiteral("imbalanceText"));
    imbalance_->setWordWrap(true);
    imbalance_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(imbalance_);
    auto* row = new QHBoxLayout;
    heatPlot_ = new QCustomPlot(this);
    heatPlot_->setObjectName(QStringLiteral("rankHeatMap"));
    peaksPlot_ = new QCustomPlot(this);
    peaksPlot_->setObjectName(QStringLiteral("rankPeaks"));
    row->addWidget(heatPlot_, 3);
    row->addWidget(peaksPlot_, 1);
    layout->addLayout(row, 1);
    if (!run_ || !run_->ranks) return;
    for (const RankDigest* r : comparedRanks(run_->ranks->ranks)) shown_.push_back(*r);
    imbalance_->setText(imbalanceText());
    buildHeatMap();
    buildPeakBars();
}

QString RanksView::imbalanceText() const {
    if (!run_ || !run_->ranks) return {};
    const RankRun& r = *run_->ranks;
    QString text = QStringLiteral("%1: %2 ranks").arg(toQString(r.name)).arg(shown_.size());
    if (shown_.size() < r.ranks.size())
        text += QStringLiteral(" (and %1 other process%2, not compared)")
                    .arg(r.ranks.size() - shown_.size())
                    .arg(r.ranks.size() - shown_.size() == 1 ? QString() : QStringLiteral("es"));
    if (!r.failures.empty())
        text += QStringLiteral(", %1 could not be read (%2)")
                    .arg(r.failures.size())
                    .arg(toQString(r.failures.front().message));
    if (std::any_of(r.ranks.begin(), r.ranks.end(),
                    [](const RankDigest& d) { return d.from_digest; }))
        text += QStringLiteral(", from digests");
    if (const auto m = rankImbalance(r.ranks))
        text += QStringLiteral(". ") + toQString(memscope::imbalanceText(*m, r.ranks)) +
                QStringLiteral(".");
    return text;
}

void RanksView::buildHeatMap() {
    const std::vector<RankDigest>& ranks = shown_;
    heat_ = rankHeatMap(ranks, kHeatColumns);
    auto* map = new QCPColorMap(heatPlot_->xAxis, heatPlot_->yAxis);
    const double seconds = ranks.empty() ? 0 : toSeconds(ranks.front(), heat_.duration);
    map->data()->setSize(int(heat_.columns), int(heat_.rows));
    map->data()->setRange(QCPRange(0, std::max(seconds, 1e-9)),
                          QCPRange(0, std::max<double>(double(heat_.rows) - 1, 0)));
    for (size_t r = 0; r < heat_.rows; ++r)
        for (size_t c = 0; c < heat_.columns; ++c) {
            const int64_t v = heat_.at(r, c);
            map->data()->setCell(int(c), int(r), v < 0 ? qQNaN() : double(v));
        }
    QCPColorGradient gradient(QCPColorGradient::gpThermal);
    gradient.setNanHandling(QCPColorGradient::nhTransparent);
    map->setGradient(gradient);
    map->setDataRange(QCPRange(0, std::max<double>(double(heat_.max_bytes), 1)));
    map->setInterpolate(false);
    auto* scale = new QCPColorScale(heatPlot_);
    heatPlot_->plotLayout()->addElement(0, 1, scale);
    scale->setDataRange(map->dataRange());
    scale->setGradient(gradient);
    scale->axis()->setTicker(byteTicker());
    scale->axis()->setLabel(QStringLiteral("live"));
    const QString unit = ranks.empty() || ranks.front().time_base == TimeBase::Nanoseconds
                             ? QStringLiteral("seconds")
                             : QStringLiteral("events");
    heatPlot_->xAxis->setLabel(
        heat_.by_step ? unit + QStringLiteral(" since each rank's first step (aligned by step)")
                      : unit + QStringLiteral(" since each rank's first event"));
    heatPlot_->yAxis->setTicker(rankTicker(ranks));
    heatPlot_->yAxis->setRangeReversed(true);  // rank 0 on top
    heatPlot_->xAxis->setRange(0, std::max(seconds, 1e-9));
    heatPlot_->yAxis->setRange(-0.5, double(heat_.rows) - 0.5);
    heatPlot_->setMouseTracking(true);
    connect(heatPlot_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) {
        size_t row = 0, column = 0;
        if (cellAt(e->position(), row, column))
            QToolTip::showText(e->globalPosition().toPoint(), describeCell(row, column), heatPlot_);
        else
            QToolTip::hideText();
    });
    connect(heatPlot_, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) {
        size_t row = 0, column = 0;
        if (!cellAt(e->position(), row, column)) return;
        const RankDigest& r = shown_[row];
        // A digest's full timeline is on the machine that made it.
        if (!r.from_digest) emit openRankRequested(QString::fromStdString(r.path));
    });
}

void RanksView::buildPeakBars() {
    const std::vector<RankDigest>& ranks = shown_;
    QVector<double> keys;
    for (size_t i = 0; i < ranks.size(); ++i) keys << double(i);
    QCPBars* below = nullptr;
    for (Category c : kAllCategories) {
        QVector<double> values;
        bool any = false;
        for (const RankDigest& r : ranks) {
            values << double(r.categories_at_peak[size_t(index(c))]);
            any = any || values.back() > 0;
        }
        if (!any) continue;
        auto* bars = new QCPBars(peaksPlot_->yAxis, peaksPlot_->xAxis);  // horizontal
        bars->setName(categoryLabel(c));
        bars->setBrush(categoryColor(c));
        bars->setPen(Qt::NoPen);
        bars->setWidth(0.8);
        bars->setData(keys, values, true);
        if (below) bars->moveAbove(below);
        below = bars;
    }
    int64_t top = 0;
    for (const RankDigest& r : ranks) top = std::max(top, r.peak_bytes);
    peaksPlot_->xAxis->setTicker(byteTicker());
    peaksPlot_->xAxis->setLabel(QStringLiteral("peak, by category"));
    peaksPlot_->xAxis->setRange(0, std::max<double>(double(top) * 1.05, 1));
    peaksPlot_->yAxis->setTicker(rankTicker(ranks));
    peaksPlot_->yAxis->setRangeReversed(true);
    peaksPlot_->yAxis->setRange(-0.5, double(ranks.size()) - 0.5);
    // The legend under the bars, never over them.
    peaksPlot_->legend->setVisible(below != nullptr);
    peaksPlot_->legend->setFont(font());
    auto* legendRow = new QCPLayoutGrid;
    peaksPlot_->plotLayout()->addElement(1, 0, legendRow);
    legendRow->addElement(0, 0, peaksPlot_->legend);
    peaksPlot_->legend->setFillOrder(QCPLegend::foColumnsFirst);
    peaksPlot_->legend->setWrap(2);
    peaksPlot_->plotLayout()->setRowStretchFactor(1, 0.001);
}

bool RanksView::cellAt(const QPointF& pos, size_t& row, size_t& column) const {
    if (heat_.rows == 0) return false;
    const double y = heatPlot_->yAxis->pixelToCoord(pos.y());
    const double x = heatPlot_->xAxis->pixelToCoord(pos.x());
    const QCPRange xr = heatPlot_->xAxis->range();
    if (y < -0.5 || y > double(heat_.rows) - 0.5 || x < 0 || x > xr.upper) return false;
    row = std::min(heat_.rows - 1, size_t(std::max(0.0, y + 0.5)));
    column =
        std::min(heat_.columns - 1, size_t(x / std::max(xr.upper, 1e-12) * double(heat_.columns)));
    return true;
}

QString RanksView::describeCell(size_t row, size_t column) const {
    if (row >= heat_.rows || column >= heat_.columns) return {};
    const RankDigest& r = shown_[row];
    const int64_t t = int64_t(double(column) / double(heat_.columns) * double(heat_.duration));
    const int64_t x = heat_.origins[row] + t;  // the rank's own clock
    const int64_t bytes = heat_.at(row, column);
    QString text =
        QStringLiteral("%1\nt = %2 s").arg(toQString(r.name)).arg(toSeconds(r, t), 0, 'f', 3);
    if (bytes < 0) return text + QStringLiteral("\nthe rank had ended");
    text += QStringLiteral("\nlive up to %1").arg(formatBytes(double(bytes)));
    if (const int step = stepAt(r, x); step >= 0) text += QStringLiteral(", step %1").arg(step);
    if (r.peak_time >= heat_.origins[row] &&
        heat_.columnOf(r.peak_time - heat_.origins[row]) == column)
        text += QStringLiteral("\nthe rank's peak, %1%2")
                    .arg(formatBytes(double(r.peak_bytes)))
                    .arg(r.peak_phase ? QStringLiteral(" in ") + toQString(toString(*r.peak_phase))
                                      : QString());
    if (!r.from_digest) text += QStringLiteral("\nclick to open this rank");
    return text;
}

}  // namespace memscope::gui
