#include "loading/run_loader.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QtConcurrent/QtConcurrentRun>
#include <mutex>

#include "common/format.h"
#include "memscope/builtin_plugins.h"
#include "memscope/format/native_format.h"
#include "memscope/open/open_run.h"
#include "memscope/ranks/open_ranks.h"

namespace memscope::gui {

const PluginRegistry& pluginRegistry() {
    return processRegistry();
}

namespace {

// A run part from a trace and its timeline, with what the by-allocation view
// and the out-of-memory banner need computed here on the loader thread.
RunPart toPart(std::shared_ptr<const Trace> trace, std::shared_ptr<const Timeline> timeline,
               const QString& path, const std::atomic<bool>* cancel = nullptr) {
    RunPart part;
    part.trace = std::move(trace);
    part.timeline = std::move(timeline);
    part.path = path;
    part.modules = std::make_shared<const ModuleAttribution>(*part.trace);
    part.ops = std::make_shared<const OpAttribution>(*part.trace);
    part.views = buildDeviceViews(*part.trace, *part.timeline, cancel);
    return part;
}

RunPart toPart(OpenedTrace opened, const QString& path, const std::atomic<bool>* cancel) {
    RunPart part = toPart(std::move(opened.trace), std::move(opened.timeline), path, cancel);
    part.format = QString::fromStdString(opened.format);
    part.warnings = std::move(opened.warnings);
    return part;
}

}  // namespace

RunPtr makeRun(std::shared_ptr<const Trace> trace, std::shared_ptr<const Timeline> timeline,
               const QString& name, const QString& format) {
    if (!trace || !timeline) return nullptr;
    auto run = std::make_shared<Run>();
    run->name = name;
    run->parts.push_back(toPart(std::move(trace), std::move(timeline), QString()));
    run->parts.back().format = format;
    return run;
}

Result<RunPtr> makeRun(Trace trace, const QString& path, const TaskContext& ctx) {
    std::string name = trace.metadata.name.empty()
                           ? QFileInfo(path).completeBaseName().toStdString()
                           : trace.metadata.name;
    auto opened = openTrace(std::move(trace), QFile::encodeName(path).toStdString(), ctx);
    if (!opened.ok()) return opened.error();
    auto run = std::make_shared<Run>();
    run->name = toQString(name);
    run->paths << path;
    run->parts.push_back(toPart(std::move(*opened), path, ctx.cancel));
    if (ctx.cancelled()) return cancelledError();
    return RunPtr(std::move(run));
}

Result<RunPtr> loadRun(const QString& path, const TaskContext& ctx) {
    const std::string native = QFile::encodeName(path).toStdString();
    auto run = std::make_shared<Run>();
    // Many ranks: digests only, read rank by rank on every core.
    if (QFileInfo(path).isDir() &&
        traceFilesIn(native, pluginRegistry()).size() > kFullyOpenedRanks) {
        auto ranks = openRanks(native, pluginRegistry(), ctx);
        if (!ranks.ok()) return ranks.error();
        run->name = toQString(ranks->name);
        run->paths << path;
        run->ranks = std::make_shared<const RankRun>(std::move(*ranks));
        return RunPtr(std::move(run));
    }
    auto opened = openRun(native, pluginRegistry(), ctx);
    if (!opened.ok()) return opened.error();
    run->name = toQString(opened->name);
    // A folder's ranks, for the Ranks view, before the parts move out.
    if (RankRun ranks = ranksOfRun(*opened); ranks.ranks.size() > 1)
        run->ranks = std::make_shared<const RankRun>(std::move(ranks));
    for (OpenedTrace& part : opened->parts) {
        const QString partPath = QFile::decodeName(QByteArray::fromStdString(part.path));
        run->paths << partPath;
        run->parts.push_back(toPart(std::move(part), partPath, ctx.cancel));
        if (ctx.cancelled()) return cancelledError();
    }
    return RunPtr(std::move(run));
}

Result<RunPtr> loadFollowedRun(const QString& path, const TaskContext& ctx, qint64* pendingBytes) {
    if (pendingBytes) *pendingBytes = 0;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly) ||
        file.read(qint64(kNativeMagic.size())) !=
            QByteArray(kNativeMagic.data(), qsizetype(kNativeMagic.size())))
        return loadRun(path, ctx);
    file.close();
    // As openTrace(path) does, with the reader told to wait for a cut chunk.
    const std::string native = QFile::encodeName(path).toStdString();
    std::vector<LoadWarning> warnings;
    TaskContext local = ctx;
    local.warnings = &warnings;
    NativeReadReport report;
    auto trace = importNativeTrace(native, local, {.tolerate_partial_tail = true}, &report);
    if (!trace.ok()) return makeError(native + ": " + trace.message());
    if (ctx.cancelled()) return cancelledError();
    if (pendingBytes) *pendingBytes = qint64(report.bytes_pending);
    const std::string name = trace->metadata.name.empty()
                                 ? QFileInfo(path).completeBaseName().toStdString()
                                 : trace->metadata.name;
    auto opened = openTrace(std::move(*trace), native, ctx);
    if (!opened.ok()) return opened.error();
    opened->format = "native";
    opened->warnings.insert(opened->warnings.begin(), warnings.begin(), warnings.end());
    auto run = std::make_shared<Run>();
    run->name = toQString(name);
    run->paths << path;
    run->parts.push_back(toPart(std::move(*opened), path, ctx.cancel));
    if (ctx.cancelled()) return cancelledError();
    return RunPtr(std::move(run));
}

