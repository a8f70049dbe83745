#include "phase_peak_tracker.h"

#include <algorithm>
#include <limits>

#include "saturating.h"

namespace memscope {

std::string_view toString(TrainingPhase phase) {
    switch (phase) {
        case TrainingPhase::Forward:
            return "forward";
        case TrainingPhase::Backward:
            return "backward";
        case TrainingPhase::Optimizer:
            return "optimizer";
    }
    return "forward";
}

std::optional<TrainingPhase> trainingPhaseFromString(std::string_view name) {
    for (TrainingPhase p : kAllTrainingPhases)
        if (toString(p) == name) return p;
    return std::nullopt;
}

std::optional<TrainingPhase> trainingPhaseOf(PhaseKind kind) {
    switch (kind) {
        case PhaseKind::Forward:
            return TrainingPhase::Forward;
        case PhaseKind::Backward:
            return TrainingPhase::Backward;
        case PhaseKind::Optimizer:
            return TrainingPhase::Optimizer;
        default:
            return std::nullopt;
    }
}

bool PhasePeaks::empty() const {
    return by_step.empty() && std::none_of(by_phase.begin(), by_phase.end(),
                                           [](const auto& p) { return p.has_value(); });
}

std::optional<WindowPeak> PhasePeaks::highest() const {
    std::optional<WindowPeak> best;
    for (const auto& p : by_phase)
        if (p &&
            (!best || p->bytes > best->bytes || (p->bytes == best->bytes && p->time < best->time)))
            best = p;
    return best;
}

namespace detail {
namespace {

constexpr int32_t kUnknown = -2;
constexpr int32_t kNoStepAncestor = -3;  // look the step up by time
constexpr size_t kMaxDepth = 64;         // a corrupt parent chain must not loop

int64_t windowEnd(const Phase& p) {
    return p.end > p.start ? p.end : std::numeric_limits<int64_t>::max();
}

// A higher peak wins; of equal ones the earlier.
bool higher(const WindowPeak& a, const WindowPeak& b) {
    return a.bytes > b.bytes || (a.bytes == b.bytes && a.time < b.time);
}

}  // namespace

PhasePeakTracker::PhasePeakTracker(const Trace& trace, int16_t device) : trace_(trace) {
    const auto& phases = trace.phases;
    phase_window_.assign(phases.size() + 1, kUnknown);
    step_window_.assign(phases.size() + 1, kUnknown);
    phase_window_[0] = step_window_[0] = -1;
    // Steps first, so that a training phase can name its step's ordinal.
    std::vector<uint32_t> steps;
    for (uint32_t i = 0; i < phases.size(); ++i)
        if (phases[i].kind == PhaseKind::Step && phaseOnDevice(phases[i], device))
            steps.push_back(i);
    std::stable_sort(steps.begin(), steps.end(),
                     [&](uint32_t a, uint32_t b) { return phases[a].start < phases[b].start; });
    for (uint32_t i : steps) {
        Window w;
        w.start = phases[i].start;
        w.end = windowEnd(phases[i]);
        w.step = int32_t(steps_.size());
        w.recorded_step = phases[i].step;
        w.id = PhaseId(i + 1);
        step_window_[i + 1] = int32_t(windows_.size());
        steps_.push_back(int32_t(windows_.size()));
        windows_.push_back(w);
    }
    for (uint32_t i = 0; i < phases.size(); ++i) {
        const Phase& p = phases[i];
        const auto kind = trainingPhaseOf(p.kind);
        if (!kind || !phaseOnDevice(p, device)) continue;
        // Top level only: no training-phase ancestor.
        bool nested = false;
        PhaseId up = p.parent;
        for (size_t guard = 0; !up.isNull() && guard < kMaxDepth; ++guard) {
            const Phase* a = trace.phase(up);
            if (!a) break;
            if (trainingPhaseOf(a->kind)) nested = true;
            up = a->parent;
        }
        if (nested) continue;
        Window w;
        w.start = p.start;
        w.end = windowEnd(p);
        w.phase = int8_t(index(*kind));
        w.id = PhaseId(i + 1);
        const int32_t sw = stepWindowOf(PhaseId(i + 1), p.start);
        w.step = sw >= 0 ? windows_[size_t(sw)].step : -1;
        phases_.push_back(int32_t(windows_.size()));
        windows_.push_back(w);
    }
    std::stable_sort(phases_.begin(), phases_.end(), [&](int32_t a, int32_t b) {
        return windows_[size_t(a)].start < windows_[size_t(b)].start;
    });
}

int32_t PhasePeakTracker::byTime(const std::vector<int32_t>& sorted,
                                 const std::vector<Window>& windows, int64_t time) {
    // The last window that starts at or before `time`, if it still runs then.
    auto it = std::upper_bound(sorted.begin(), sorted.end(), time,
                               [&](int64_t t, int32_t w) { return t < windows[size_t(w)].start; });
    if (it == sorted.begin()) return -1;
    const Window& w = windows[size_t(*std::prev(it))];
    return time < w.end ? *std::prev(it) : -1;
}

int32_t PhasePeakTracker::phaseWindowOf(PhaseId id) {
    if (id.value >= phase_window_.size()) return -1;
    int32_t& memo = phase_window_[id.value];
    if (memo != kUnknown) return memo;
    // The outermost training-phase ancestor (the phase itself included).
    PhaseId outermost;
    PhaseId up = id;
    for (size_t guard = 0; !up.isNull() && guard < kMaxDepth; ++guard) {
        const Phase* p = trace_.phase(up);
        if (!p) break;
        if (trainingPhaseOf(p->kind)) outermost = up;
        up = p->parent;
    }
    memo = -1;
    if (!outermost.isNull()) {
        const Phase& p = *trace_.phase(outermost);
        // The window of that phase: find it among the top-level windows by start.
        for (auto it = std::lower_bound(
                 phases_.begin(), phases_.end(), p.start,
                 [&](int32_t w, int64_t t) { return windows_[size_t(w)].start < t; });
             it != phases_.end() && windows_[size_t(*it)].start == p.start; ++it)
            if (windows_[size_t(*it)].phase == int8_t(index(*trainingPhaseOf(p.kind)))) memo = *it;
    }
    return memo;
}

int32_t PhasePeakTracker::stepWindowOf(PhaseId id, int64_t time) {
    if (id.isNull() || id.value >= step_window_.size()) return byTime(steps_, windows_, time);
    int32_t& memo = step_window_[id.value];
    if (memo == kUnknown) {
        memo = -1;
        PhaseId up = id;  // the phase itself may be the step
        for (size_t guard = 0; !up.isNull() && guard < kMaxDepth; ++guard) {
            const Phase* p = trace_.phase(up);
            if (!p) break;
            if (p->kind == PhaseKind::Step && up.value < step_window_.size() &&
                step_window_[up.value] >= 0) {
                memo = step_window_[up.value];
                break;
            }
            up = p->parent;
        }
        if (memo < 0) memo = kNoStepAncestor;
    }
    return memo >= 0 ? memo : byTime(steps_, windows_, time);
}

void PhasePeakTracker::touch(Window& w, const Event& e, int64_t local, int64_t live,
                             const CategoryBytes& by_category) {
    if (w.seen) return;
    w.seen = true;
    w.start_live = live;
    w.peak.bytes = live;
    w.peak.time = std::min(w.start, e.time);
    w.peak.event_index = local - 1;
    w.peak.phase = w.id;  // until an event inside names its own phase
    w.peak.by_category = by_category;
}

PhasePeakTracker::Slot PhasePeakTracker::enter(const Event& e, int64_t local, int64_t live,
                                               const CategoryBytes& by_category) {
    Slot s;
    s.phase = e.phase.isNull() ? byTime(phases_, windows_, e.time) : phaseWindowOf(e.phase);
    s.step = stepWindowOf(e.phase, e.time);
    if (s.phase >= 0) touch(windows_[size_t(s.phase)], e, local, live, by_category);
    if (s.step >= 0) touch(windows_[size_t(s.step)], e, local, live, by_category);
    return s;
}

void PhasePeakTracker::update(Slot slot, const Event& e, int64_t local, int64_t live,
                              const CategoryBytes& by_category) {
    for (int32_t i : {slot.phase, slot.step}) {
        if (i < 0) continue;
        WindowPeak& p = windows_[size_t(i)].peak;
        if (live > p.bytes) {
            p.bytes = live;
            p.time = e.time;
            p.event_index = local;
            p.phase = e.phase;
            p.by_category = by_category;
        }
    }
}

PhasePeaks PhasePeakTracker::finish(
    int64_t initial_live, const CategoryBytes& initial_by_category, const StepSeries& live,
    const std::array<StepSeries, kCategoryCount>& live_by_category) const {
    // Each window's peak in absolute bytes.
    std::vector<WindowPeak> peaks(windows_.size());
    for (size_t i = 0; i < windows_.size(); ++i) {
        const Window& w = windows_[i];
        WindowPeak p = w.peak;
        if (w.seen) {
            addSat(p.bytes, initial_live);
            p.start_bytes = w.start_live;
            addSat(p.start_bytes, initial_live);
            for (int c = 0; c < kCategoryCount; ++c)
                addSat(p.by_category[size_t(c)], initial_by_category[size_t(c)]);
        } else {
            // Nothing was allocated or freed inside: the value in force then.
            p.bytes = p.start_bytes = live.valueAt(w.start);
            p.time = w.start;
            p.event_index = -1;
            p.phase = w.id;
            for (int c = 0; c < kCategoryCount; ++c)
                p.by_category[size_t(c)] = live_by_category[size_t(c)].valueAt(w.start);
        }
        p.step = w.step;
        peaks[i] = p;
    }
    PhasePeaks out;
    out.by_step.resize(steps_.size());
    for (size_t k = 0; k < steps_.size(); ++k) {
        const Window& w = windows_[size_t(steps_[k])];
        StepPeaks& s = out.by_step[k];
        s.index = int32_t(k);
        s.recorded_step = w.recorded_step;
        s.start = w.start;
        s.end = w.end == std::numeric_limits<int64_t>::max() ? w.start : w.end;
        s.whole = peaks[size_t(steps_[k])];
    }
    for (int32_t i : phases_) {
        const Window& w = windows_[size_t(i)];
        const WindowPeak& p = peaks[size_t(i)];
        const auto phase = size_t(uint8_t(w.phase));  // a phase's window: 0 or more
        auto& best = out.by_phase[phase];
        if (!best || higher(p, *best)) best = p;
        if (w.step >= 0) {
            auto& in_step = out.by_step[size_t(w.step)].phases[phase];
            if (!in_step || higher(p, *in_step)) in_step = p;
        }
    }
    return out;
}

}  // namespace detail
}  // namespace memscope
