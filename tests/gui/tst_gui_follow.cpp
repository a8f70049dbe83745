// Following a trace still being written (File → Follow…, --follow): a native
// trace written step by step, its bytes copied into the followed file in
// growing prefixes, some cut in the middle of a chunk. The view sees later
// steps appear without reopening, a half-written chunk is no damage, and the
// x range stays where the user put it unless "Follow end" is on; a folder
// that record --live writes is followed through its live snapshot to the
// final trace.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <QFile>
#include <QTemporaryDir>
#include <QtTest>
#include <cstring>

#include "common/plot_export.h"
#include "dialogs/attach_dialog.h"
#include "loading/run_follower.h"
#include "loading/run_loader.h"
#include "memscope/format/native_format.h"
#include "memscope_test/event_builder.h"
#include "run_view/run_view.h"
#include "run_view/timeline_plot.h"
#include "run_view/zoom_state.h"
#include "window/app_options.h"
#include "window/main_window.h"

using namespace memscope;
using namespace memscope::gui;

namespace {

constexpr int kSteps = 3;
constexpr int64_t kStepNs = 1'000'000;

// Writes a trace of kSteps steps (step, forward and backward phases, a module
// scope per pass, allocations and frees), flushed after each step; returns
// the file's size after each flush.
std::vector<qint64> writeSteps(const QString& path) {
    TraceMetadata meta;
    meta.name = "followed";
    meta.source_format = "test";
    auto w = NativeTraceWriter::create(path.toStdString(), meta, {.events_per_chunk = 3});
    if (!w.ok()) qFatal("cannot write %s", w.message().c_str());
    NativeTraceWriter& writer = **w;
    writer.setModuleSource(ModuleSource::Recorded);
    const ModuleId root = writer.addModule({writer.internString(""), writer.internString("Net"),
                                            writer.internString("Net"), ModuleId{}, 0});
    const ModuleId layer =
        writer.addModule({writer.internString("layer"), writer.internString("Net"),
                          writer.internString("Linear"), root, 1});
    std::vector<qint64> sizes;
    for (int s = 0; s < kSteps; ++s) {
        const int64_t t0 = s * kStepNs;
        const PhaseId step = writer.addPhase({writer.internString("step " + std::to_string(s)),
                                              PhaseKind::Step,
                                              {},
                                              s,
                                              -1,
                                              -1,
                                              t0,
                                              t0 + 900'000});
        const PhaseId fwd = writer.addPhase({writer.internString("forward"), PhaseKind::Forward,
                                             step, s, -1, -1, t0, t0 + 400'000});
        const PhaseId bwd = writer.addPhase({writer.internString("backward"), PhaseKind::Backward,
                                             step, s, -1, -1, t0 + 400'000, t0 + 900'000});
        writer.addModuleScope({t0, t0 + 400'000, layer, ModuleScopeKind::Forward});
        const uint64_t a = 0x10000 + uint64_t(s) * 0x1000;
        writer.append(testsupport::makeEvent(t0 + 10, EventKind::Alloc, a, 4096 * (s + 1),
                                             Category::Activation)
                          .phase(fwd));
        writer.append(testsupport::makeEvent(t0 + 200'000, EventKind::Alloc, a + 0x800000, 8192,
                                             Category::Temporary)
                          .phase(fwd));
        writer.append(testsupport::makeEvent(t0 + 500'000, EventKind::FreeCompleted, a + 0x800000,
                                             8192, Category::Temporary)
                          .phase(bwd));
        writer.append(testsupport::makeEvent(t0 + 800'000, EventKind::FreeCompleted, a,
                                             4096 * (s + 1), Category::Activation)
                          .phase(bwd));
        if (!writer.flush().ok()) qFatal("flush failed");
        sizes.push_back(QFileInfo(path).size());
    }
    if (!writer.close().ok()) qFatal("close failed");
    sizes.back() = QFileInfo(path).size();
    return sizes;
}

int stepsOf(const Run& run) {
    int n = 0;
    for (const Phase& p : run.parts.front().trace->phases) n += p.kind == PhaseKind::Step;
    return n;
}

int warningsOf(const Run& run) {
    int n = 0;
    for (const RunPart& part : run.parts) n += int(part.warnings.size());
    return n;
}

}  // namespace

class FollowTest : public QObject {
    Q_OBJECT
private:
    QTemporaryDir dir_;
    QByteArray full_;
    std::vector<qint64> sizes_;
    QString live_;

    // Makes the followed file hold the first n bytes of the full trace.
    void growTo(qint64 n) {
        QFile f(live_);
        QVERIFY(f.open(QIODevice::Append));
        const qint64 have = f.size();
        QVERIFY(n >= have);
        QCOMPARE(f.write(full_.constData() + have, n - have), n - have);
        f.close();
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        const QString full = dir_.filePath(QStringLiteral("full.memscope"));
        sizes_ = writeSteps(full);
        QFile f(full);
        QVERIFY(f.open(QIODevice::ReadOnly));
        full_ = f.readAll();
        QCOMPARE(qint64(full_.size()), sizes_.back());
        live_ = dir_.filePath(QStringLiteral("live.memscope"));
    }

    void followsAFileAsItGrows() {
        MainWindow window(false);
        window.resize(1400, 900);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QFile::remove(live_);
        growTo(sizes_[0]);  // the first step, whole
        window.followPath(live_);
        QTRY_VERIFY_WITH_TIMEOUT(window.currentRunView() != nullptr, 10000);
        RunView* view = window.currentRunView();
        auto* follower = view->findChild<RunFollower*>();
        QVERIFY(follower);
        QVERIFY(view->isFollowing());
        QCOMPARE(stepsOf(*view->run()), 1);
        QCOMPARE(view->run()->parts.front().trace->modules.modules.size(), size_t(2));
        QVERIFY(view->followsEnd());  // it shows the whole run, its end included

        // The user zooms into the first step: the end is out of view, and
        // "Follow end" turns off.
        ZoomState* zoom = view->zoom();
        const double x0 = zoom->fullBegin() + (zoom->fullEnd() - zoom->fullBegin()) * 0.2;
        const double x1 = zoom->fullBegin() + (zoom->fullEnd() - zoom->fullBegin()) * 0.6;
        zoom->setRange(x0, x1, true);
        QVERIFY(!view->followsEnd());

        // A chunk header cut short: waited for, no damage.
        int reloads = follower->reloads();
        growTo(sizes_[0] + 7);
        QTRY_VERIFY_WITH_TIMEOUT(follower->reloads() > reloads, 5000);
        QCOMPARE(follower->pendingBytes(), qint64(7));
        QCOMPARE(warningsOf(*view->run()), 0);
        QVERIFY2(window.errors().isEmpty(), qPrintable(window.errors().join(QLatin1Char('\n'))));
        QCOMPARE(stepsOf(*view->run()), 1);

        // Up to one byte short of the second step: its last chunk cut in the middle.
        reloads = follower->reloads();
        growTo(sizes_[1] - 1);
        QTRY_VERIFY_WITH_TIMEOUT(follower->reloads() > reloads, 5000);
        QVERIFY(follower->pendingBytes() > 0);
        QCOMPARE(warningsOf(*view->run()), 0);
        QVERIFY(window.errors().isEmpty());

        // The second step completes: it appears, in the same view, and the
        // range stays where the user put it.
        reloads = follower->reloads();
        growTo(sizes_[1]);
        QTRY_VERIFY_WITH_TIMEOUT(follower->reloads() > reloads, 5000);
        QCOMPARE(follower->pendingBytes(), qint64(0));
        QCOMPARE(stepsOf(*view->run()), 2);
        QCOMPARE(window.currentRunView(), view);
        QCOMPARE(window.tabs()->count(), 1);
        QCOMPARE(zoom->begin(), x0);
        QCOMPARE(zoom->end(), x1);
        QVERIFY(zoom->fullEnd() >= 1.9 * (kStepNs * 1e-9) * 0.9);
        QVERIFY(!view->followsEnd());

        // Following the end: the view keeps its width and moves with the end.
        view->setFollowEnd(true);
        QCOMPARE(zoom->end(), zoom->fullEnd());
        const double width = zoom->end() - zoom->begin();
        const double endBefore = zoom->fullEnd();
        reloads = follower->reloads();
        growTo(sizes_[2]);
        QTRY_VERIFY_WITH_TIMEOUT(follower->reloads() > reloads, 5000);
        QCOMPARE(stepsOf(*view->run()), kSteps);
        QVERIFY(zoom->fullEnd() > endBefore);
        QCOMPARE(zoom->end(), zoom->fullEnd());
        QVERIFY(qAbs(zoom->end() - zoom->begin() - width) < width * 1e-9);
        QVERIFY(view->followsEnd());
        QCOMPARE(warningsOf(*view->run()), 0);
        QVERIFY(window.errors().isEmpty());

        // The picture: the whole run, followed.
        zoom->reset();
        QVERIFY(view->followsEnd());
        view->plot()->renderNow();
        QCoreApplication::processEvents();
        const QString shot = qEnvironmentVariableIsSet("MEMSCOPE_FOLLOW_SCREENSHOT")
                                 ? qEnvironmentVariable("MEMSCOPE_FOLLOW_SCREENSHOT")
                                 : dir_.filePath(QStringLiteral("follow.png"));
        QString error;
        QVERIFY2(exportWidget(&window, shot, &error), qPrintable(error));
    }

    void aDamagedChunkIsStillReported() {
        // A byte flipped inside the first step's events: damage, not a wait.
        const QString bad = dir_.filePath(QStringLiteral("bad.memscope"));
        QByteArray bytes = full_;
        bytes[int(sizes_[0]) - 2] = char(bytes[int(sizes_[0]) - 2] ^ 0x5a);
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(bytes);
        f.close();
        qint64 pending = -1;
        auto run = loadFollowedRun(bad, {}, &pending);
        QVERIFY2(run.ok(), run.ok() ? "" : run.message().c_str());
        QCOMPARE(pending, qint64(0));
        QVERIFY(warningsOf(**run) > 0);
    }

    void followOnTheCommandLine() {
        const AppOptions o = parseOptions({QStringLiteral("memscope"), QStringLiteral("--follow"),
                                           QStringLiteral("a.memscope"), QStringLiteral("--follow"),
                                           QStringLiteral("runs")});
        QVERIFY2(o.error.isEmpty(), qPrintable(o.error));
        QCOMPARE(o.follow, (QStringList{QStringLiteral("a.memscope"), QStringLiteral("runs")}));
        const AppOptions bad =
            parseOptions({QStringLiteral("memscope"), QStringLiteral("--follow"),
                          QStringLiteral("a.memscope"), QStringLiteral("--screenshot"),
                          QStringLiteral("x.png"), QStringLiteral("b.memscope")});
        QVERIFY(!bad.error.isEmpty());
    }

    void attachListsTheJobsWithAControlSocket() {
        QTemporaryDir runtime;
        QVERIFY(runtime.isValid());
        QVERIFY(QDir(runtime.path()).mkdir(QStringLiteral("memscope")));
        const QByteArray was = qgetenv("XDG_RUNTIME_DIR");
        qputenv("XDG_RUNTIME_DIR", runtime.path().toLocal8Bit());
        // This process as a job's process: a socket named by its pid. A
        // socket whose process is gone is left out.
        const QString mine = runtime.filePath(QStringLiteral("memscope/%1.sock").arg(::getpid()));
        const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        QVERIFY(fd >= 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        const QByteArray native = QFile::encodeName(mine);
        QVERIFY(size_t(native.size()) < sizeof(addr.sun_path));
        std::memcpy(addr.sun_path, native.constData(), size_t(native.size()));
        QCOMPARE(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0);
        QFile stale(runtime.filePath(QStringLiteral("memscope/999999999.sock")));
        QVERIFY(stale.open(QIODevice::WriteOnly));
        stale.close();

        const std::vector<AttachableProcess> found = attachableProcesses();
        QCOMPARE(found.size(), size_t(1));
        QCOMPARE(found.front().pid, qint64(::getpid()));
        QVERIFY2(found.front().command.contains(QStringLiteral("tst_gui_follow")),
                 qPrintable(found.front().command));
        AttachDialog dialog;
        QCOMPARE(dialog.jobCount(), 1);
        QCOMPARE(dialog.selectedPid(), qint64(::getpid()));
        QCOMPARE(dialog.steps(), 2);
        ::close(fd);
        QFile::remove(mine);
        dialog.refresh();
        QCOMPARE(dialog.jobCount(), 0);
        QCOMPARE(dialog.selectedPid(), qint64(-1));
        qputenv("XDG_RUNTIME_DIR", was);
    }

    void followingAFolderPicksItsNewestTrace() {
        QTemporaryDir folder;
        QVERIFY(folder.isValid());
        QFile::copy(dir_.filePath(QStringLiteral("full.memscope")),
                    folder.filePath(QStringLiteral("memscope-1.memscope")));
        RunFollower follower(folder.path());
        QCOMPARE(follower.currentFile(), folder.filePath(QStringLiteral("memscope-1.memscope")));
        QSignalSpy updated(&follower, &RunFollower::runUpdated);
        follower.start(50);
        QTRY_COMPARE_WITH_TIMEOUT(updated.count(), 1, 5000);
        const RunPtr run = updated.front().front().value<RunPtr>();
        QCOMPARE(stepsOf(*run), kSteps);
    }

    // record --live: DIR/memscope-PID.live.memscope is replaced whole (a
    // temporary file renamed over it) as the job records, then the final
    // trace appears beside it and the live file goes.
    void followsARecordLiveFolderAsItsSnapshotIsReplaced() {
        QTemporaryDir folder;
        QVERIFY(folder.isValid());
        auto replace = [&](const QString& name, const QByteArray& bytes) {
            const QString tmp = folder.filePath(name + QStringLiteral(".tmp"));
            QFile f(tmp);
            QVERIFY(f.open(QIODevice::WriteOnly));
            QCOMPARE(f.write(bytes), qint64(bytes.size()));
            f.close();
            QCOMPARE(::rename(QFile::encodeName(tmp).constData(),
                              QFile::encodeName(folder.filePath(name)).constData()),
                     0);
        };
        const QString live = QStringLiteral("memscope-7.live.memscope");
        replace(live, full_.left(sizes_[0]));
        RunFollower follower(folder.path());
        QSignalSpy updated(&follower, &RunFollower::runUpdated);
        follower.start(50);
        auto steps = [&] {
            return updated.isEmpty() ? 0 : stepsOf(*updated.back().front().value<RunPtr>());
        };
        QTRY_COMPARE_WITH_TIMEOUT(steps(), 1, 5000);
        replace(live, full_.left(sizes_[1]));
        QTRY_COMPARE_WITH_TIMEOUT(steps(), 2, 5000);
        replace(QStringLiteral("memscope-7.memscope"), full_);
        QVERIFY(QFile::remove(folder.filePath(live)));
        QTRY_COMPARE_WITH_TIMEOUT(follower.currentFile(),
                                  folder.filePath(QStringLiteral("memscope-7.memscope")), 5000);
        QTRY_COMPARE_WITH_TIMEOUT(steps(), kSteps, 5000);
    }
};

QTEST_MAIN(FollowTest)
#include "tst_gui_follow.moc"
