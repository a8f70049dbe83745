// The phases of external_annotations: START/END pairs become phases, and each
// event gets the innermost one active at its time.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "snapshot_mapper.h"
#include "snapshot_phase_names.h"

namespace memscope::pytorch_snapshot {

// START/END pairs of external_annotations become phases: per device, an END
// closes the latest open START of its name; a START still open stays open to
// the last event. Nesting is what was open at a START. A phase found alike on
// every device of the trace (how the exporter writes a phase of all devices)
// becomes one phase of device -1.
void SnapshotMapper::buildPhases() {
    const auto& anns = trace_.annotations;
    if (anns.empty() || trace_.metadata.time_base != TimeBase::Nanoseconds) return;
    constexpr uint32_t kNoPhase = UINT32_MAX;
    struct Open {
        StringId name;
        int16_t device = -1;
        int64_t start = 0, end = 0;
        uint32_t parent = kNoPhase;
        uint32_t depth = 0;
        bool closed = false;
    };
    std::vector<Open> found;
    std::unordered_map<uint64_t, std::vector<uint32_t>> by_name;  // (device, name) -> open
    // device -> STARTs in order; the closed ones leave lazily, from the end.
    std::unordered_map<int16_t, std::vector<uint32_t>> open;
    for (const Annotation& a : anns) {
        if (stop()) return;
        if (a.stage == AnnotationStage::Instant) continue;
        const uint64_t k = (uint64_t(uint16_t(a.device)) << 32) | a.name.value;
        std::vector<uint32_t>& on_device = open[a.device];
        if (a.stage == AnnotationStage::Start) {
            while (!on_device.empty() && found[on_device.back()].closed) on_device.pop_back();
            Open p;
            p.name = a.name;
            p.device = a.device;
            p.start = p.end = a.time;
            if (!on_device.empty()) {
                p.parent = on_device.back();
                p.depth = found[p.parent].depth + 1;
            }
            const auto id = uint32_t(found.size());
            found.push_back(p);
            by_name[k].push_back(id);
            on_device.push_back(id);
            continue;
        }
        auto it = by_name.find(k);
        if (it == by_name.end() || it->second.empty()) continue;  // an END without START
        const uint32_t id = it->second.back();
        it->second.pop_back();
        found[id].end = std::max(a.time, found[id].start);
        found[id].closed = true;
    }
    if (found.empty()) return;

    // Still open at the end: open until the last event (of its device if any).
    std::unordered_map<int16_t, int64_t> last;
    int64_t last_any = std::numeric_limits<int64_t>::min();
    for (const Event& e : trace_.events) {
        auto [it, fresh] = last.try_emplace(e.device, e.time);
        if (!fresh) it->second = std::max(it->second, e.time);
        last_any = std::max(last_any, e.time);
    }
    for (Open& p : found) {
        if (p.closed) continue;
        auto it = last.find(p.device);
        p.end = std::max(p.start, it != last.end() ? it->second : last_any);
    }

    // Copies alike on every device (same name, times and merged parent) merge
    // into one phase of device -1, level by level so that parents merge first.
    std::vector<int16_t> devices;
    for (int16_t d : trace_.devices())
        if (d >= 0) devices.push_back(d);
    if (devices.empty()) devices.push_back(0);
    for (const Open& p : found)
        if (p.device >= 0) devices.push_back(p.device);
    std::sort(devices.begin(), devices.end());
    devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
    std::vector<uint32_t> canon(found.size());
    for (uint32_t i = 0; i < found.size(); ++i) canon[i] = i;
    std::vector<uint32_t> order = canon;
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return found[a].depth < found[b].depth; });
    using Key = std::tuple<uint32_t, int64_t, int64_t, uint32_t>;  // name, start, end, parent
    std::map<Key, std::vector<uint32_t>> groups;
    std::map<int16_t, std::vector<uint32_t>> per_device;
    for (size_t level = 0; level < order.size();) {
        size_t next = level;
        groups.clear();
        for (; next < order.size() && found[order[next]].depth == found[order[level]].depth;
             ++next) {
            const uint32_t i = order[next];
            const Open& p = found[i];
            if (p.device < 0) continue;
            const uint32_t parent = p.parent == kNoPhase ? kNoPhase : canon[p.parent];
            groups[Key{p.name.value, p.start, p.end, parent}].push_back(i);
        }
        level = next;
        for (auto& [key, members] : groups) {
            if (members.size() < devices.size()) continue;
            per_device.clear();
            for (uint32_t m : members) per_device[found[m].device].push_back(m);  // in index order
            size_t copies = SIZE_MAX;
            for (int16_t d : devices) {
                auto it = per_device.find(d);
                copies = std::min(copies, it == per_device.end() ? size_t(0) : it->second.size());
            }
            for (size_t c = 0; c < copies; ++c) {
                uint32_t first = UINT32_MAX;
                for (int16_t d : devices) first = std::min(first, per_device[d][c]);
                for (int16_t d : devices) canon[per_device[d][c]] = first;
                found[first].device = -1;
            }
        }
    }

    // In order of their STARTs, so that a parent always comes before its children.
    std::vector<uint32_t> id(found.size(), 0);
    std::vector<uint8_t> open_to_end(trace_.phases.size(), 0);
    trace_.phases.reserve(trace_.phases.size() + found.size());
    for (uint32_t i = 0; i < found.size(); ++i) {
        if (canon[i] != i) continue;
        const Open& o = found[i];
        Phase p;
        p.name = o.name;
        const PhaseGuess g = classifyPhase(trace_.string(o.name));
        p.kind = g.kind;
        p.block = g.block;
        p.step = g.step;
        p.device = o.device;
        p.start = o.start;
        p.end = o.end;
        if (o.parent != kNoPhase) {
            p.parent = PhaseId(id[canon[o.parent]]);
            if (p.step < 0) p.step = trace_.phases[id[canon[o.parent]] - 1].step;
        }
        id[i] = trace_.addPhase(p).value;
        open_to_end.push_back(!o.closed);
    }
    assignEventPhases(open_to_end);
}

