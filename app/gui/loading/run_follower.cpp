#include "loading/run_follower.h"

#include <QDir>
#include <QFileInfo>
#include <QMetaObject>
#include <QtConcurrent/QtConcurrentRun>

#include "loading/run_loader.h"

namespace memscope::gui {

RunFollower::RunFollower(const QString& path, QObject* parent) : QObject(parent), path_(path) {
    qRegisterMetaType<RunPtr>();
    connect(&timer_, &QTimer::timeout, this, [this] { poll(); });
}

RunFollower::~RunFollower() {
    cancel_->store(true);
    future_.waitForFinished();
}

void RunFollower::start(int intervalMs) {
    timer_.start(intervalMs);
    poll();
}

void RunFollower::stop() {
    timer_.stop();
}

void RunFollower::waitForFinished() {
    future_.waitForFinished();
}

QString RunFollower::currentFile() const {
    const QFileInfo given(path_);
    if (!given.isDir()) return path_;
    // A folder: its most recently modified trace (the one being written).
    const QFileInfoList files = QDir(path_).entryInfoList({QStringLiteral("*.memscope")},
                                                          QDir::Files | QDir::Readable, QDir::Time);
    return files.isEmpty() ? QString() : files.front().filePath();
}

bool RunFollower::poll() {
    if (busy_->load()) return false;
    const QString file = currentFile();
    if (file.isEmpty()) return false;
    const QFileInfo info(file);
    if (!info.exists()) return false;
    if (file != file_) {
        file_ = file;
        seenSize_ = -1;
    }
    const qint64 size = info.size();
    const QDateTime modified = info.lastModified();
    if (size == seenSize_ && modified == seenModified_) return false;
    seenSize_ = size;
    seenModified_ = modified;
    busy_->store(true);
    future_.waitForFinished();  // the previous worker is past its last line
    auto cancel = cancel_;
    auto busy = busy_;
    const QString path = file_;
    // `this` outlives the worker: the destructor cancels and waits for it.
    future_ = QtConcurrent::run([this, path, size, cancel, busy] {
        TaskContext ctx;
        ctx.cancel = cancel.get();
        qint64 pending = 0;
        auto run = loadFollowedRun(path, ctx, &pending);
        RunPtr loaded = run.ok() ? *run : nullptr;
        const QString error = run.ok() ? QString() : QString::fromStdString(run.message());
        busy->store(false);
        if (cancel->load()) return;
        // Handed to the GUI thread; Qt drops it if the follower is gone by then.
        QMetaObject::invokeMethod(
            this, [this, loaded, size, pending, error] { onLoaded(loaded, size, pending, error); },
            Qt::QueuedConnection);
    });
    return true;
}

void RunFollower::onLoaded(RunPtr run, qint64 size, qint64 pending, const QString& error) {
    if (!run) {
        emit failed(path_, error);
        return;
    }
    pending_ = pending;
    ++reloads_;
    emit runUpdated(std::move(run), size - pending, pending);
}

}  // namespace memscope::gui
