#include "analysis.h"

#include <algorithm>

#include "memscope/analysis/activation_theory.h"
#include "memscope/format/native_format.h"

namespace memscope::trainer {

Result<LoadedTrace> loadTrace(const std::string& path) {
    auto trace = readNativeTrace(path);
    if (!trace) return makeError("cannot read " + path + ": " + trace.message());
    LoadedTrace t;
    t.trace = std::make_shared<const Trace>(std::move(trace.value()));
    auto timeline = Timeline::build(*t.trace);
    if (!timeline)
        return makeError("cannot build the timeline of " + path + ": " + timeline.message());
    t.timeline = timeline.value();
    t.device = t.timeline->device(0);
    if (!t.device) return makeError(path + " has no events on device 0");
    return t;
}

PeakInfo peakOf(const LoadedTrace& t) {
    PeakInfo p;
    const Peak& peak = t.device->peak;
    p.bytes = peak.bytes;
    p.time_us = (peak.time - t.device->start) / 1000;
    p.by_category = peak.by_category;
    if (const Phase* ph = t.trace->phase(peak.phase)) {
        p.phase = std::string(t.trace->string(ph->name));
        p.kind = ph->kind;
        p.step = ph->step;
    }
    return p;
}

const DeviceTimeline& highestPeakDevice(const LoadedTrace& t) {
    const DeviceTimeline* best = t.device;
    for (const DeviceTimeline& d : t.timeline->devices())
        if (d.peak.bytes > best->peak.bytes) best = &d;
    return *best;
}

std::map<int, int64_t> activationByBlockAtForwardEnd(const LoadedTrace& t, int step) {
    std::map<int, int64_t> out;
    for (const auto& [layer, bytes] : activationBytesByLayer(*t.trace, *t.device, step))
        out[layer] = bytes;
    return out;
}

int64_t liveAt(const LoadedTrace& t, Category category, int64_t x) {
    return t.device->live_by_category[index(category)].valueAt(x);
}

int64_t maxLive(const LoadedTrace& t, Category category) {
    const StepSeries& s = t.device->live_by_category[index(category)];
    int64_t best = s.initial;
    for (int64_t y : s.ys()) best = std::max(best, y);
    return best;
}

int64_t liveAtEnd(const LoadedTrace& t, PhaseId phase, Category category) {
    const Phase* p = t.trace->phase(phase);
    return p ? liveAt(t, category, p->end) : 0;
}

namespace {

ActivationFormula formulaFor(Recompute recompute) {
    switch (recompute) {
        case Recompute::None:
            return ActivationFormula::KorthikantiFull;
        case Recompute::Selective:
            return ActivationFormula::KorthikantiSelective;
        case Recompute::Block:
            return ActivationFormula::KorthikantiInput;
        case Recompute::Sqrt:
        case Recompute::Segments:
        case Recompute::Save:
            break;  // not one of the paper's per-layer formulas
    }
    return ActivationFormula::None;
}

ModelShape shapeOf(const ModelConfig& m) {
    ModelShape s;
    s.seq = static_cast<int32_t>(m.seq);
    s.batch = static_cast<int32_t>(m.batch);
    s.hidden = static_cast<int32_t>(m.hidden);
    s.heads = static_cast<int32_t>(m.heads);
    s.dropout = m.dropout;
    return s;
}

}  // namespace

double gptLayerFormula(const ModelConfig& m, Recompute recompute) {
    return gptLayerBytes(shapeOf(m), formulaFor(recompute),
                         static_cast<double>(dtypeBytes(m.dtype)));
}

}  // namespace memscope::trainer
