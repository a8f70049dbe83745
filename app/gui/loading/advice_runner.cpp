#include "loading/advice_runner.h"

#include <QFileInfo>
#include <algorithm>

#include "common/format.h"
#include "loading/whatif_runner.h"

namespace memscope::gui {

Result<AdviceOutcome> runAdvice(RunPtr source, std::optional<int64_t> budget_bytes,
                                const TaskContext& ctx) {
    if (!source) return makeError("no run to advise from");
    const RunPart* part = whatIfPart(*source);
    if (!part) return makeError(source->name.toStdString() + ": the run holds no trace");
    // Named as runWhatIf names its predictions' source: the file, else the run.
    const std::string from = !part->path.isEmpty() ? QFileInfo(part->path).fileName().toStdString()
                                                   : source->name.toStdString();
    AdvisorOptions options;
    options.keep_answer_trace = true;
    auto advice = advise(*part->trace, *part->timeline, from, budget_bytes, options, ctx);
    if (!advice.ok()) return advice.error();
    AdviceOutcome out;
    out.source = source;
    if (advice->choice) out.predicted = predictedRun(advice->choice->row);
    out.advice = std::make_shared<const Advice>(std::move(*advice));
    return out;
}

AdviceRunner::AdviceRunner(QObject* parent) : QObject(parent) {
    qRegisterMetaType<AdviceOutcome>();
}

AdviceRunner::~AdviceRunner() = default;  // the task cancels and waits

bool AdviceRunner::isBusy() const {
    return task_.isBusy();
}

void AdviceRunner::cancel() {
    task_.cancel();
}

void AdviceRunner::waitForFinished() {
    task_.wait();
}

bool AdviceRunner::start(RunPtr source, std::optional<int64_t> budget_bytes) {
    if (!source) return false;
    return task_.start(
        [this, source, budget_bytes](const std::atomic<bool>* cancel) {
            TaskContext ctx;
            ctx.cancel = cancel;
            ctx.progress = [this](uint64_t done, uint64_t total) {
                // Core's total is an estimate: the bar never runs past it.
                const uint64_t t = std::max(done, total);
                emit progress(int(std::min<uint64_t>(done, INT32_MAX)),
                              int(std::min<uint64_t>(t, INT32_MAX)));
            };
            return runAdvice(source, budget_bytes, ctx);
        },
        [this](Result<AdviceOutcome> outcome, bool cancelled) {
            if (cancelled)
                emit failed(QStringLiteral("cancelled"), true);
            else if (!outcome.ok())
                emit failed(toQString(outcome.message()), false);
            else
                emit finished(std::move(*outcome));
        });
}

}  // namespace memscope::gui
