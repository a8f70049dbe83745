// The phase strip's painter against the plain one it replaced: every phase
// visited and filled with QPainter::fillRect, one by one. Painting only what
// the pixels need (a search over ends, direct pixel fills) must give the same
// image, zoomed out over tens of thousands of phases and zoomed in on a few.
#include <QImage>
#include <QPainter>
#include <QtTest>
#include <random>

#include "run_view/phase_bands.h"

using namespace memscope;
using namespace memscope::gui;

namespace {

// The strip as it was painted before: each item in each row, merged per
// pixel when narrower than two pixels, filled by QPainter.
void paintEveryItem(QPainter& painter, const QRectF& area, const PhaseBandData& data,
                    const AxisMap& map, double x0, double x1, const QPalette& palette) {
    painter.save();
    painter.setClipRect(area);
    painter.fillRect(area, palette.color(QPalette::Base));
    const double rowH = area.height() / PhaseBandData::kRows;
    const double scale = area.width() / (x1 - x0);
    QFont font = painter.font();
    font.setPointSizeF(std::max(6.0, font.pointSizeF() * 0.8));
    painter.setFont(font);
    const QFontMetricsF fm(font);
    const int64_t lo = map.inverse(x0), hi = map.inverse(x1) + 1;
    for (int row = 0; row < PhaseBandData::kRows; ++row) {
        double lastPx = -1e9;
        for (const PhaseBandItem& it : data.rows[size_t(row)]) {
            if (it.start > hi) break;
            if (it.end < lo) continue;
            const double px0 = area.left() + (map.forward(it.start) - x0) * scale;
            const double px1 = area.left() + (map.forward(it.end) - x0) * scale;
            const double w = std::max(1.0, px1 - px0);
            if (w < 2.0 && std::floor(px0 + 0.5) <= lastPx) continue;
            lastPx = std::floor(px0 + w + 0.5) - 1;
            const QRectF r(std::max(px0, area.left() - 1), area.top() + row * rowH + 1,
                           std::min(w, area.width() + 2), rowH - 2);
            painter.fillRect(r, QColor::fromRgba(phaseBandColor(it)));
            if (r.width() > 24) {
                painter.setPen(Qt::white);
                painter.drawText(r.adjusted(2, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                                 fm.elidedText(QString::fromStdString(data.nameOf(it)),
                                               Qt::ElideRight, r.width() - 4));
            }
        }
    }
    painter.restore();
}

void addPhase(Trace& t, const char* name, PhaseKind kind, int64_t start, int64_t end,
              uint32_t step) {
    Phase p;
    p.name = t.internString(name);
    p.kind = kind;
    p.start = start;
    p.end = end;
    p.step = step;
    p.block = step;
    t.addPhase(p);
}

// Steps of forward, backward and optimizer passes of random lengths, blocks
// inside the passes, and instant annotations: four rows, none overlapping
// within a row, as recorded training holds them.
Trace denseTrace(uint32_t steps) {
    Trace t;
    std::mt19937_64 rng(3);
    int64_t now = 0;
    for (uint32_t s = 0; s < steps; ++s) {
        const int64_t step_start = now;
        for (PhaseKind pass : {PhaseKind::Forward, PhaseKind::Backward, PhaseKind::Optimizer}) {
            const int64_t len = 50 + int64_t(rng() % 400);
            addPhase(t, pass == PhaseKind::Forward ? "forward" : "backward", pass, now, now + len,
                     s);
            if (pass != PhaseKind::Optimizer)
                addPhase(t, "block", PhaseKind::Block, now + 5, now + len / 2, s);
            now += len + int64_t(rng() % 30);
        }
        addPhase(t, "step", PhaseKind::Step, step_start, now, s);
        if (s % 7 == 0) {
            Annotation a;
            a.name = t.internString("mark");
            a.time = now;
            a.stage = AnnotationStage::Instant;
            t.annotations.push_back(a);
        }
    }
    return t;
}

QImage paint(bool plain, const PhaseBandData& data, const AxisMap& map, double x0, double x1) {
    QImage image(1203, 60, QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::black);
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing, false);
    const QRectF area(17, 4, 1160, 52);
    const QPalette palette;
    if (plain)
        paintEveryItem(painter, area, data, map, x0, x1, palette);
    else
        paintPhaseBands(painter, area, data, map, x0, x1, palette);
    return image;
}

}  // namespace

class PhaseStripTest : public QObject {
    Q_OBJECT
private slots:
    void paintsWhatPaintingEveryPhaseWould() {
        const Trace trace = denseTrace(6000);  // 36,000 phases over ~5 M time units
        const PhaseBandData data = buildPhaseBands(trace, 0);
        QVERIFY(data.itemCount() > 36000);
        const int64_t end = trace.phases.back().end;
        const AxisMap map = AxisMap::linear(0, 1.0);
        // Zoomed out (dozens of phases per pixel), a middle range, zoomed in
        // (labels), and a range past the end.
        const std::pair<double, double> views[] = {{0.0, double(end)},
                                                   {double(end) * 0.31, double(end) * 0.37},
                                                   {1'000'000.5, 1'003'000.25},
                                                   {double(end) + 10, double(end) + 500}};
        for (const auto& [x0, x1] : views) {
            const QImage want = paint(true, data, map, x0, x1);
            const QImage got = paint(false, data, map, x0, x1);
            int differing = 0;
            for (int y = 0; y < want.height(); ++y)
                for (int x = 0; x < want.width(); ++x)
                    differing += want.pixel(x, y) != got.pixel(x, y);
            QVERIFY2(differing == 0, qPrintable(QStringLiteral("%1 pixels differ in view [%2, %3]")
                                                    .arg(differing)
                                                    .arg(x0)
                                                    .arg(x1)));
        }
        // Zoomed out, a row of phases side by side is painted in every pixel
        // column (a merge rule off by a column left every other one blank).
        const QImage out = paint(false, data, map, 0, double(end));
        for (int row = 0; row < PhaseBandData::kRows; ++row) {
            const int y = 4 + row * 13 + 6;
            int painted = 0;
            for (int x = 17; x < 17 + 1160; ++x)
                painted += out.pixel(x, y) != QPalette().color(QPalette::Base).rgba();
            QVERIFY2(painted >= (row == 3 ? 100 : 1158), qPrintable(QString::number(painted)));
        }
    }
};

QTEST_MAIN(PhaseStripTest)
#include "tst_gui_phase_strip.moc"
