#include "loading/whatif_runner.h"

#include <QFileInfo>

#include "common/format.h"
#include "loading/run_loader.h"

namespace memscope::gui {

const RunPart* whatIfPart(const Run& run) {
    const DeviceRef busiest = run.busiestDevice();
    if (busiest.part < 0 || size_t(busiest.part) >= run.parts.size()) return nullptr;
    const RunPart& part = run.parts[size_t(busiest.part)];
    return part.trace && part.timeline ? &part : nullptr;
}

RunPtr predictedRun(const WhatIfRow& row) {
    if (!row.trace || !row.timeline) return {};
    const QString name = toQString(row.trace->metadata.name.empty() ? row.policy + " (predicted)"
                                                                    : row.trace->metadata.name);
    return makeRun(row.trace, row.timeline, name, QStringLiteral("what-if"));
}

Result<WhatIfOutcome> runWhatIf(RunPtr source, std::span<const WhatIfPolicy> policies,
                                const TaskContext& ctx) {
    if (!source) return makeError("no run to predict from");
    const RunPart* part = whatIfPart(*source);
    if (!part) return makeError(source->name.toStdString() + ": the run holds no trace");
    // The predictions name where they came from as the CLI does: the file, else the run.
    const std::string from = !part->path.isEmpty() ? QFileInfo(part->path).fileName().toStdString()
                                                   : source->name.toStdString();
    // The policies named, else core's default sweep for the run's layers,
    // resolved here so that the count is known before the first is done.
    std::vector<WhatIfPolicy> chosen(policies.begin(), policies.end());
    if (chosen.empty()) {
        const DeviceTimeline* busiest = source->timeline(source->busiestDevice());
        auto chain = findLayerChain(*part->trace, busiest ? busiest->device : int16_t(0));
        if (chain.ok()) chosen = defaultWhatIfPolicies(*chain);
    }
    // Progress counts policies: core also hands the context to each
    // prediction's timeline build, whose reports count events; those are
    // left out.
    TaskContext inner = ctx;
    const uint64_t count = chosen.size();
    inner.progress = [&ctx, count](uint64_t done, uint64_t total) {
        if (total == count) ctx.report(done, total);
    };
    WhatIfOptions options;
    options.keep_traces = true;
    auto report = whatIf(*part->trace, *part->timeline, from, chosen, options, inner);
    if (!report.ok()) return report.error();
    WhatIfOutcome out;
    out.source = source;
    for (const WhatIfRow& row : report->rows) {
        if (ctx.cancelled()) return cancelledError();
        if (!row.trace || !row.timeline) continue;
        if (RunPtr run = predictedRun(row)) out.predicted.push_back(std::move(run));
    }
    out.report = std::make_shared<const WhatIfReport>(std::move(*report));
    return out;
}

WhatIfRunner::WhatIfRunner(QObject* parent) : QObject(parent) {
    qRegisterMetaType<WhatIfOutcome>();
}

WhatIfRunner::~WhatIfRunner() = default;  // the task cancels and waits

bool WhatIfRunner::isBusy() const {
    return task_.isBusy();
}

void WhatIfRunner::cancel() {
    task_.cancel();
}

void WhatIfRunner::waitForFinished() {
    task_.wait();
}

bool WhatIfRunner::start(RunPtr source, std::vector<WhatIfPolicy> policies) {
    if (isBusy() || !source) return false;
    // Core predicts its default sweep for an empty list; the count is then
    // known only from its progress.
    emit started(int(policies.size()));
    return task_.start(
        [this, source, policies = std::move(policies)](const std::atomic<bool>* cancel) {
            TaskContext ctx;
            ctx.cancel = cancel;
            ctx.progress = [this](uint64_t done, uint64_t total) {
                emit progress(int(std::min<uint64_t>(done, INT32_MAX)),
                              int(std::min<uint64_t>(total, INT32_MAX)));
            };
            return runWhatIf(source, policies, ctx);
        },
        [this](Result<WhatIfOutcome> outcome, bool cancelled) {
            if (cancelled)
                emit failed(QStringLiteral("cancelled"), true);
            else if (!outcome.ok())
                emit failed(toQString(outcome.message()), false);
            else
                emit finished(std::move(*outcome));
        });
}

}  // namespace memscope::gui
