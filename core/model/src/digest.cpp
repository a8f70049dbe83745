#include "memscope/model/digest.h"

#include <algorithm>
#include <limits>

#include "memscope/model/trace.h"

namespace memscope {

void applyDigestInferences(Trace& t) {
    if (!t.digest) return;
    for (const DigestInference& d : t.digest->inferred) {
        if (d.event >= t.events.size() || d.rule == CategoryRule::Recorded ||
            int(d.rule) >= kCategoryRuleCount ||
            t.events[size_t(d.event)].category != Category::Unknown)
            continue;  // a damaged entry: the event stays unknown
        if (t.inferred_categories.size() < t.events.size())
            t.inferred_categories.resize(t.events.size());
        t.inferred_categories[size_t(d.event)] = {d.category, d.rule};
    }
}

namespace {

// No device holds more: a figure above it is a damaged or forged digest.
constexpr int64_t kMaxDigestBytes = int64_t(1) << 56;  // 64 PiB
// Times are kept within half the range, so that differences of two never overflow.
constexpr int64_t kMaxDigestTime = int64_t(1) << 62;

std::string figure(int64_t v) {
    return std::to_string(v);
}

}  // namespace

std::string digestContradiction(const Trace& t) {
    if (!t.digest || t.digest->version > kDigestVersion) return {};
    const DigestSection& d = *t.digest;
    if (d.device < -1) return "the digest's device " + figure(d.device) + " is not a device";
    if (d.peak_bytes < 0 || d.peak_bytes > kMaxDigestBytes)
        return "the digest's peak of " + figure(d.peak_bytes) + " bytes is out of range";
    for (const auto& [name, v] : {std::pair{"start", d.start}, std::pair{"end", d.end},
                                  std::pair{"peak time", d.peak_time}})
        if (v < -kMaxDigestTime || v > kMaxDigestTime)
            return std::string("the digest's ") + name + " " + figure(v) + " is out of range";
    if (d.start > d.end)
        return "the digest's start " + figure(d.start) + " is after its end " + figure(d.end);
    if (!t.events.empty() && (d.peak_time < d.start || d.peak_time > d.end))
        return "the digest's peak time " + figure(d.peak_time) + " is outside its range [" +
               figure(d.start) + ", " + figure(d.end) + "]";
    if (d.peak_reserved_bytes && *d.peak_reserved_bytes > uint64_t(kMaxDigestBytes))
        return "the digest's reserved bytes at the peak (" +
               std::to_string(*d.peak_reserved_bytes) + ") are out of range";
    for (const auto& peak : d.peaks_by_phase)
        if (peak && (*peak < 0 || *peak > d.peak_bytes))
            return "the digest's peak of a phase (" + figure(*peak) + " bytes) is not within " +
                   "[0, its peak of " + figure(d.peak_bytes) + "]";
    for (int64_t v : d.envelope)
        if (v < 0 || v > d.peak_bytes)
            return "the digest's envelope value " + figure(v) + " is not within [0, its peak of " +
                   figure(d.peak_bytes) + "]";
    if (d.step_starts.size() > d.steps)
        return "the digest keeps " + std::to_string(d.step_starts.size()) +
               " step starts of only " + std::to_string(d.steps) + " steps";
    if (!std::is_sorted(d.step_starts.begin(), d.step_starts.end()))
        return "the digest's step starts are not in order";
    if (d.allocations > t.events.size())
        return "the digest claims " + std::to_string(d.allocations) +
               " allocations kept but holds " + std::to_string(t.events.size()) + " events";
    // Its events are the allocations alive at the peak, on the peak's device
    // at the peak's time: they hold no more than the peak (less only where
    // allocations at the peak's time were freed at that time after the peak).
    if (t.events.empty() && d.peak_bytes > 0)
        return "the digest claims a peak of " + figure(d.peak_bytes) +
               " bytes but holds no allocations at the peak";
    uint64_t sum = 0;
    for (const Event& e : t.events) {
        if (e.kind != EventKind::Alloc || e.device != d.device || e.time != d.peak_time)
            return "the digest's events are not allocations on device " + figure(d.device) +
                   " at its peak time " + figure(d.peak_time);
        if (__builtin_add_overflow(sum, e.size, &sum) || sum > uint64_t(kMaxDigestBytes))
            return "the digest's allocations at the peak add up past any device";
    }
    if (sum > uint64_t(d.peak_bytes))
        return "the digest's peak of " + figure(d.peak_bytes) + " bytes is less than the " +
               std::to_string(sum) + " bytes of its allocations at the peak (" +
               std::to_string(t.events.size()) + " events)";
    return {};
}

}  // namespace memscope