RunLoader::RunLoader(QObject* parent) : QObject(parent) {
    qRegisterMetaType<RunPtr>();
}

RunLoader::~RunLoader() {
    cancel();
    waitForFinished();
}

// Busy until the worker has emitted finished: a slot reacting to finished may
// start the next load while the worker thread is still returning.
bool RunLoader::isBusy() const {
    return busy_->load();
}

void RunLoader::cancel() {
    if (cancel_) cancel_->store(true);
}

void RunLoader::waitForFinished() {
    future_.waitForFinished();
}

bool RunLoader::load(const QStringList& paths) {
    if (isBusy()) return false;
    future_.waitForFinished();  // the previous worker is past its last emit
    cancel_ = std::make_shared<std::atomic<bool>>(false);
    busy_->store(true);
    qint64 total = 0;
    QList<qint64> sizes;
    for (const QString& p : paths) {
        const QFileInfo fi(p);
        qint64 s = fi.size();
        if (fi.isDir())
            for (const QFileInfo& f : QDir(p).entryInfoList(QDir::Files)) s += f.size();
        sizes << std::max<qint64>(s, 1);
        total += sizes.back();
    }
    emit started(total);
    auto cancel = cancel_;
    auto busy = busy_;
    // Signals emitted from the worker reach receivers in the GUI thread queued.
    future_ = QtConcurrent::run([this, paths, sizes, total, cancel, busy] {
        int loaded = 0, failed = 0;
        bool stopped = false;  // cancelled before every path was handled
        qint64 before = 0;
        for (int i = 0; i < paths.size(); ++i) {
            if (cancel->load()) {
                stopped = true;
                break;
            }
            TaskContext ctx;
            ctx.cancel = cancel.get();
            const qint64 weight = sizes[i];
            ctx.progress = [this, before, weight, total](uint64_t done, uint64_t of) {
                const double f = of > 0 ? std::min(1.0, double(done) / double(of)) : 0.0;
                emit progress(before + qint64(f * double(weight)), total);
            };
            auto run = loadRun(paths[i], ctx);
            if (cancel->load()) {
                stopped = true;
                break;
            }
            if (run.ok()) {
                ++loaded;
                emit runLoaded(*run);
            } else {
                ++failed;
                emit failedToOpen(paths[i], QString::fromStdString(run.message()));
            }
            before += weight;
            emit progress(before, total);
        }
        busy->store(false);
        emit finished(loaded, failed, stopped);
    });
    return true;
}

}  // namespace memscope::gui
