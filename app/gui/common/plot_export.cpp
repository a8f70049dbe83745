#include "common/plot_export.h"

#include <qcustomplot.h>

#include <QFileInfo>
#include <QPainter>
#include <QPdfWriter>
#include <QSvgGenerator>

namespace memscope::gui {

namespace {

QString suffixOf(const QString& path) {
    return QFileInfo(path).suffix().toLower();
}

}  // namespace

QString plotExportFilter() {
    return QStringLiteral("PNG image (*.png);;SVG drawing (*.svg);;PDF document (*.pdf)");
}

bool exportPlot(QCustomPlot* plot, const QString& path, QString* error) {
    const QString suffix = suffixOf(path);
    bool ok = false;
    if (suffix == QLatin1String("png")) {
        ok = plot->savePng(path, 0, 0, 2.0);  // 2x: crisp on high-DPI screens and in papers
    } else if (suffix == QLatin1String("pdf")) {
        ok = plot->savePdf(path);
    } else if (suffix == QLatin1String("svg")) {
        QSvgGenerator gen;
        gen.setFileName(path);
        gen.setSize(plot->size());
        gen.setViewBox(QRect(QPoint(0, 0), plot->size()));
        gen.setTitle(QStringLiteral("memscope plot"));
        QCPPainter painter;
        ok = painter.begin(&gen);
        if (ok) {
            plot->toPainter(&painter, plot->width(), plot->height());
            painter.end();
        }
    } else {
        if (error)
            *error =
                QStringLiteral("unknown image format '%1' (use .png, .svg or .pdf)").arg(suffix);
        return false;
    }
    if (!ok && error) *error = QStringLiteral("could not write %1").arg(path);
    return ok;
}

bool exportWidget(QWidget* widget, const QString& path, QString* error) {
    const QString suffix = suffixOf(path);
    bool ok = false;
    if (suffix == QLatin1String("png")) {
        const qreal dpr = 2.0;
        QPixmap pm(widget->size() * dpr);
        pm.setDevicePixelRatio(dpr);
        pm.fill(widget->palette().color(QPalette::Window));
        widget->render(&pm);
        ok = pm.save(path, "PNG");
    } else if (suffix == QLatin1String("svg")) {
        QSvgGenerator gen;
        gen.setFileName(path);
        gen.setSize(widget->size());
        gen.setViewBox(QRect(QPoint(0, 0), widget->size()));
        QPainter p;
        ok = p.begin(&gen);
        if (ok) {
            widget->render(&p);
            p.end();
        }
    } else if (suffix == QLatin1String("pdf")) {
        QPdfWriter pdf(path);
        pdf.setPageSize(QPageSize(QSizeF(widget->width(), widget->height()), QPageSize::Point));
        pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
        pdf.setResolution(72);
        QPainter p;
        ok = p.begin(&pdf);
        if (ok) {
            widget->render(&p);
            p.end();
        }
    } else {
        if (error)
            *error =
                QStringLiteral("unknown image format '%1' (use .png, .svg or .pdf)").arg(suffix);
        return false;
    }
    if (!ok && error) *error = QStringLiteral("could not write %1").arg(path);
    return ok;
}

}  // namespace memscope::gui
