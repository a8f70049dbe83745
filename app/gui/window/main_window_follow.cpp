// File → Follow… and --follow: a run view of a trace still being written,
// updated as the file grows (loading/run_follower.h); Record → Attach to a
// running job…, through memscope-cli attach.
#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QPointer>
#include <QProcess>
#include <QRegularExpression>
#include <QTabWidget>
#include <memory>

#include "common/format.h"
#include "dialogs/attach_dialog.h"
#include "loading/run_follower.h"
#include "run_view/run_view.h"
#include "window/main_window.h"

namespace memscope::gui {

void MainWindow::followPath(const QString& path) {
    auto* follower = new RunFollower(path, this);
    follower->setObjectName(QStringLiteral("follower"));
    // The view appears with the first readable version; closing its tab ends
    // the following (the follower lives as its child from then on).
    auto view = std::make_shared<QPointer<RunView>>();
    auto warned = std::make_shared<QStringList>();
    connect(
        follower, &RunFollower::runUpdated, this,
        [this, follower, view, warned](RunPtr run, qint64 loaded, qint64 pending) {
            // Damage in the middle of the file is still damage: said
            // once, in the status bar and errors().
            for (const RunPart& part : run->parts)
                for (const LoadWarning& w : part.warnings) {
                    const QString text =
                        QStringLiteral("%1: %2").arg(part.path, QString::fromStdString(w.message));
                    if (!warned->contains(text)) {
                        *warned << text;
                        errors_ << text;
                    }
                }
            if (!*view) {
                if (follower->reloads() > 1) {  // its tab was closed
                    follower->deleteLater();
                    return;
                }
                *view = addRunView(run);
                (*view)->setFollowing(true);
                follower->setParent(*view);
            } else {
                (*view)->updateRun(run);
            }
            status_->setText(
                QStringLiteral("Following %1: %2 read%3%4")
                    .arg(QFileInfo(follower->currentFile()).fileName(), formatBytes(double(loaded)),
                         pending > 0 ? QStringLiteral(", %1 waiting for the writer")
                                           .arg(formatBytes(double(pending)))
                                     : QString(),
                         warned->isEmpty() ? QString()
                                           : QStringLiteral(" (damaged: ") + warned->back() +
                                                 QStringLiteral(")")));
            updateActionStates();
        });
    connect(follower, &RunFollower::failed, this, [this](const QString& file, const QString& why) {
        status_->setText(QStringLiteral("Following %1: cannot read it yet: %2")
                             .arg(QFileInfo(file).fileName(), why));
    });
    status_->setText(QStringLiteral("Following %1: waiting for data").arg(path));
    follower->start();
}

void MainWindow::followDialog() {
    const QString path = QFileDialog::getOpenFileName(
        this, QStringLiteral("Follow a trace being written"), QString(),
        QStringLiteral("Native traces (*.memscope);;All files (*)"));
    if (!path.isEmpty()) followPath(path);
}

void MainWindow::attachDialog() {
    AttachDialog dialog(this);
    if (dialog.exec() == QDialog::Accepted && dialog.selectedPid() > 0)
        attachToJob(dialog.selectedPid(), dialog.steps());
}

void MainWindow::attachToJob(qint64 pid, int steps) {
    // memscope-cli beside this program (an install, a build), else on PATH.
    QString cli = QCoreApplication::applicationDirPath() + QStringLiteral("/memscope-cli");
    if (!QFileInfo(cli).isExecutable()) cli = QStringLiteral("memscope-cli");
    auto* process = new QProcess(this);
    const QDateTime started = QDateTime::currentDateTime();
    connect(process, &QProcess::finished, this,
            [this, process, pid, started](int code, QProcess::ExitStatus) {
                const QString out = QString::fromLocal8Bit(process->readAllStandardOutput());
                const QString err =
                    QString::fromLocal8Bit(process->readAllStandardError()).trimmed();
                process->deleteLater();
                // attach ends with "memscope: N traces in DIR".
                static const QRegularExpression done(QStringLiteral("traces? in (.+)$"),
                                                     QRegularExpression::MultilineOption);
                const QRegularExpressionMatch m = done.match(out);
                if (code != 0 || !m.hasMatch()) {
                    const QString why = err.isEmpty() ? QStringLiteral("no trace written")
                                                      : err.section(QLatin1Char('\n'), -1);
                    status_->setText(QStringLiteral("Attach to %1 failed: %2").arg(pid).arg(why));
                    errors_ << QStringLiteral("attach %1: %2").arg(pid).arg(why);
                    return;
                }
                QStringList fresh;
                const QDir dir(m.captured(1).trimmed());
                for (const QFileInfo& f :
                     dir.entryInfoList({QStringLiteral("*.memscope")}, QDir::Files, QDir::Time))
                    if (f.lastModified() >= started.addSecs(-1)) fresh << f.filePath();
                status_->setText(QStringLiteral("Attach to %1: %2 trace(s) in %3")
                                     .arg(pid)
                                     .arg(fresh.size())
                                     .arg(dir.path()));
                if (!fresh.isEmpty()) openPaths(fresh, false);
            });
    connect(
        process, &QProcess::errorOccurred, this, [this, process, cli](QProcess::ProcessError e) {
            if (e != QProcess::FailedToStart) return;
            status_->setText(QStringLiteral("Cannot run %1: %2").arg(cli, process->errorString()));
            errors_ << status_->text();
            process->deleteLater();
        });
    process->start(cli, {QStringLiteral("attach"), QString::number(pid), QStringLiteral("--steps"),
                         QString::number(steps)});
    status_->setText(
        QStringLiteral("Attached to %1: recording the next %2 step(s)…").arg(pid).arg(steps));
}

}  // namespace memscope::gui
