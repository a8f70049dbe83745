#include "loading/run.h"

#include <QFile>
#include <QFileInfo>

namespace memscope::gui {

std::vector<DeviceRef> Run::devices() const {
    std::vector<DeviceRef> out;
    for (int p = 0; p < int(parts.size()); ++p) {
        if (!parts[size_t(p)].timeline) continue;
        const auto& devs = parts[size_t(p)].timeline->devices();
        for (int d = 0; d < int(devs.size()); ++d) out.push_back({p, d});
    }
    return out;
}

QString Run::deviceLabel(DeviceRef ref) const {
    const DeviceTimeline* tl = timeline(ref);
    if (!tl) return {};
    QString dev =
        tl->device < 0 ? QStringLiteral("host") : QStringLiteral("cuda:%1").arg(tl->device);
    // memscope-train on the CPU records host allocations as device 0 and says so
    // in its metadata ("device" = "cpu").
    const Trace* t0 = trace(ref);
    const std::string* recorded = t0 ? t0->metadata.property("device") : nullptr;
    if (recorded && *recorded == "cpu" && tl->device == 0) dev = QStringLiteral("cpu");
    if (parts.size() > 1) {
        const Trace* t = trace(ref);
        const int rank = t && t->metadata.rank >= 0 ? t->metadata.rank : ref.part;
        return QStringLiteral("rank %1 / %2").arg(rank).arg(dev);
    }
    return dev;
}

const DeviceTimeline* Run::timeline(DeviceRef ref) const {
    if (ref.part < 0 || size_t(ref.part) >= parts.size() || !parts[size_t(ref.part)].timeline)
        return nullptr;
    const auto& devs = parts[size_t(ref.part)].timeline->devices();
    if (ref.device_index < 0 || size_t(ref.device_index) >= devs.size()) return nullptr;
    return &devs[size_t(ref.device_index)];
}

const Trace* Run::trace(DeviceRef ref) const {
    if (ref.part < 0 || size_t(ref.part) >= parts.size()) return nullptr;
    return parts[size_t(ref.part)].trace.get();
}

const DeviceView* Run::view(DeviceRef ref) const {
    if (ref.part < 0 || size_t(ref.part) >= parts.size()) return nullptr;
    const auto& views = parts[size_t(ref.part)].views;
    if (ref.device_index < 0 || size_t(ref.device_index) >= views.size()) return nullptr;
    return &views[size_t(ref.device_index)];
}

const AllocationIndex* Run::allocationIndex(DeviceRef ref) const {
    const DeviceView* v = view(ref);
    return v ? v->allocations.get() : nullptr;
}

std::shared_ptr<const PhaseBandData> Run::phaseBands(DeviceRef ref) const {
    const DeviceView* v = view(ref);
    return v ? v->phase_bands : nullptr;
}

std::span<const OomReport> Run::ooms(DeviceRef ref) const {
    const DeviceView* v = view(ref);
    return v ? std::span<const OomReport>(v->ooms) : std::span<const OomReport>();
}

const ModuleAttribution* Run::moduleAttribution(DeviceRef ref) const {
    if (ref.part < 0 || size_t(ref.part) >= parts.size()) return nullptr;
    return parts[size_t(ref.part)].modules.get();
}

const OpAttribution* Run::opAttribution(DeviceRef ref) const {
    if (ref.part < 0 || size_t(ref.part) >= parts.size()) return nullptr;
    return parts[size_t(ref.part)].ops.get();
}

std::optional<DeviceRef> Run::firstOomDevice() const {
    std::optional<DeviceRef> best;
    int64_t when = INT64_MAX;
    for (DeviceRef r : devices())
        for (const OomReport& o : ooms(r))
            if (!o.endState() && (!best || o.time < when)) {
                best = r;
                when = o.time;
            }
    return best;
}

DeviceRef Run::busiestDevice() const {
    DeviceRef best;
    int64_t peak = -1;
    for (DeviceRef r : devices()) {
        const DeviceTimeline* tl = timeline(r);
        if (tl && tl->peak.bytes > peak) {
            peak = tl->peak.bytes;
            best = r;
        }
    }
    return best;
}

RunLabel Run::label() const {
    RunLabel label;
    label.name = name.toStdString();
    if (parts.size() == 1 && parts.front().trace) label.pid = parts.front().trace->metadata.pid;
    // Named "(predicted)" from its trace's provenance, as the CLI names it.
    for (const auto& part : parts) label.predicted |= part.trace && part.trace->prediction;
    // One file: its path; a folder of ranks: the folder.
    if (parts.size() == 1 && !paths.isEmpty())
        label.path = QFile::encodeName(paths.front()).toStdString();
    else if (!paths.isEmpty())
        label.path = QFile::encodeName(QFileInfo(paths.front()).path()).toStdString();
    return label;
}

QStringList distinctNames(const std::vector<std::shared_ptr<const Run>>& runs) {
    std::vector<RunLabel> labels;
    for (const auto& r : runs) labels.push_back(r ? r->label() : RunLabel{});
    QStringList out;
    for (const std::string& n : distinctRunNames(labels)) out << QString::fromStdString(n);
    return out;
}

}  // namespace memscope::gui
