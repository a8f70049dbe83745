// Opening: every real fixture (when its importer is registered), native traces,
// a folder of ranks, a bad file (an error naming it, the app still usable).
#include <QDir>
#include <QMessageBox>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include "gui_test_traces.h"
#include "hostile_corpus.h"
#include "loading/run_loader.h"
#include "run_view/run_view.h"
#include "run_view/timeline_plot.h"
#include "run_view/zoom_state.h"
#include "window/main_window.h"

using namespace memscope;
using namespace memscope::gui;

class OpenTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void eachFixtureOpens_data() {
        QTest::addColumn<QString>("path");
        const QDir root(guitest::fixturesDir());
        int n = 0;
        for (const QString& sub : {QStringLiteral("snapshots"), QStringLiteral("profiler")}) {
            const QDir d(root.filePath(sub));
            for (const QFileInfo& fi : d.entryInfoList(QDir::Files, QDir::Name)) {
                if (fi.suffix() == QLatin1String("json") &&
                    fi.baseName() == QLatin1String("EXPECTED"))
                    continue;
                QTest::newRow(qPrintable(fi.fileName())) << fi.filePath();
                ++n;
            }
        }
        if (n == 0) QTest::newRow("no fixtures") << QString();
    }
    void eachFixtureOpens() {
        QFETCH(QString, path);
        if (path.isEmpty() && !guitest::haveFixtures())
            QSKIP(qPrintable(QStringLiteral("fixtures folder missing: ") + guitest::fixturesDir()));
        if (path.isEmpty())
            QSKIP(qPrintable(QStringLiteral("no fixtures in ") + guitest::fixturesDir()));
        if (!pluginRegistry().importerFor(QFile::encodeName(path).toStdString()).ok())
            QSKIP("no importer for this file is registered yet");
        MainWindow w(false);
        w.resize(1200, 800);
        w.show();
        w.openPaths({path});
        w.waitForLoads();
        QVERIFY2(w.errors().isEmpty(), qPrintable(w.errors().join(QLatin1Char('\n'))));
        QCOMPARE(int(w.runs().size()), 1);
        RunView* v = w.currentRunView();
        QVERIFY(v);
        QVERIFY(!v->run()->devices().empty() || v->run()->parts.front().trace->events.empty());
        v->goToPeak();
        v->plot()->renderNow();
        // At the peak, just under its top, there is always an allocation.
        const DeviceTimeline* tl = v->plot()->timeline();
        if (tl && tl->peak.bytes > 0)
            QVERIFY2(v->hoverText().contains(QStringLiteral(" at 0x")), qPrintable(v->hoverText()));
    }

    void nativeTraceOpens() {
        QTemporaryDir dir;
        const QString path = guitest::writeTrace(guitest::makeSimpleTrace(),
                                                 dir.filePath(QStringLiteral("simple.memscope")));
        QVERIFY(!path.isEmpty());
        MainWindow w(false);
        w.show();
        w.openPaths({path});
        QVERIFY(w.isLoading());
        w.waitForLoads();
        QVERIFY2(w.errors().isEmpty(), qPrintable(w.errors().join(QLatin1Char('\n'))));
        QCOMPARE(int(w.runs().size()), 1);
        QCOMPARE(w.currentRunView()->plot()->timeline()->peak.bytes, int64_t(400));
    }

    void folderOfRanksIsOneRun() {
        QTemporaryDir dir;
        for (int rank : {1, 0}) {
            Trace t = guitest::makeSimpleTrace();
            t.metadata.rank = rank;
            t.metadata.name = "rank" + std::to_string(rank);
            QVERIFY(!guitest::writeTrace(
                         t, dir.filePath(QStringLiteral("trace-rank%1.memscope").arg(rank)))
                         .isEmpty());
        }
        auto run = loadRun(dir.path(), {});
        QVERIFY2(run.ok(), run.ok() ? "" : run.message().c_str());
        QCOMPARE(int((*run)->parts.size()), 2);
        QCOMPARE((*run)->parts.front().trace->metadata.rank, 0);
        const auto devices = (*run)->devices();
        QCOMPARE(int(devices.size()), 2);
        QCOMPARE((*run)->deviceLabel(devices[1]), QStringLiteral("rank 1 / cuda:0"));
    }

    // Tabs are the runs' names ("train.py rank 1"); two runs of one script
    // are told apart by their pids, and lose the pid when only one is left.
    void tabsAreRunNamesToldApart() {
        QTemporaryDir dir;
        QStringList paths;
        const struct {
            const char* name;
            int64_t pid;
        } runs[] = {{"train.py", 30337}, {"train.py rank 1", 30338}, {"train.py", 30400}};
        for (const auto& r : runs) {
            Trace t = guitest::makeSimpleTrace();
            t.metadata.name = r.name;
            t.metadata.pid = r.pid;
            paths << guitest::writeTrace(
                t, dir.filePath(QStringLiteral("memscope-%1.memscope").arg(r.pid)));
            QVERIFY(!paths.back().isEmpty());
        }
        MainWindow w(false);
        w.show();
        w.openPaths(paths);
        w.waitForLoads();
        QVERIFY2(w.errors().isEmpty(), qPrintable(w.errors().join(QLatin1Char('\n'))));
        auto* tabs = w.findChild<QTabWidget*>();
        QVERIFY(tabs);
        QStringList titles;
        for (int i = 0; i < tabs->count(); ++i)
            if (qobject_cast<RunView*>(tabs->widget(i))) titles << tabs->tabText(i);
        QCOMPARE(titles, (QStringList{QStringLiteral("train.py (pid 30337)"),
                                      QStringLiteral("train.py rank 1"),
                                      QStringLiteral("train.py (pid 30400)")}));
        QCOMPARE(w.windowTitle(), QStringLiteral("train.py (pid 30400) — memscope"));
        // Close the first: the other train.py is the only one left.
        for (int i = 0; i < tabs->count(); ++i)
            if (tabs->tabText(i) == QStringLiteral("train.py (pid 30337)")) {
                emit tabs->tabCloseRequested(i);
                break;
            }
        titles.clear();
        for (int i = 0; i < tabs->count(); ++i)
            if (qobject_cast<RunView*>(tabs->widget(i))) titles << tabs->tabText(i);
        QCOMPARE(titles,
                 (QStringList{QStringLiteral("train.py rank 1"), QStringLiteral("train.py")}));
    }

    void badFileShowsErrorAndAppStaysUsable() {
        QTemporaryDir dir;
        const QString bad = dir.filePath(QStringLiteral("garbage.memscope"));
        {
            QFile f(bad);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("MEMSCOPE\x01\x02 this is not a trace at all");
        }
        const QString missing = dir.filePath(QStringLiteral("missing.pickle"));
        MainWindow w(false);
        w.show();
        w.openPaths({bad, missing});
        w.waitForLoads();
        QCOMPARE(w.errors().size(), 2);
        QVERIFY2(w.errors()[0].contains(QStringLiteral("garbage.memscope")),
                 qPrintable(w.errors()[0]));
        QVERIFY2(w.errors()[1].contains(QStringLiteral("missing.pickle")),
                 qPrintable(w.errors()[1]));
        auto* box = w.findChild<QMessageBox*>(QStringLiteral("openErrorBox"));
        QVERIFY(box);
        QTRY_VERIFY(box->isVisible());
        QVERIFY(box->informativeText().contains(QStringLiteral("garbage.memscope")));
        box->accept();
        // Still usable: a good file opens afterwards.
        const QString good = guitest::writeTrace(guitest::makeSimpleTrace(),
                                                 dir.filePath(QStringLiteral("ok.memscope")));
        w.openPaths({good});
        w.waitForLoads();
        QCOMPARE(int(w.runs().size()), 1);
    }

    // Issue 14's hostile corpus (its small sizes) through the GUI's own loader
    // and views: each case opens or fails with a message; drawing and hovering
    // never crash, and the axis stays finite. (Which cases warn is checked in
    // tests/hostile, on the loaders the GUI shares.)
    void hostileCorpusOpensOrFailsWithAMessage() {
        QTemporaryDir dir;
        const auto cases = hostile::writeCorpus(dir.path().toStdString(), /*full=*/false);
        QVERIFY(cases.size() > 20);
        int opened = 0, refused = 0;
        for (const hostile::Case& c : cases) {
            const QString path = QString::fromStdString(c.path);
            auto run = loadRun(path, {});
            if (!run.ok()) {
                ++refused;
                QVERIFY2(!run.message().empty(), qPrintable(path));
                continue;
            }
            ++opened;
            RunView view(*run);
            view.resize(800, 500);
            view.show();
            QVERIFY(QTest::qWaitForWindowExposed(&view));
            view.plot()->renderNow();
            const ZoomState* z = view.zoom();
            QVERIFY2(std::isfinite(z->fullBegin()) && std::isfinite(z->fullEnd()),
                     qPrintable(path));
            (void)view.plot()->hoverTextAt((z->begin() + z->end()) / 2, 10);
        }
        QVERIFY(opened > 0 && refused > 0);
    }

    void damagedTailOpensWithAWarning() {
        QTemporaryDir dir;
        Trace big = guitest::makeSimpleTrace();
        // Enough chunks that cutting the last one off leaves a usable run.
        for (int i = 0; i < 200000; ++i)
            big.events.push_back(Event{big.events.back().time + 1,
                                       0x100000 + uint64_t((i / 2) % 64) * 256,
                                       256,
                                       {},
                                       {},
                                       0,
                                       0,
                                       i % 2 ? EventKind::FreeCompleted : EventKind::Alloc,
                                       Category::Temporary});
        const QString path = guitest::writeTrace(big, dir.filePath(QStringLiteral("cut.memscope")));
        QVERIFY(!path.isEmpty());
        QFile f(path);
        QVERIFY(f.resize(f.size() - 100));
        MainWindow w(false);
        w.show();
        w.openPaths({path});
        w.waitForLoads();
        QCOMPARE(int(w.runs().size()), 1);
        auto* box = w.findChild<QMessageBox*>(QStringLiteral("openErrorBox"));
        QVERIFY(box);
        QTRY_VERIFY(box->isVisible());
        QVERIFY2(box->informativeText().contains(QStringLiteral("cut.memscope: opened, but")),
                 qPrintable(box->informativeText()));
    }

    void cancelStopsLoading() {
        QTemporaryDir dir;
        QStringList paths;
        for (int i = 0; i < 8; ++i)
            paths << guitest::writeTrace(guitest::makeTrainerLikeTrace("full", 4),
                                         dir.filePath(QStringLiteral("r%1.memscope").arg(i)));
        RunLoader loader;
        QSignalSpy finished(&loader, &RunLoader::finished);
        QVERIFY(loader.load(paths));
        loader.cancel();
        QTRY_COMPARE(finished.count(), 1);
        // Either the cancel stopped it early, or it had already finished.
        const int handled = finished.front().at(0).toInt() + finished.front().at(1).toInt();
        QCOMPARE(finished.front().at(2).toBool(), handled < 8);
        QVERIFY(!loader.isBusy());
        QVERIFY(loader.load(paths));  // usable again after a cancel
        loader.waitForFinished();
        QTRY_COMPARE(finished.count(), 2);
        QCOMPARE(finished.back().at(0).toInt(), 8);
    }
};

QTEST_MAIN(OpenTest)
#include "tst_gui_open.moc"
