#include "memscope/analysis/allocation_diff.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <unordered_map>

#include "memscope/inference/frames.h"
#include "memscope/model/phases.h"

namespace memscope {
namespace {

std::string_view baseName(std::string_view path) {
    const size_t slash = path.find_last_of("/\\");
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string frameKeyText(const Trace& t, FrameId id) {
    const Frame& f = t.frame(id);
    std::string name(t.string(f.function));
    if (name.empty()) name = "??";
    return name + "  (" + std::string(baseName(t.string(f.file))) + ":" + std::to_string(f.line) +
           ")";
}

struct Site {
    std::string key;  // the frames' texts, innermost first, joined by '\n'
    std::string label;
    std::vector<std::string> frames;  // outermost first
};

// A stack's site: its user frames by function, file name and line.
Site siteOf(const Trace& t, StackId stack, FrameRoleCache& roles) {
    Site s;
    std::vector<FrameId> user;
    if (!stack.isNull() && stack.value < t.stackCount())
        for (FrameId f : t.stack(stack))
            if (roles.role(f) == FrameRole::User) user.push_back(f);
    if (user.empty())
        if (auto f = siteFrame(t, stack, roles)) user.push_back(*f);
    if (user.empty()) {
        s.key = s.label = "(no stack)";
        s.frames = {s.label};
        return s;
    }
    for (FrameId f : user) {
        const std::string text = frameKeyText(t, f);
        s.key += text + '\n';
        s.frames.insert(s.frames.begin(), text);
    }
    s.label = s.frames.back();
    return s;
}

std::vector<uint32_t> liveIntervals(const DeviceTimeline& tl, const AllocationMoment& m,
                                    int64_t time) {
    if (m.peak) return tl.peak.live_intervals;
    return tl.liveAt(time);
}

}  // namespace

Result<AllocationMoment> parseAllocationMoment(std::string_view text) {
    AllocationMoment m;
    if (text == "peak") return m;
    const std::string error = "--at " + std::string(text) +
                              ": give peak, step:N or step:N:PHASE (forward, backward, optimizer)";
    if (text.substr(0, 5) != "step:") return makeError(error);
    std::string_view rest = text.substr(5);
    const size_t colon = rest.find(':');
    const std::string_view number = rest.substr(0, colon);
    int32_t step = -1;
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), step);
    if (ec != std::errc() || end != number.data() + number.size() || step < 0)
        return makeError(error);
    m.peak = false;
    m.step = step;
    if (colon != std::string_view::npos) {
        m.phase = trainingPhaseFromString(rest.substr(colon + 1));
        if (!m.phase) return makeError(error);
    }
    return m;
}

std::string toString(const AllocationMoment& m) {
    if (m.peak) return "the peak";
    std::string out = "step " + std::to_string(m.step);
    if (m.phase) out += " " + std::string(toString(*m.phase));
    return out;
}

Result<DiffSide> momentOf(const DeviceTimeline& tl, const AllocationMoment& m) {
    DiffSide side;
    side.device = tl.device;
    if (m.peak) {
        side.time = tl.peak.time;
        return side;
    }
    const StepPeaks* step = nullptr;
    for (const StepPeaks& s : tl.phase_peaks.by_step)
        if ((s.recorded_step >= 0 ? s.recorded_step : s.index) == m.step) step = &s;
    if (!step)
        return makeError("device " + std::to_string(tl.device) + " has no step " +
                         std::to_string(m.step) +
                         (tl.phase_peaks.by_step.empty() ? " (it has no steps)" : ""));
    if (!m.phase) {
        side.time = step->whole.time;
        return side;
    }
    const auto& wp = step->phases[size_t(index(*m.phase))];
    if (!wp)
        return makeError("device " + std::to_string(tl.device) + "'s step " +
                         std::to_string(m.step) + " has no " + std::string(toString(*m.phase)));
    side.time = wp->time;
    return side;
}

