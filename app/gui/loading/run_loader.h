#pragma once
// Loads runs on a worker thread (heaptrack's parser pattern): typed, staged
// signals (progress by bytes, one run at a time, failures naming the file), a
// cooperative cancel, results handed over as immutable shared_ptrs.

#include <QFuture>
#include <QObject>
#include <QStringList>
#include <atomic>
#include <memory>

#include "loading/run.h"
#include "memscope/base/result.h"
#include "memscope/open/plugin_registry.h"

namespace memscope::gui {

// The process-wide registry with the built-in and folder plugins (core's
// processRegistry(): the CLI opens files through the same one).
const PluginRegistry& pluginRegistry();

// Loads one path through core's openRun: a trace file, or a folder of
// per-rank traces as one run. Blocking; call it off the GUI thread. Used by
// the loader and by tests.
Result<RunPtr> loadRun(const QString& path, const TaskContext& ctx);

// Loads `path` as a followed run (a file still being written): a native
// trace read up to its last whole chunk, the bytes after it, waiting for the
// writer, in *pendingBytes and not reported as damage; any other file as
// loadRun does. Blocking; call it off the GUI thread (run_follower.h).
Result<RunPtr> loadFollowedRun(const QString& path, const TaskContext& ctx,
                               qint64* pendingBytes = nullptr);

// Builds a run from a trace already in memory (tests, the benchmark).
Result<RunPtr> makeRun(Trace trace, const QString& path, const TaskContext& ctx = {});

// A run of a trace and timeline core already built, with no file behind it
// (the what-if's predicted runs); null when either is missing. Blocking: it
// indexes the allocations, as loading does.
RunPtr makeRun(std::shared_ptr<const Trace> trace, std::shared_ptr<const Timeline> timeline,
               const QString& name, const QString& format);

class RunLoader : public QObject {
    Q_OBJECT
public:
    explicit RunLoader(QObject* parent = nullptr);
    ~RunLoader() override;  // cancels and waits

    // Each path becomes one run. Ignored while busy (returns false).
    bool load(const QStringList& paths);
    void cancel();
    bool isBusy() const;
    // Blocks until the current load has finished (screenshot mode, tests).
    void waitForFinished();

signals:
    void started(qint64 totalBytes);
    void progress(qint64 doneBytes, qint64 totalBytes);
    void runLoaded(memscope::gui::RunPtr run);
    void failedToOpen(const QString& path, const QString& message);
    void finished(int loaded, int failed, bool cancelled);

private:
    std::shared_ptr<std::atomic<bool>> cancel_;
    std::shared_ptr<std::atomic<bool>> busy_ = std::make_shared<std::atomic<bool>>(false);
    QFuture<void> future_;
};

}  // namespace memscope::gui
