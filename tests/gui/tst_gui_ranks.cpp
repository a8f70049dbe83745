// The Ranks view of a multi-rank run: rows in rank order, the imbalance in
// words, hover text, and a click that opens one rank; a small folder keeps
// its ranks' timelines, a large one only their digests; a damaged rank among
// good ones is said and the others shown.
#include <qcustomplot.h>

#include <QDir>
#include <QFile>
#include <QImage>
#include <QTemporaryDir>
#include <QtTest>

#include "gui_test_traces.h"
#include "loading/run_loader.h"
#include "ranks/ranks_view.h"
#include "run_view/run_view.h"
#include "window/main_window.h"

using namespace memscope;
using namespace memscope::gui;

namespace {

// Writes `count` ranks of a training-like run into `dir`; rank `heavy` holds
// three times the others' bytes.
void writeRanks(const QTemporaryDir& dir, int count, int heavy) {
    for (int rank = count - 1; rank >= 0; --rank) {  // written out of order
        Trace t = guitest::makeTrainerLikeTrace("full", 2);
        t.metadata.rank = rank;
        t.metadata.name = "train.py rank " + std::to_string(rank);
        if (rank == heavy)
            for (Event& e : t.events) e.size *= 3;
        QVERIFY(
            !guitest::writeTrace(
                 t, dir.filePath(
                        QStringLiteral("memscope-%1-rank%2.memscope").arg(100 + rank).arg(rank)))
                 .isEmpty());
    }
}

// The heat map's colour at the middle of a row, at time x (seconds).
QColor heatColorAt(RanksView* view, size_t row, double x) {
    auto* plot = view->findChild<QCustomPlot*>(QStringLiteral("rankHeatMap"));
    const QImage image = plot->grab().toImage();
    const QPointF p(plot->xAxis->coordToPixel(x), plot->yAxis->coordToPixel(double(row)));
    const qreal dpr = image.devicePixelRatio();
    return image.pixelColor(int(p.x() * dpr), int(p.y() * dpr));
}

}  // namespace

class RanksTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void aFewRanksShowSideBySideWithTheImbalanceInWords() {
        QTemporaryDir dir;
        writeRanks(dir, 3, 2);
        MainWindow w(false);
        w.resize(1400, 900);
        w.show();
        w.openPaths({dir.path()});
        w.waitForLoads();
        QVERIFY2(w.errors().isEmpty(), qPrintable(w.errors().join(QLatin1Char('\n'))));
        QCOMPARE(int(w.runs().size()), 1);  // a few ranks keep their timelines too
        QCOMPARE(int(w.ranksViews().size()), 1);
        RanksView* v = w.ranksViews().front();
        QCOMPARE(w.findChild<QTabWidget*>()->currentWidget(), v);
        QCOMPARE(int(v->heatMap().rows), 3);
        QCOMPARE(int(v->shownRanks().size()), 3);
        const RunPtr run = w.runs().front();
        for (int r = 0; r < 3; ++r) {
            QCOMPARE(v->shownRanks()[r].rank, r);  // rank order, whatever the files' order
            QCOMPARE(v->shownRanks()[r].peak_bytes,
                     run->parts[size_t(r)].timeline->devices().front().peak.bytes);
        }
        const QString text = v->findChild<QLabel*>(QStringLiteral("imbalanceText"))->text();
        QVERIFY2(text.contains(QStringLiteral("train.py: 3 ranks")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("rank 2 peaks highest")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("200% above rank 0")), qPrintable(text));
        // Hover at rank 2's peak names it, its bytes and that it is the peak.
        const RankDigest& heavy = v->shownRanks()[2];
        const int64_t since = heavy.peak_time - v->heatMap().origins[2];
        const size_t column = v->heatMap().columnOf(since);
        const QString tip = v->describeCell(2, column);
        QVERIFY2(tip.startsWith(QStringLiteral("rank 2\n")), qPrintable(tip));
        QVERIFY2(tip.contains(QStringLiteral("the rank's peak")), qPrintable(tip));
        QVERIFY2(tip.contains(QStringLiteral("click to open")), qPrintable(tip));
        // The picture: the heavy rank's row is drawn hotter than rank 0's at its peak.
        const double x = double(since) / 1e9;
        const QColor hot = heatColorAt(v, 2, x), cool = heatColorAt(v, 0, x);
        QVERIFY2(hot != cool, qPrintable(hot.name() + QLatin1Char(' ') + cool.name()));
        QVERIFY(hot.lightness() > cool.lightness());  // thermal: more bytes, lighter
    }

    void manyRanksOpenAsDigestsAndAClickOpensOne() {
        QTemporaryDir dir;
        const int count = int(kFullyOpenedRanks) + 4;
        writeRanks(dir, count, 5);
        QFile bad(dir.filePath(QStringLiteral("memscope-999-rank99.memscope")));
        QVERIFY(bad.open(QIODevice::WriteOnly));
        bad.write("MEMSCOPE but cut short");
        bad.close();
        MainWindow w(false);
        w.resize(1400, 900);
        w.show();
        w.openPaths({dir.path()});
        w.waitForLoads();
        QCOMPARE(int(w.runs().size()), 0);  // no timeline kept
        QCOMPARE(int(w.ranksViews().size()), 1);
        RanksView* v = w.ranksViews().front();
        QVERIFY(v->run()->parts.empty());
        QCOMPARE(int(v->heatMap().rows), count);
        const QString text = v->imbalanceText();
        QVERIFY2(text.contains(QStringLiteral("1 could not be read")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("memscope-999-rank99.memscope")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("rank 5 peaks highest")), qPrintable(text));
        // A click on rank 5's row opens that rank, and only it, as a run.
        auto* plot = v->findChild<QCustomPlot*>(QStringLiteral("rankHeatMap"));
        const QPoint at(int(plot->xAxis->coordToPixel(plot->xAxis->range().center())),
                        int(plot->yAxis->coordToPixel(5.0)));
        QTest::mouseClick(plot, Qt::LeftButton, {}, at);
        QTRY_COMPARE_WITH_TIMEOUT(int(w.runs().size()), 1, 10000);
        w.waitForLoads();
        QCOMPARE(w.runs().front()->parts.front().trace->metadata.rank, 5);
    }
};

QTEST_MAIN(RanksTest)
#include "tst_gui_ranks.moc"