Result<AllocationDiff> diffAllocations(const Trace& a, const DeviceTimeline& ta, const Trace& b,
                                       const DeviceTimeline& tb, const AllocationMoment& m) {
    AllocationDiff d;
    d.moment = m;
    auto sa = momentOf(ta, m);
    if (!sa) return makeError("A: " + sa.message());
    auto sb = momentOf(tb, m);
    if (!sb) return makeError("B: " + sb.message());
    d.a = *sa;
    d.b = *sb;
    struct Acc {
        Site site;
        std::vector<uint64_t> a_sizes, b_sizes;
        std::vector<uint32_t> a_intervals, b_intervals;
    };
    std::map<std::string, Acc> by_site;
    auto collect = [&](const Trace& t, const DeviceTimeline& tl, int64_t time, bool is_a,
                       int64_t& live) {
        FrameRoleCache roles(t);
        std::unordered_map<uint32_t, std::string> key_of_stack;
        for (uint32_t i : liveIntervals(tl, m, time)) {
            if (i >= tl.intervals.size()) continue;
            const AllocationInterval& iv = tl.intervals[i];
            auto [it, fresh] = key_of_stack.try_emplace(iv.stack.value);
            if (fresh) {
                Site s = siteOf(t, iv.stack, roles);
                it->second = s.key;
                auto [g, added] = by_site.try_emplace(s.key);
                if (added) g->second.site = std::move(s);
            }
            Acc& acc = by_site[it->second];
            (is_a ? acc.a_sizes : acc.b_sizes).push_back(iv.size);
            (is_a ? acc.a_intervals : acc.b_intervals).push_back(i);
            live += int64_t(iv.size);
        }
    };
    collect(a, ta, d.a.time, true, d.a.live_bytes);
    collect(b, tb, d.b.time, false, d.b.live_bytes);
    for (auto& [key, acc] : by_site) {
        DiffGroup g;
        g.site = acc.site.label;
        g.frames = acc.site.frames;
        g.a_intervals = std::move(acc.a_intervals);
        g.b_intervals = std::move(acc.b_intervals);
        // Equal sizes pair off; the rest is one side's only.
        std::sort(acc.a_sizes.begin(), acc.a_sizes.end());
        std::sort(acc.b_sizes.begin(), acc.b_sizes.end());
        size_t i = 0, j = 0;
        while (i < acc.a_sizes.size() || j < acc.b_sizes.size()) {
            if (j == acc.b_sizes.size() ||
                (i < acc.a_sizes.size() && acc.a_sizes[i] < acc.b_sizes[j])) {
                g.only_a_bytes += int64_t(acc.a_sizes[i++]);
                g.only_a_count += 1;
            } else if (i == acc.a_sizes.size() || acc.b_sizes[j] < acc.a_sizes[i]) {
                g.only_b_bytes += int64_t(acc.b_sizes[j++]);
                g.only_b_count += 1;
            } else {
                g.both_bytes += int64_t(acc.a_sizes[i]);
                g.both_count += 1;
                ++i, ++j;
            }
        }
        d.only_a_bytes += g.only_a_bytes;
        d.only_b_bytes += g.only_b_bytes;
        d.both_bytes += g.both_bytes;
        d.only_a_count += g.only_a_count;
        d.only_b_count += g.only_b_count;
        d.both_count += g.both_count;
        d.groups.push_back(std::move(g));
    }
    auto magnitude = [](const DiffGroup& g) {
        const int64_t v = g.only_a_bytes - g.only_b_bytes;
        return v < 0 ? -v : v;
    };
    std::sort(d.groups.begin(), d.groups.end(), [&](const DiffGroup& x, const DiffGroup& y) {
        if (magnitude(x) != magnitude(y)) return magnitude(x) > magnitude(y);
        if (x.both_bytes != y.both_bytes) return x.both_bytes > y.both_bytes;
        return x.site < y.site;
    });
    return d;
}

}  // namespace memscope
