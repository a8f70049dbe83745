// File → Follow… and --follow: a run view of a trace still being written,
// updated as the file grows (loading/run_follower.h).
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QPointer>
#include <QTabWidget>
#include <memory>

#include "common/format.h"
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

}  // namespace memscope::gui
