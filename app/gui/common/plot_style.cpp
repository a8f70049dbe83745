#include "common/plot_style.h"

#include <qcustomplot.h>

#include "common/category_colors.h"
#include "common/format.h"

namespace memscope::gui {

namespace {

class ByteTicker : public QCPAxisTicker {
protected:
    double getTickStep(const QCPRange& range) override {
        const double raw = range.size() / std::max(1, tickCount());
        if (raw <= 0) return 1;
        double unit = 1;
        while (unit * 1024 <= raw) unit *= 1024;
        double m = 1;
        while (m * 2 * unit <= raw * 1.5) m *= 2;
        return m * unit;
    }
    QString getTickLabel(double tick, const QLocale&, QChar, int) override {
        return formatBytes(tick);
    }
};

}  // namespace

QSharedPointer<QCPAxisTicker> byteTicker() {
    return QSharedPointer<QCPAxisTicker>(new ByteTicker);
}

void applyPlotPalette(QCustomPlot* plot, const QPalette& pal) {
    const QColor text = pal.color(QPalette::WindowText);
    const QColor grid = isDarkPalette(pal) ? QColor(0x50, 0x50, 0x50) : QColor(0xdc, 0xdc, 0xdc);
    plot->setBackground(pal.color(QPalette::Window));
    for (QCPAxisRect* r : plot->axisRects()) {
        r->setBackground(pal.color(QPalette::Base));
        for (QCPAxis* a : r->axes()) {
            a->setBasePen(QPen(text));
            a->setTickPen(QPen(text));
            a->setSubTickPen(QPen(text));
            a->setTickLabelColor(text);
            a->setLabelColor(text);
            a->grid()->setPen(QPen(grid, 1, Qt::DotLine));
            a->grid()->setZeroLinePen(QPen(grid));
        }
    }
    QColor legendBg = pal.color(QPalette::Base);
    legendBg.setAlpha(0xd0);
    plot->legend->setBrush(legendBg);
    plot->legend->setTextColor(text);
    plot->legend->setBorderPen(QPen(grid));
    for (int i = 0; i < plot->plotLayout()->elementCount(); ++i)
        if (auto* title = qobject_cast<QCPTextElement*>(plot->plotLayout()->elementAt(i)))
            title->setTextColor(text);
    plot->replot(QCustomPlot::rpQueuedReplot);
}

QPalette darkPalette() {
    QPalette p;
    const QColor window(0x2b, 0x2d, 0x33), base(0x1f, 0x21, 0x26), text(0xe6, 0xe6, 0xe6);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, base);
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, window);
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, Qt::red);
    p.setColor(QPalette::Highlight, QColor(0x3d, 0x8e, 0xe0));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Link, QColor(0x6a, 0xb0, 0xff));
    p.setColor(QPalette::PlaceholderText, QColor(0x90, 0x90, 0x90));
    p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x80, 0x80, 0x80));
    p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x80, 0x80, 0x80));
    p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(0x80, 0x80, 0x80));
    return p;
}

}  // namespace memscope::gui