// Each event gets the innermost phase active at its time on its device: the
// active one that started last. A phase is active on [start, end), one left
// open on [start, end] (it still holds the last event). Per device, the
// phases' boundaries give a step function of time (P log P); events, mostly
// in time order, walk it.
void SnapshotMapper::assignEventPhases(const std::vector<uint8_t>& open_to_end) {
    const std::vector<Phase>& phases = trace_.phases;
    if (phases.empty() || trace_.events.empty()) return;
    struct Step {
        int64_t time;
        uint32_t phase;  // PhaseId value, 0 = none
    };
    struct Device {
        std::vector<Step> steps;  // each from its time on
        size_t at = 0;            // where the last event of the device was
        bool used = false;
    };
    std::vector<Device> by_device;  // [device + 1]
    for (const Event& e : trace_.events) {
        if (size_t(e.device + 1) >= by_device.size()) by_device.resize(size_t(e.device + 2));
        by_device[size_t(e.device + 1)].used = true;
    }
    struct Edge {
        int64_t time;
        bool start;
        uint32_t phase;  // index
    };
    std::vector<Edge> edges;
    for (size_t slot = 0; slot < by_device.size(); ++slot) {
        if (!by_device[slot].used) continue;
        const auto device = int16_t(int(slot) - 1);
        std::vector<Step>& out = by_device[slot].steps;
        edges.clear();
        for (uint32_t i = 0; i < phases.size(); ++i) {
            const Phase& p = phases[i];
            if (p.device >= 0 && p.device != device) continue;
            edges.push_back({p.start, true, i});
            const bool closed_end = !open_to_end[i] && p.end > p.start;
            const int64_t end = closed_end || p.end == INT64_MAX ? p.end : p.end + 1;
            edges.push_back({std::max(end, p.start), false, i});
        }
        std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
            return a.time != b.time ? a.time < b.time : a.start < b.start;  // ends first
        });
        std::set<std::pair<int64_t, uint32_t>> active;  // (start, index): the last is innermost
        for (size_t i = 0; i < edges.size();) {
            const int64_t t = edges[i].time;
            for (; i < edges.size() && edges[i].time == t; ++i) {
                const Phase& p = phases[edges[i].phase];
                if (edges[i].start)
                    active.emplace(p.start, edges[i].phase);
                else
                    active.erase({p.start, edges[i].phase});
            }
            const uint32_t inner = active.empty() ? 0 : active.rbegin()->second + 1;
            if (out.empty() || out.back().phase != inner) out.push_back({t, inner});
        }
    }
    for (Event& e : trace_.events) {
        if (stop()) return;
        Device& d = by_device[size_t(e.device + 1)];
        const std::vector<Step>& s = d.steps;
        if (s.empty() || e.time < s.front().time) continue;
        auto covers = [&](size_t k) {
            return s[k].time <= e.time && (k + 1 == s.size() || e.time < s[k + 1].time);
        };
        size_t& at = d.at;
        if (!covers(at)) {
            if (at + 1 < s.size() && covers(at + 1)) {
                ++at;
            } else {
                const auto after =
                    std::upper_bound(s.begin(), s.end(), e.time,
                                     [](int64_t t, const Step& x) { return t < x.time; });
                at = size_t(after - s.begin()) - 1;
            }
        }
        e.phase = PhaseId(s[at].phase);
    }
}

}  // namespace memscope::pytorch_snapshot
