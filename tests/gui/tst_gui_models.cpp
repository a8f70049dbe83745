// Every item model passes QAbstractItemModelTester through its resets.
#include <QAbstractItemModelTester>
#include <QtTest>

#include "gui_test_traces.h"
#include "models.h"
#include "run_loader.h"
#include "summary_model.h"

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
            for (int c = 0; c < m.columnCount(); ++c) QVERIFY(m.data(m.index(r, c)).isValid() || c == AllocationListModel::Frame);
        m.setAllocations(nullptr, {}, {});
        QCOMPARE(m.rowCount(), 0);
    }

    void summaryTableModel() {
        std::vector<CompareEntry> entries;
        for (const char* p : {"full", "block"}) {
            auto run = makeRun(guitest::makeTrainerLikeTrace(p, 2), QString::fromLatin1(p));
            QVERIFY(run.ok());
            const DeviceRef d = (*run)->busiestDevice();
            entries.push_back({*run, d, summarizeRun({(*run)->trace(d), (*run)->timeline(d)})});
        }
        SummaryTableModel m;
        QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
        m.setEntries(entries, 0);
        QCOMPARE(m.rowCount(), 2);
        QCOMPARE(m.columnCount(), int(SummaryTableModel::ColumnCount));
        m.setBaseline(1);
        QCOMPARE(m.data(m.index(1, SummaryTableModel::PeakDelta), SummaryTableModel::RawRole).toLongLong(), 0);
        QVERIFY(m.toTextTable().contains(QStringLiteral("full")));
        m.setEntries({}, 0);
        QCOMPARE(m.rowCount(), 0);
    }
};

QTEST_MAIN(ModelsTest)
#include "tst_gui_models.moc"
