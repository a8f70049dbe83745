#include "memscope/ranks/digest_trace.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace memscope {
namespace {

// Addresses for the summed remainders: above any real one, one per category.
constexpr uint64_t kRestAddress = 0xFFFF000000000000ull;

// Copies a stack of `from` into `to`, innermost `depth` frames.
StackId copyStack(const Trace& from, StackId stack, size_t depth, Trace& to,
                  std::unordered_map<uint32_t, StackId>& done) {
    if (!stack.value) return {};
    if (auto it = done.find(stack.value); it != done.end()) return it->second;
    const auto frames = from.stack(stack);
    std::vector<FrameId> copied;
    copied.reserve(std::min(frames.size(), depth));
    for (size_t i = 0; i < frames.size() && i < depth; ++i) {
        const Frame& f = from.frame(frames[i]);
        copied.push_back(to.internFrame(Frame{to.internString(from.string(f.function)),
                                              to.internString(from.string(f.file)), f.line}));
    }
    const StackId id = to.internStack(copied);
    done.emplace(stack.value, id);
    return id;
}

}  // namespace

Trace digestTrace(const Trace& trace, const Timeline& timeline, const RankDigest& d,
                  const DigestLimits& limits) {
    Trace out;
    out.metadata.source_format = trace.metadata.source_format;
    out.metadata.name = trace.metadata.name;
    out.metadata.time_base = trace.metadata.time_base;
    out.metadata.pid = trace.metadata.pid;
    out.metadata.rank = trace.metadata.rank;
    DigestSection& section = out.digest.emplace();
    section.source = d.path;
    section.device = d.device;
    section.start = d.start;
    section.end = d.end;
    section.peak_bytes = d.peak_bytes;
    section.peak_time = d.peak_time;
    section.peak_phase = d.peak_phase;
    section.peak_step = d.peak_step;
    section.peak_reserved_bytes = d.peak_reserved_bytes;
    section.peaks_by_phase = d.peaks_by_phase;
    section.steps = d.step_starts.size();
    section.step_starts.assign(
        d.step_starts.begin(),
        d.step_starts.begin() + ptrdiff_t(std::min(d.step_starts.size(), limits.steps)));
    section.envelope = d.envelope;

    // The allocations alive at the peak, the largest first, as allocs at the
    // peak's time; past the limit, one summed allocation per category.
    const DeviceTimeline* tl = timeline.device(d.device);
    if (!tl) return out;
    std::vector<uint32_t> live = tl->liveAt(tl->peak.time);
    std::unordered_map<uint32_t, StackId> stacks;
    // Summed remainders by category and whether it was inferred (the rule of
    // the first one summed stands for the rest).
    std::map<std::pair<Category, bool>, std::pair<uint64_t, int>> rest;
    // Inferred categories are written Unknown in the events, as every writer
    // writes them, and kept apart in the section's `inferred`, which the
    // reader puts back as inferred (applyDigestInferences).
    auto noteInferred = [&](size_t event, Category category, int rule) {
        section.inferred.push_back({event, category, CategoryRule(rule)});
    };
    for (size_t i = 0; i < live.size(); ++i) {
        const AllocationInterval& a = tl->intervals[live[i]];
        int rule = -1;  // the inference rule, where the trace kept it
        if (a.category_inferred && a.alloc_event < trace.inferred_categories.size())
            rule = int(trace.inferred_categories[a.alloc_event].rule);
        const bool inferred_here = a.category_inferred && rule >= 0;
        const Category category = a.category_inferred ? Category::Unknown : a.category;
        if (i >= limits.allocations) {
            auto& r = rest[{inferred_here ? a.category : category, inferred_here}];
            if (r.first == 0) r.second = rule;
            r.first += a.size;
            continue;
        }
        if (inferred_here) noteInferred(out.events.size(), a.category, rule);
        Event e;
        e.time = d.peak_time;
        e.kind = EventKind::Alloc;
        e.address = a.address;
        e.size = a.size;
        e.device = d.device;
        e.category = category;
        e.stack = copyStack(trace, a.stack, limits.stack_depth, out, stacks);
        out.events.push_back(e);
    }
    uint64_t k = 0;
    for (const auto& [key, sum] : rest) {
        Event e;
        e.time = d.peak_time;
        e.kind = EventKind::Alloc;
        e.address = kRestAddress + (k++ << 32);
        e.size = sum.first;
        e.device = d.device;
        e.category = key.second ? Category::Unknown : key.first;
        if (key.second) noteInferred(out.events.size(), key.first, sum.second);
        out.events.push_back(e);
    }
    section.allocations = std::min(live.size(), limits.allocations);
    section.summed_allocations =
        live.size() > limits.allocations ? live.size() - limits.allocations : 0;
    return out;
}

Result<RankDigest> rankDigestOf(const Trace& t, const std::string& path) {
    if (!t.digest) {
        if (t.metadata.property("digest"))
            return makeError(path +
                             ": a digest written by an older memscope (its fields in text "
                             "properties): write it again with `memscope-cli digest`");
        return makeError(path + ": not a memscope digest");
    }
    const DigestSection& s = *t.digest;
    if (s.version > kDigestVersion)
        return makeError(path + ": a digest of version " + std::to_string(s.version) +
                         ", newer than this memscope reads (" + std::to_string(kDigestVersion) +
                         "): open it with a newer memscope");
    RankDigest d;
    d.path = path;
    d.rank = t.metadata.rank;
    d.pid = t.metadata.pid;
    d.name = rankName(d.rank, t.metadata.name.empty() ? path : t.metadata.name);
    d.time_base = t.metadata.time_base;
    d.from_digest = true;
    d.device = s.device;
    d.start = s.start;
    d.end = s.end;
    d.peak_bytes = s.peak_bytes;
    d.peak_time = s.peak_time;
    d.peak_phase = s.peak_phase;
    d.peak_step = s.peak_step;
    d.peak_reserved_bytes = s.peak_reserved_bytes;
    d.peaks_by_phase = s.peaks_by_phase;
    d.step_starts = s.step_starts;
    if (!s.envelope.empty() && s.envelope.size() != kRankEnvelopeColumns)
        return makeError(path + ": the digest's envelope has " + std::to_string(s.envelope.size()) +
                         " columns, not " + std::to_string(kRankEnvelopeColumns) +
                         " (a damaged digest)");
    d.envelope = s.envelope;
    // The composition at the peak is what its events hold.
    for (uint64_t i = 0; i < t.events.size(); ++i)
        if (t.events[i].kind == EventKind::Alloc)
            d.categories_at_peak[size_t(index(t.categoryOf(i)))] += int64_t(t.events[i].size);
    return d;
}

}  // namespace memscope
