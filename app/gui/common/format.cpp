#include "common/format.h"

#include <QLocale>
#include <algorithm>
#include <cmath>

#include "memscope/base/units.h"
#include "memscope/inference/frames.h"
#include "memscope/inference/inference.h"
#include "memscope/model/phases.h"

namespace memscope::gui {

QString toQString(std::string_view s) {
    return QString::fromUtf8(s.data(), qsizetype(s.size()));
}

QString formatBytes(double bytes) {
    // Core's text, so the GUI and the CLI print the same figure the same way.
    const double clamped = std::clamp(bytes, -9.2e18, 9.2e18);
    return toQString(memscope::formatBytes(int64_t(std::llround(clamped))));
}

QString formatAddress(uint64_t address) {
    return QStringLiteral("0x%1").arg(address, 0, 16);
}

QString formatRunTime(const Trace& trace, const DeviceTimeline& tl, int64_t x) {
    if (trace.metadata.time_base == TimeBase::EventIndex) return QStringLiteral("event %1").arg(x);
    const double s = double(x - tl.start) * 1e-9;
    if (std::abs(s) < 1e-3) return QStringLiteral("%1 µs").arg(s * 1e6, 0, 'f', 1);
    if (std::abs(s) < 1.0) return QStringLiteral("%1 ms").arg(s * 1e3, 0, 'f', 3);
    return QStringLiteral("%1 s").arg(s, 0, 'f', 4);
}

QStringList topFrames(const Trace& trace, StackId stack, int max) {
    QStringList out;
    for (FrameId f : visibleFrames(trace, stack, size_t(std::max(0, max))))
        out << toQString(memscope::frameText(trace, f));
    return out;
}

QString allocationText(const Trace& trace, const DeviceTimeline& tl, const AllocationInterval& a,
                       int maxFrames) {
    QStringList lines;
    lines << QStringLiteral("%1 at %2").arg(formatBytes(double(a.size)), formatAddress(a.address));
    // The user's own frame first: what a person looks for.
    const std::string site = siteLabel(trace, a.stack);
    if (!site.empty()) lines << QStringLiteral("site: %1").arg(toQString(site));
    lines << QStringLiteral("category: %1").arg(toQString(explainCategory(trace, tl, a)));
    const std::string phase = phasePath(trace, a.phase);
    if (!phase.empty()) lines << QStringLiteral("phase: %1").arg(toQString(phase));
    const QString from = a.alloc_event == kNoEvent ? QStringLiteral("before recording")
                                                   : formatRunTime(trace, tl, a.start);
    const QString to =
        a.free_event == kNoEvent ? QStringLiteral("never freed") : formatRunTime(trace, tl, a.end);
    lines << QStringLiteral("alloc: %1   free: %2").arg(from, to);
    const QStringList frames = topFrames(trace, a.stack, maxFrames);
    if (frames.isEmpty())
        lines << QStringLiteral("(no stack captured)");
    else
        for (const QString& f : frames) lines << QStringLiteral("  ") + f;
    return lines.join(QLatin1Char('\n'));
}

}  // namespace memscope::gui
