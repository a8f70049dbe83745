#pragma once
// Runs core's what-if (whatif.h) on a worker thread, as the loader opens
// files: progress counts policies done, a cooperative cancel, and the
// predicted runs handed over as immutable Runs that the compare view shows
// beside measured ones. Every figure is core's; this only carries them.

#include <QMetaType>
#include <QObject>
#include <atomic>
#include <memory>
#include <span>
#include <vector>

#include "loading/background_task.h"
#include "loading/run.h"
#include "memscope/base/result.h"
#include "memscope/base/task_context.h"
#include "memscope/whatif/whatif.h"

namespace memscope::gui {

struct WhatIfOutcome {
    RunPtr source;  // the measured run predicted from
    std::shared_ptr<const WhatIfReport> report;
    // A run per row with a predicted trace, in row order; each trace carries
    // Trace::prediction and is named "POLICY (predicted)".
    std::vector<RunPtr> predicted;
};

// The part of `run` a what-if predicts from: the one holding its busiest
// device (a multi-rank run predicts one rank).
const RunPart* whatIfPart(const Run& run);

// A prediction's row as a Run of its own (null without a kept trace),
// named as its trace says ("POLICY (predicted)").
RunPtr predictedRun(const WhatIfRow& row);

// Core's whatIf on the run's part, with the predicted traces kept, and a Run
// made of each; `policies` empty: core's default sweep for the run's layers.
// Progress counts policies done. Blocking; call it off the GUI thread (the
// runner, tests).
Result<WhatIfOutcome> runWhatIf(RunPtr source, std::span<const WhatIfPolicy> policies,
                                const TaskContext& ctx = {});

class WhatIfRunner : public QObject {
    Q_OBJECT
public:
    explicit WhatIfRunner(QObject* parent = nullptr);
    ~WhatIfRunner() override;  // cancels and waits

    // Ignored while busy or without a source (returns false).
    bool start(RunPtr source, std::vector<WhatIfPolicy> policies);
    void cancel();
    bool isBusy() const;
    // Blocks until the current run has finished (screenshots, tests); its
    // signals are still queued for the GUI thread.
    void waitForFinished();

signals:
    void started(int policies);
    void progress(int done, int total);
    void finished(memscope::gui::WhatIfOutcome outcome);
    // The what-if could not run (message) or was cancelled.
    void failed(const QString& message, bool cancelled);

private:
    BackgroundTask task_;
};

}  // namespace memscope::gui

Q_DECLARE_METATYPE(memscope::gui::WhatIfOutcome)
