#include "memscope/analysis/peak_check.h"

#include <cmath>
#include <cstdio>

#include "memscope/base/units.h"

namespace memscope {

Result<std::vector<CheckedPeak>> peaksToCheck(const Timeline& timeline,
                                              std::optional<int16_t> device,
                                              std::optional<TrainingPhase> phase) {
    std::vector<CheckedPeak> out;
    for (const DeviceTimeline& d : timeline.devices()) {
        if (device && d.device != *device) continue;
        CheckedPeak p;
        p.device = d.device;
        p.phase = phase;
        if (phase) {
            const auto& peak = d.phase_peaks.by_phase[size_t(index(*phase))];
            if (!peak)
                return makeError("device " + std::to_string(d.device) + " has no " +
                                 std::string(toString(*phase)) +
                                 " phase (no recorded or inferred training phases)");
            p.bytes = peak->bytes;
        } else {
            p.bytes = d.peak.bytes;
        }
        out.push_back(p);
    }
    if (out.empty()) {
        if (device) return makeError("the trace has no device " + std::to_string(*device));
        return makeError("the trace has no device with memory events");
    }
    return out;
}

Result<std::vector<CheckedPeak>> peaksToCheck(const Trace& trace, const Timeline& timeline,
                                              std::optional<int16_t> device,
                                              std::optional<TrainingPhase> phase) {
    if (!trace.digest || !phase) return peaksToCheck(timeline, device, phase);
    const DigestSection& digest = *trace.digest;
    if (device && *device != digest.device)
        return makeError("the digest has no device " + std::to_string(*device) +
                         " (it is of device " + std::to_string(digest.device) + ")");
    const auto& peak = digest.peaks_by_phase[size_t(index(*phase))];
    if (!peak)
        return makeError("device " + std::to_string(digest.device) + " has no " +
                         std::string(toString(*phase)) + " peak in the digest");
    return std::vector<CheckedPeak>{{digest.device, phase, *peak}};
}

int64_t growthLimit(int64_t baseline_bytes, double percent) {
    const double limit = std::floor(double(baseline_bytes) * (1.0 + percent / 100.0));
    if (!(limit < 9.2e18)) return INT64_MAX;
    return limit < 0 ? 0 : int64_t(limit);
}

std::string describe(const CheckedPeak& peak) {
    std::string s = "device " + std::to_string(peak.device) + (peak.device < 0 ? " (host)" : "");
    if (peak.phase) s += ", " + std::string(toString(*peak.phase));
    return s;
}

CheckVerdict judge(const CheckedPeak& peak, int64_t limit) {
    CheckVerdict v;
    v.over = peak.bytes > limit;
    char pct[32] = "";
    if (limit > 0)
        std::snprintf(pct, sizeof pct, " (%.2f%%)",
                      100.0 * double(peak.bytes - limit) / double(limit));
    if (v.over)
        v.message = describe(peak) + ": peak " + formatBytes(peak.bytes) + " (" +
                    std::to_string(peak.bytes) + " B) is " + formatBytes(peak.bytes - limit) + pct +
                    " over the limit " + formatBytes(limit) + " (" + std::to_string(limit) + " B)";
    else
        v.message = describe(peak) + ": peak " + formatBytes(peak.bytes) + " (" +
                    std::to_string(peak.bytes) + " B) within the limit " + formatBytes(limit) +
                    " (" + std::to_string(limit) + " B)";
    return v;
}

}  // namespace memscope
