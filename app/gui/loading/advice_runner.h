#pragma once
// Runs core's advisor (advisor.h) on a worker thread, as WhatIfRunner runs
// whatIf: progress counts whole runs simulated against core's estimate, a
// cooperative cancel, and the answer's predicted run handed over as an
// immutable Run, to be shown beside a measured run of the same policy.
// Every figure is core's; this only carries them.

#include <QMetaType>
#include <QObject>
#include <atomic>
#include <memory>
#include <optional>

#include "loading/background_task.h"
#include "loading/run.h"
#include "memscope/base/result.h"
#include "memscope/base/task_context.h"
#include "memscope/whatif/advisor.h"

namespace memscope::gui {

struct AdviceOutcome {
    RunPtr source;  // the measured run advised from
    std::shared_ptr<const Advice> advice;
    // The chosen policy's predicted run (Trace::prediction, "POLICY
    // (predicted)"); null without a choice, or when the choice is the
    // measured run itself.
    RunPtr predicted;
};

// Core's advise on the run's what-if part (whatIfPart), the answer's trace
// kept; `budget_bytes` none: the frontier alone. Blocking; call it off the
// GUI thread (the runner, tests).
Result<AdviceOutcome> runAdvice(RunPtr source, std::optional<int64_t> budget_bytes,
                                const TaskContext& ctx = {});

class AdviceRunner : public QObject {
    Q_OBJECT
public:
    explicit AdviceRunner(QObject* parent = nullptr);
    ~AdviceRunner() override;  // cancels and waits

    // Ignored while busy or without a source (returns false).
    bool start(RunPtr source, std::optional<int64_t> budget_bytes);
    void cancel();
    bool isBusy() const;
    // Blocks until the current run has finished; its signals are still
    // queued for the GUI thread.
    void waitForFinished();

signals:
    void progress(int done, int total);
    void finished(memscope::gui::AdviceOutcome outcome);
    // The advisor could not run (message) or was cancelled.
    void failed(const QString& message, bool cancelled);

private:
    BackgroundTask task_;
};

}  // namespace memscope::gui

Q_DECLARE_METATYPE(memscope::gui::AdviceOutcome)
