// Every item model passes QAbstractItemModelTester through its resets.
#include <QAbstractItemModelTester>
#include <QtTest>

#include "compare/summary_model.h"
#include "gui_test_traces.h"
#include "inspect/models.h"
#include "loading/run_loader.h"

using namespace memscope;
using namespace memscope::gui;

class ModelsTest : public QObject {
    Q_OBJECT
private slots:
    void stackFrameModel() {
        auto run = makeRun(guitest::makeSimpleTrace(), QStringLiteral("s"));
        QVERIFY(run.ok());
        StackFrameModel m;
        QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
        const DeviceTimeline* tl = (*run)->timeline((*run)->busiestDevice());
        const std::shared_ptr<const Trace> trace((*run)->parts.front().trace);
        m.setStack(trace, tl->intervals.front().stack);
        QCOMPARE(m.rowCount(), 1);
        QCOMPARE(m.hiddenCount(), 1);
        m.setShowNoise(true);
        QCOMPARE(m.rowCount(), 2);
        m.setStack(nullptr, {});
        QCOMPARE(m.rowCount(), 0);
    }

    void allocationListModel() {
        auto run = makeRun(guitest::makeSimpleTrace(), QStringLiteral("s"));
        QVERIFY(run.ok());
        AllocationListModel m;
        QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
        m.setAllocations(*run, (*run)->busiestDevice(), {0, 1, 2, 999});
        QCOMPARE(m.rowCount(), 3);  // out-of-range indexes are dropped
        QCOMPARE(m.columnCount(), int(AllocationListModel::ColumnCount));
        for (int r = 0; r < m.rowCount(); ++r)
            for (int c = 0; c < m.columnCount(); ++c)
                QVERIFY(m.data(m.index(r, c)).isValid() || c == AllocationListModel::Frame);
        m.setAllocations(nullptr, {}, {});
        QCOMPARE(m.rowCount(), 0);
    }

    void summaryTableModel() {
        std::vector<CompareEntry> entries;
        for (const char* p : {"full", "block"}) {
            auto run = makeRun(guitest::makeTrainerLikeTrace(p, 2), QString::fromLatin1(p));
            QVERIFY(run.ok());
            const DeviceRef d = (*run)->busiestDevice();
            entries.push_back({*run, d, {}, {}});
        }
        SummaryTableModel m;
        QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
        m.setRuns(entries, 0, AlignMode::Time, {});
        QCOMPARE(m.rowCount(), 2);
        // Fixed columns, "Why" (both runs recorded their policy), then only
        // the categories that hold bytes at a peak.
        QCOMPARE(m.columnCount(), 10 + int(m.table().categories.size()));
        const int why = m.whyColumn();
        QVERIFY(why >= 0);
        QCOMPARE(m.headerData(why, Qt::Horizontal).toString(), QStringLiteral("Why"));
        // The baseline has none; block's says why its peak changed, as the CLI's why line.
        QVERIFY(m.data(m.index(0, why)).isNull());
        const QString blockWhy = m.data(m.index(1, why)).toString();
        QVERIFY2(blockWhy.contains(QStringLiteral("block")), qPrintable(blockWhy));
        QVERIFY(m.toTextTable().contains(QStringLiteral("  why: ") + blockWhy));
        int delta = -1;
        for (int c = 0; c < m.columnCount(); ++c)
            if (m.column(c).kind == CompareColumnKind::PeakDelta) delta = c;
        QVERIFY(delta >= 0);
        m.setBaseline(1);
        QCOMPARE(m.data(m.index(1, delta), SummaryTableModel::RawRole).toLongLong(), 0);
        QCOMPARE(m.data(m.index(0, delta), SummaryTableModel::RawRole).toLongLong(),
                 m.table().rows[0].summary.peak_bytes - m.table().rows[1].summary.peak_bytes);
        QVERIFY(m.toTextTable().contains(QStringLiteral("full")));
        for (int c = 0; c < m.columnCount(); ++c)
            if (m.column(c).kind == CompareColumnKind::CategoryAtPeak)
                QVERIFY(m.data(m.index(0, c), SummaryTableModel::RawRole).toLongLong() != 0 ||
                        m.data(m.index(1, c), SummaryTableModel::RawRole).toLongLong() != 0);
        m.setRuns({}, 0, AlignMode::Time, {});
        QCOMPARE(m.rowCount(), 0);
    }
};

QTEST_MAIN(ModelsTest)
#include "tst_gui_models.moc"
