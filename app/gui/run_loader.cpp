#include "run_loader.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QtConcurrent/QtConcurrentRun>
#include <mutex>

#include "format.h"
#include "memscope/builtin_plugins.h"
#include "memscope/compare.h"
#include "memscope/native_format.h"

namespace memscope::gui {

const PluginRegistry& pluginRegistry() {
    static PluginRegistry* registry = [] {
        auto* r = new PluginRegistry;  // lives for the process: plugins may be dlopen'ed
        (void)registerAllPlugins(*r);
        return r;
    }();
    return *registry;
}

namespace {

bool looksNative(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return false;
    const QByteArray head = f.read(qint64(kNativeMagic.size()));
    return head == QByteArray(kNativeMagic.data(), qsizetype(kNativeMagic.size()));
}

Result<Trace> importFile(const QString& path, const TaskContext& ctx) {
    const std::string p = QFile::encodeName(path).toStdString();
    Result<Trace> t = pluginRegistry().load(p, ctx);
    // The native reader is part of core: a native trace opens even when no
    // native importer plugin is registered.
    if (!t.ok() && looksNative(path) && !pluginRegistry().importer("native")) return readNativeTrace(p, ctx);
    return t;
}

QStringList traceFilesIn(const QDir& dir) {
    QStringList out;
    for (const QFileInfo& fi : dir.entryInfoList(QDir::Files | QDir::Readable, QDir::Name)) {
        const std::string p = QFile::encodeName(fi.filePath()).toStdString();
        if (pluginRegistry().importerFor(p).ok() || looksNative(fi.filePath())) out << fi.filePath();
    }
    return out;
}

}  // namespace

Result<RunPtr> makeRun(Trace trace, const QString& path, const TaskContext& ctx) {
    auto run = std::make_shared<Run>();
    if (trace.metadata.name.empty()) trace.metadata.name = QFileInfo(path).completeBaseName().toStdString();
    run->name = toQString(trace.metadata.name);
    run->paths << path;
    auto shared = std::make_shared<const Trace>(std::move(trace));
    auto tl = Timeline::build(*shared, ctx);
    if (!tl.ok()) return tl.error();
    RunPart part;
    part.trace = shared;
    part.timeline = *tl;
    part.path = path;
    for (const DeviceTimeline& d : part.timeline->devices()) part.largest.push_back(largestIntervals(d, kLargestKept));
    run->parts.push_back(std::move(part));
    return RunPtr(std::move(run));
}

Result<RunPtr> loadRun(const QString& path, const TaskContext& ctx) {
    const QFileInfo info(path);
    if (!info.exists()) return makeError(QStringLiteral("%1: no such file or folder").arg(path).toStdString());
    if (!info.isDir()) {
        auto trace = importFile(path, ctx);
        if (!trace.ok()) return trace.error();
        return makeRun(std::move(*trace), path, ctx);
    }
    const QStringList files = traceFilesIn(QDir(path));
    if (files.isEmpty()) return makeError(QStringLiteral("%1: the folder holds no trace memscope can read").arg(path).toStdString());
    auto run = std::make_shared<Run>();
    run->name = info.fileName();
    for (const QString& f : files) {
        auto trace = importFile(f, ctx);
        if (!trace.ok()) return trace.error();
        auto one = makeRun(std::move(*trace), f, ctx);
        if (!one.ok()) return one.error();
        run->paths << f;
        run->parts.push_back((*one)->parts.front());
    }
    // Ranks in rank order where the traces know their rank, else file order.
    std::stable_sort(run->parts.begin(), run->parts.end(), [](const RunPart& a, const RunPart& b) {
        return a.trace->metadata.rank < b.trace->metadata.rank;
    });
    return RunPtr(std::move(run));
}

RunLoader::RunLoader(QObject* parent) : QObject(parent) { qRegisterMetaType<RunPtr>(); }

RunLoader::~RunLoader() {
    cancel();
    waitForFinished();
}

// Busy until the worker has emitted finished: a slot reacting to finished may
// start the next load while the worker thread is still returning.
bool RunLoader::isBusy() const { return busy_->load(); }

void RunLoader::cancel() {
    if (cancel_) cancel_->store(true);
}

void RunLoader::waitForFinished() { future_.waitForFinished(); }

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
