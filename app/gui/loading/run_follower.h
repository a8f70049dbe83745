#pragma once
// Follows a trace that is still being written (`memscope --follow`, File →
// Follow…): polls the file's size and modification time every interval and,
// when it grew, reopens it on a worker thread through the same path as a
// normal open. A native trace's last chunk that the writer has not finished
// is waited for (NativeReadOptions::tolerate_partial_tail), not reported as
// damage. One reload at a time; growth seen meanwhile is picked up next.

#include <QDateTime>
#include <QFuture>
#include <QObject>
#include <QString>
#include <QTimer>
#include <atomic>
#include <memory>

#include "loading/run.h"

namespace memscope::gui {

class RunFollower : public QObject {
    Q_OBJECT
public:
    explicit RunFollower(const QString& path, QObject* parent = nullptr);
    ~RunFollower() override;  // cancels and waits

    static constexpr int kDefaultIntervalMs = 400;

    // A file, or a folder: then its most recently modified *.memscope.
    const QString& path() const { return path_; }
    QString currentFile() const;  // the file followed now; empty while none
    // Starts polling (the first poll loads the file at once).
    void start(int intervalMs = kDefaultIntervalMs);
    void stop();
    bool isActive() const { return timer_.isActive(); }
    bool isBusy() const { return busy_->load(); }
    // Checks the file now, as the timer does; false when nothing was started.
    bool poll();
    // Blocks until the reload in flight, if any, has finished (tests).
    void waitForFinished();
    int reloads() const { return reloads_; }  // runs handed over so far
    qint64 pendingBytes() const { return pending_; }

signals:
    // A new version of the run, the file read up to `loadedBytes`, with
    // `pendingBytes` after that waiting for the writer.
    void runUpdated(memscope::gui::RunPtr run, qint64 loadedBytes, qint64 pendingBytes);
    // The file could not be read this time (it stays followed).
    void failed(const QString& path, const QString& message);

private:
    void onLoaded(RunPtr run, qint64 size, qint64 pending, const QString& error);

    QString path_;
    QString file_;  // the file the last reload read
    QTimer timer_;
    qint64 seenSize_ = -1;  // size and mtime at the last reload started
    QDateTime seenModified_;
    qint64 pending_ = 0;
    int reloads_ = 0;
    std::shared_ptr<std::atomic<bool>> cancel_ = std::make_shared<std::atomic<bool>>(false);
    std::shared_ptr<std::atomic<bool>> busy_ = std::make_shared<std::atomic<bool>>(false);
    QFuture<void> future_;
};

}  // namespace memscope::gui
