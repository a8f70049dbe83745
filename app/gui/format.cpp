#include "format.h"

#include <QLocale>
#include <array>
#include <cmath>

#include "memscope/compare.h"

namespace memscope::gui {

QString toQString(std::string_view s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }

QString formatBytes(double bytes) {
    static constexpr std::array units = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = std::abs(bytes);
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < units.size()) {
        v /= 1024.0;
        ++u;
    }
    const QString sign = bytes < 0 ? QStringLiteral("-") : QString();
    if (u == 0) return sign + QStringLiteral("%1 B").arg(qint64(v));
    return sign + QStringLiteral("%1 %2").arg(v, 0, 'f', v < 10 ? 2 : (v < 100 ? 1 : 0)).arg(QLatin1String(units[u]));
}

QString formatAddress(uint64_t address) { return QStringLiteral("0x%1").arg(address, 0, 16); }

QString formatRunTime(const Trace& trace, const DeviceTimeline& tl, int64_t x) {
    if (trace.metadata.time_base == TimeBase::EventIndex) return QStringLiteral("event %1").arg(x);
    const double s = double(x - tl.start) * 1e-9;
    if (std::abs(s) < 1e-3) return QStringLiteral("%1 µs").arg(s * 1e6, 0, 'f', 1);
    if (std::abs(s) < 1.0) return QStringLiteral("%1 ms").arg(s * 1e3, 0, 'f', 3);
    return QStringLiteral("%1 s").arg(s, 0, 'f', 4);
}

QString frameText(const Trace& trace, FrameId id) {
    if (id.isNull() || id.value > trace.frames().size()) return QStringLiteral("?");
    const Frame& f = trace.frame(id);
    QString text = toQString(trace.string(f.function));
    if (text.isEmpty()) text = QStringLiteral("??");
    const QString file = toQString(trace.string(f.file));
    if (!file.isEmpty()) text += QStringLiteral("  (%1:%2)").arg(file).arg(f.line);
    return text;
}

bool isNoiseFrame(const Trace& trace, FrameId id) {
    if (id.isNull() || id.value > trace.frames().size()) return false;
    // memory_viz's list: the unwinder and traceback capture, process start-up,
    // CPython's call machinery, dispatcher boxing and registration glue.
    static constexpr std::string_view kFunctions[] = {"unwind::unwind", "CapturedTraceback::gather", "gather_with_cpp",
                                                      "__libc_start_main", "PyEval_", "PyObject_",
                                                      "PyFunction_"};
    static constexpr std::string_view kFiles[] = {"core/boxing",   "/Register",          "/Redispatch",
                                                  "pythonrun.c",   "Modules/main.c",     "Objects/call.c",
                                                  "Objects/methodobject.c", "pycore_ceval.h", "ceval.c",
                                                  "cpython/abstract.h"};
    const Frame& f = trace.frame(id);
    const std::string_view fn = trace.string(f.function);
    const std::string_view file = trace.string(f.file);
    if (fn == "_start") return true;
    for (std::string_view n : kFunctions)
        if (fn.find(n) != std::string_view::npos) return true;
    for (std::string_view n : kFiles)
        if (file.find(n) != std::string_view::npos) return true;
    return false;
}

QStringList topFrames(const Trace& trace, StackId stack, int max) {
    QStringList out;
    if (stack.isNull() || stack.value >= trace.stackCount()) return out;
    for (FrameId f : trace.stack(stack)) {
        if (isNoiseFrame(trace, f)) continue;
        out << frameText(trace, f);
        if (out.size() >= max) break;
    }
    return out;
}

QString allocationText(const Trace& trace, const DeviceTimeline& tl, const AllocationInterval& a, int maxFrames) {
    QStringList lines;
    lines << QStringLiteral("%1 at %2").arg(formatBytes(double(a.size)), formatAddress(a.address));
    lines << QStringLiteral("category: %1").arg(toQString(toString(a.category)));
    const std::string phase = phasePath(trace, a.phase);
    if (!phase.empty()) lines << QStringLiteral("phase: %1").arg(toQString(phase));
    const QString from = a.alloc_event == kNoEvent ? QStringLiteral("before recording") : formatRunTime(trace, tl, a.start);
    const QString to = a.free_event == kNoEvent ? QStringLiteral("never freed") : formatRunTime(trace, tl, a.end);
    lines << QStringLiteral("alloc: %1   free: %2").arg(from, to);
    const QStringList frames = topFrames(trace, a.stack, maxFrames);
    if (frames.isEmpty())
        lines << QStringLiteral("(no stack captured)");
    else
        for (const QString& f : frames) lines << QStringLiteral("  ") + f;
    return lines.join(QLatin1Char('\n'));
}

}  // namespace memscope::gui
