#include "memscope/analysis/leak_finder.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "memscope/analysis/module_breakdown.h"
#include "memscope/base/units.h"
#include "memscope/inference/frames.h"
#include "memscope/inference/inference.h"

namespace memscope {
namespace {

// Least squares slope of y over 0, 1, 2, ...
double slope(const std::vector<double>& y) {
    const double n = double(y.size());
    double mx = 0, my = 0;
    for (size_t i = 0; i < y.size(); ++i) mx += double(i), my += y[i];
    mx /= n, my /= n;
    double sxy = 0, sxx = 0;
    for (size_t i = 0; i < y.size(); ++i) {
        sxy += (double(i) - mx) * (y[i] - my);
        sxx += (double(i) - mx) * (double(i) - mx);
    }
    return sxx > 0 ? sxy / sxx : 0.0;
}

// What the steps do with what they allocate: the share the median step still
// holds at its end, and the share of all of it that a later step frees. An
// iteration of a loop frees most of what it makes (activations in backward,
// an inference pass's as it goes), and what it hands on (inputs, a cache,
// gradients) a later step frees. The "steps" repetition finds inside one
// pass (a model's layers, forward only) keep their activations for a
// backward the trace does not reach, and no layer frees an earlier one's.
struct StepKeeping {
    double median_kept = 0;  // of a step's bytes, alive at its end
    double freed_later = 0;  // of all steps' bytes, freed in a later step
};

StepKeeping stepKeeping(const DeviceTimeline& tl, const std::vector<StepPeaks>& steps) {
    std::vector<double> made(steps.size(), 0.0), kept(steps.size(), 0.0);
    double all = 0, later = 0;
    for (const AllocationInterval& a : tl.intervals) {
        if (a.alloc_event == kNoEvent) continue;
        auto it = std::upper_bound(steps.begin(), steps.end(), a.start,
                                   [](int64_t t, const StepPeaks& s) { return t < s.start; });
        if (it == steps.begin()) continue;
        --it;
        if (a.start >= it->end) continue;
        const auto k = size_t(it - steps.begin());
        made[k] += double(a.size);
        all += double(a.size);
        if (a.free_event == kNoEvent || a.end > it->end) kept[k] += double(a.size);
        if (a.free_event != kNoEvent && a.end > it->end) later += double(a.size);
    }
    std::vector<double> shares;
    for (size_t k = 0; k < steps.size(); ++k)
        if (made[k] > 0) shares.push_back(kept[k] / made[k]);
    StepKeeping out;
    if (!shares.empty()) {
        std::nth_element(shares.begin(), shares.begin() + ptrdiff_t(shares.size() / 2),
                         shares.end());
        out.median_kept = shares[shares.size() / 2];
    }
    out.freed_later = all > 0 ? later / all : 0.0;
    return out;
}

// Inferred steps are a pass's layers, not a loop's iterations, when the
// median one keeps more than the first share, or more than the second and
// (almost) nothing a step makes is freed by a later one.
constexpr double kMaxKeptShareOfAnIteration = 0.6;
constexpr double kMaxKeptShareOfAPass = 0.25;
constexpr double kMinFreedLaterOfALoop = 0.05;

std::vector<std::string> stackText(const Trace& trace, StackId stack) {
    const std::vector<FrameId> frames = visibleFrames(trace, stack, SIZE_MAX);
    std::vector<std::string> out;
    for (auto f = frames.rbegin(); f != frames.rend(); ++f) out.push_back(frameText(trace, *f));
    if (out.empty()) out.emplace_back("(no stack)");
    return out;
}

}  // namespace

DeviceGrowth deviceGrowth(const Trace& trace, const DeviceTimeline& tl,
                          const ModuleAttribution& modules) {
    DeviceGrowth g;
    g.device = tl.device;
    const std::vector<StepPeaks>& steps = tl.phase_peaks.by_step;
    for (const StepPeaks& s : steps)
        g.step_ends.push_back(
            {s.recorded_step >= 0 ? s.recorded_step : s.index, s.end, tl.live.valueAt(s.end)});
    const int n = int(steps.size());
    if (n < kMinStepsForGrowth) {
        g.note = std::to_string(n) + (n == 1 ? " step" : " steps") + ": growth per step needs " +
                 std::to_string(kMinStepsForGrowth) +
                 " or more (a warm-up step and three steady ones)";
        return g;
    }
    // Steps memscope found by repetition may be one pass's layers: judging
    // their growth would call a forward's activations a leak.
    const bool inferred = stepSource(trace) == StepSource::Inferred;
    if (inferred) {
        const StepKeeping keeping = stepKeeping(tl, steps);
        const bool layers = keeping.median_kept > kMaxKeptShareOfAnIteration ||
                            (keeping.median_kept > kMaxKeptShareOfAPass &&
                             keeping.freed_later < kMinFreedLaterOfALoop);
        if (layers) {
            g.note = "the inferred steps keep " +
                     std::to_string(int(std::lround(100 * keeping.median_kept))) +
                     "% of what they allocate, where a loop's iterations free most of theirs: "
                     "they look like the layers of one pass, so growth per step is not judged";
            return g;
        }
    }
    const double threshold =
        std::max(double(kMinGrowthBytesPerStep), double(tl.peak.bytes) / 1000.0);
    // Warm-up: at least the first step (two from six on), and on while the
    // step-to-step change still differs from the usual change of the later
    // steps (a cache filling, state being born), keeping three steps to fit.
    std::vector<double> delta(size_t(n), 0.0);
    for (int k = 1; k < n; ++k)
        delta[size_t(k)] = double(g.step_ends[size_t(k)].live_bytes) -
                           double(g.step_ends[size_t(k - 1)].live_bytes);
    std::vector<double> late(delta.begin() + n / 2, delta.end());
    std::nth_element(late.begin(), late.begin() + ptrdiff_t(late.size() / 2), late.end());
    const double usual = late[late.size() / 2];
    const double tolerance = std::max(threshold, 0.1 * std::abs(usual));
    g.steady_from = n >= 6 ? 2 : 1;
    while (g.steady_from < n - 3 && std::abs(delta[size_t(g.steady_from) + 1] - usual) > tolerance)
        ++g.steady_from;
    // The last step memscope inferred ends where the trace does, not where
    // its iterations turn (repetition cuts them anywhere in the loop): its
    // live bytes are not comparable with the others'. Left out of the fit.
    const int fit_end = inferred && n > kMinStepsForGrowth ? n - 1 : n;
    g.steady_to = fit_end - 1;
    std::vector<double> y;
    for (int k = g.steady_from; k < fit_end; ++k)
        y.push_back(double(g.step_ends[size_t(k)].live_bytes));
    const double fit = slope(y);
    g.fitted_bytes_per_step = fit;
    const size_t mid = y.size() / 2;
    const double late_rise = y.back() - y[mid];
    g.grows = fit >= threshold && late_rise >= 0.5 * fit * double(y.size() - 1 - mid);
    if (!g.grows) return g;
    g.growth_bytes_per_step = fit;

    // Survivors: born in a step, alive at the end of the last step.
    const int64_t last_end = steps.back().end;
    const int window_first = g.steady_from, window_last = n - 2;  // inclusive
    const int window = window_last - window_first + 1;
    struct Acc {
        std::string module, site;
        std::vector<int64_t> bytes_by_step;
        std::vector<uint32_t> count_by_step;
        int32_t first_step = -1;
        int64_t bytes = 0;
        uint32_t count = 0;
        uint32_t largest = 0;
        std::vector<uint32_t> intervals;
    };
    std::map<std::pair<uint32_t, uint32_t>, Acc> groups;  // (module, site frame)
    FrameRoleCache roles(trace);
    std::unordered_map<uint32_t, std::optional<FrameId>> site_of_stack;
    const bool has_modules = !modules.empty();
    for (uint32_t i = 0; i < tl.intervals.size(); ++i) {
        const AllocationInterval& a = tl.intervals[i];
        if (a.alloc_event == kNoEvent) continue;
        if (a.free_event != kNoEvent && a.end <= last_end) continue;
        // The step it was born in.
        auto it = std::upper_bound(steps.begin(), steps.end(), a.start,
                                   [](int64_t t, const StepPeaks& s) { return t < s.start; });
        if (it == steps.begin()) continue;
        --it;
        if (a.start >= it->end) continue;
        const int k = int(it - steps.begin());
        auto [s, fresh] = site_of_stack.try_emplace(a.stack.value);
        if (fresh) s->second = siteFrame(trace, a.stack, roles);
        const ModuleId module =
            has_modules ? moduleGroup(trace, moduleOfInterval(modules, a).module, {}) : ModuleId{};
        Acc& acc = groups[{module.value, s->second ? s->second->value : 0}];
        if (acc.bytes_by_step.empty()) {
            acc.bytes_by_step.assign(size_t(n), 0);
            acc.count_by_step.assign(size_t(n), 0);
            acc.module = !has_modules        ? std::string()
                         : module.value == 0 ? std::string(kOutsideModulesLabel)
                                             : modulePath(trace, module);
            acc.site = s->second ? frameText(trace, *s->second) : std::string("(no stack)");
            acc.largest = i;
        }
        acc.bytes_by_step[size_t(k)] += int64_t(std::min<uint64_t>(a.size, INT64_MAX / 4));
        acc.count_by_step[size_t(k)] += 1;
        if (acc.first_step < 0 || k < acc.first_step) acc.first_step = k;
        acc.bytes += int64_t(std::min<uint64_t>(a.size, INT64_MAX / 4));
        acc.count += 1;
        acc.intervals.push_back(i);
        if (a.size > tl.intervals[acc.largest].size) acc.largest = i;
    }
    const int needed = std::max(2, (window + 1) / 2);
    for (auto& [key, acc] : groups) {
        int born = 0;
        int64_t bytes = 0;
        uint64_t count = 0;
        for (int k = window_first; k <= window_last; ++k) {
            born += acc.count_by_step[size_t(k)] > 0;
            bytes += acc.bytes_by_step[size_t(k)];
            count += acc.count_by_step[size_t(k)];
        }
        if (born < needed) continue;
        LeakGroup lg;
        lg.module = acc.module;
        lg.site = acc.site;
        lg.frames = stackText(trace, tl.intervals[acc.largest].stack);
        lg.bytes_per_step = double(bytes) / double(window);
        lg.count_per_step = double(count) / double(window);
        lg.first_step = g.step_ends[size_t(acc.first_step)].step;
        lg.bytes = acc.bytes;
        lg.count = acc.count;
        lg.intervals = std::move(acc.intervals);
        g.groups.push_back(std::move(lg));
    }
    std::sort(g.groups.begin(), g.groups.end(), [](const LeakGroup& a, const LeakGroup& b) {
        if (a.bytes_per_step != b.bytes_per_step) return a.bytes_per_step > b.bytes_per_step;
        return std::tie(a.module, a.site) < std::tie(b.module, b.site);
    });
    return g;
}

LeakReport findLeaks(const Trace& trace, const Timeline& timeline,
                     const ModuleAttribution& modules) {
    LeakReport r;
    r.steps_inferred = stepSource(trace) == StepSource::Inferred;
    for (const DeviceTimeline& tl : timeline.devices())
        r.devices.push_back(deviceGrowth(trace, tl, modules));
    return r;
}

std::string growthText(const DeviceGrowth& g, size_t top) {
    if (!g.fitted_bytes_per_step) return g.note;
    if (!g.grows) return "no growth";
    std::string out =
        "grows " + formatBytes(int64_t(std::llround(g.growth_bytes_per_step))) + " per step";
    // The groups by module (by site where the trace has no modules), largest first.
    std::vector<std::pair<std::string, double>> by;
    for (const LeakGroup& lg : g.groups) {
        const std::string& name = lg.module.empty() ? lg.site : lg.module;
        auto it =
            std::find_if(by.begin(), by.end(), [&](const auto& p) { return p.first == name; });
        if (it == by.end())
            by.emplace_back(name, lg.bytes_per_step);
        else
            it->second += lg.bytes_per_step;
    }
    std::stable_sort(by.begin(), by.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    for (size_t i = 0; i < by.size() && i < top; ++i)
        out += (i ? ", " : ": ") + by[i].first + " " +
               formatBytes(int64_t(std::llround(by[i].second)));
    return out;
}

Result<CheckVerdict> judgeGrowth(const DeviceGrowth& g, int64_t limit) {
    const std::string device =
        "device " + std::to_string(g.device) + (g.device < 0 ? " (host)" : "");
    if (!g.fitted_bytes_per_step) return makeError(device + ": " + g.note);
    CheckVerdict v;
    v.over = g.growth_bytes_per_step > double(limit);
    v.message = device + ": " + growthText(g) + (v.over ? ", over the limit " : " (limit ") +
                formatBytes(limit) + " per step" + (v.over ? "" : ")");
    return v;
}

}  // namespace memscope
