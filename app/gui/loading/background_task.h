#pragma once
// The worker-thread bookkeeping the runners of core's long tasks share
// (WhatIfRunner, AdviceRunner): one job at a time on Qt's pool, a
// cooperative cancel flag handed to core through TaskContext, and busy
// until the job has handed over its outcome. The runners keep their own
// signals (a QObject's signals cannot be templated); this keeps the rest.

#include <QFuture>
#include <QtConcurrent/QtConcurrentRun>
#include <atomic>
#include <memory>
#include <utility>

#include "memscope/base/result.h"

namespace memscope::gui {

class BackgroundTask {
public:
    BackgroundTask() = default;
    BackgroundTask(const BackgroundTask&) = delete;
    BackgroundTask& operator=(const BackgroundTask&) = delete;
    ~BackgroundTask() {
        cancel();
        wait();
    }

    bool isBusy() const { return busy_->load(); }
    void cancel() {
        if (cancel_) cancel_->store(true);
    }
    // Blocks until the current job has finished; what it emitted is still
    // queued for the GUI thread.
    void wait() { future_.waitForFinished(); }

    // Runs `work(cancel_flag)` (returning a Result) on the pool, then
    // `deliver(result, cancelled)` there too, after the task stopped being
    // busy, so that a slot reacting to it may start the next. False (and
    // nothing run) while busy.
    template <typename Work, typename Deliver>
    bool start(Work work, Deliver deliver) {
        if (isBusy()) return false;
        future_.waitForFinished();
        cancel_ = std::make_shared<std::atomic<bool>>(false);
        busy_->store(true);
        future_ = QtConcurrent::run([work = std::move(work), deliver = std::move(deliver),
                                     cancel = cancel_, busy = busy_]() mutable {
            auto result = work(cancel.get());
            const bool cancelled = cancel->load();
            busy->store(false);
            deliver(std::move(result), cancelled);
        });
        return true;
    }

private:
    std::shared_ptr<std::atomic<bool>> cancel_;
    std::shared_ptr<std::atomic<bool>> busy_ = std::make_shared<std::atomic<bool>>(false);
    QFuture<void> future_;
};

}  // namespace memscope::gui
