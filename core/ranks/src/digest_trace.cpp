#include "memscope/ranks/digest_trace.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <unordered_map>

namespace memscope {
namespace {

// Addresses for the summed remainders: above any real one, one per category.
constexpr uint64_t kRestAddress = 0xFFFF000000000000ull;

std::string joinInts(const std::vector<int64_t>& values, size_t limit) {
    std::string out;
    out.reserve(std::min(values.size(), limit) * 8);
    for (size_t i = 0; i < values.size() && i < limit; ++i) {
        if (i) out += ',';
        out += std::to_string(values[i]);
    }
    return out;
}

bool parseInt(std::string_view text, int64_t& out) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && end == text.data() + text.size();
}

bool parseInts(std::string_view text, std::vector<int64_t>& out) {
    out.clear();
    if (text.empty()) return true;
    size_t at = 0;
    while (at <= text.size()) {
        const size_t comma = text.find(',', at);
        const std::string_view part =
            text.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at);
        int64_t v = 0;
        if (!parseInt(part, v)) return false;
        out.push_back(v);
        if (comma == std::string_view::npos) break;
        at = comma + 1;
    }
    return true;
}

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

bool isDigest(const Trace& trace) {
    return trace.metadata.property("digest") != nullptr;
}

Trace digestTrace(const Trace& trace, const Timeline& timeline, const RankDigest& d,
                  const DigestLimits& limits) {
    Trace out;
    out.metadata.source_format = trace.metadata.source_format;
    out.metadata.name = trace.metadata.name;
    out.metadata.time_base = trace.metadata.time_base;
    out.metadata.pid = trace.metadata.pid;
    out.metadata.rank = trace.metadata.rank;
    auto set = [&](const char* key, std::string value) { out.metadata.setProperty(key, value); };
    set("digest", std::to_string(kDigestVersion));
    set("digest.source", d.path);
    set("digest.device", std::to_string(d.device));
    set("digest.start", std::to_string(d.start));
    set("digest.end", std::to_string(d.end));
    set("digest.peak_bytes", std::to_string(d.peak_bytes));
    set("digest.peak_time", std::to_string(d.peak_time));
    set("digest.peak_phase", d.peak_phase ? std::string(toString(*d.peak_phase)) : "");
    set("digest.peak_step", std::to_string(d.peak_step));
    set("digest.peak_reserved_bytes",
        d.peak_reserved_bytes ? std::to_string(*d.peak_reserved_bytes) : "");
    std::vector<int64_t> by_phase;
    for (TrainingPhase p : kAllTrainingPhases)
        by_phase.push_back(d.peaks_by_phase[size_t(index(p))].value_or(-1));
    set("digest.peaks_by_phase", joinInts(by_phase, by_phase.size()));
    set("digest.steps", std::to_string(d.step_starts.size()));
    set("digest.step_starts", joinInts(d.step_starts, limits.steps));
    set("digest.envelope", joinInts(d.envelope, d.envelope.size()));

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
    // writes them, and kept apart in "digest.inferred" (event:category:rule),
    // which the reader puts back as inferred (applyDigestInferences).
    std::string inferred;
    auto noteInferred = [&](size_t event, Category category, int rule) {
        if (!inferred.empty()) inferred += ',';
        inferred += std::to_string(event) + ":" + std::string(toString(category)) + ":" +
                    std::to_string(rule);
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
    set("digest.inferred", inferred);
    set("digest.allocations", std::to_string(std::min(live.size(), limits.allocations)));
    set("digest.summed_allocations",
        std::to_string(live.size() > limits.allocations ? live.size() - limits.allocations : 0));
    return out;
}

void applyDigestInferences(Trace& t) {
    const std::string* text = t.metadata.property("digest.inferred");
    if (!text || text->empty()) return;
    std::string_view rest = *text;
    while (!rest.empty()) {
        const size_t comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        const size_t c1 = item.find(':'), c2 = item.rfind(':');
        if (c1 == std::string_view::npos || c2 == c1) continue;
        int64_t event = -1, rule = -1;
        const auto category = categoryFromString(item.substr(c1 + 1, c2 - c1 - 1));
        if (!parseInt(item.substr(0, c1), event) || !parseInt(item.substr(c2 + 1), rule) ||
            !category || event < 0 || uint64_t(event) >= t.events.size() || rule < 1 ||
            rule >= kCategoryRuleCount || t.events[size_t(event)].category != Category::Unknown)
            continue;  // a damaged entry: the event stays unknown
        if (t.inferred_categories.size() < t.events.size())
            t.inferred_categories.resize(t.events.size());
        t.inferred_categories[size_t(event)] = {*category, CategoryRule(rule)};
    }
}

Result<RankDigest> rankDigestOf(const Trace& t, const std::string& path) {
    const std::string* version = t.metadata.property("digest");
    if (!version) return makeError(path + ": not a memscope digest");
    int64_t v = 0;
    if (!parseInt(*version, v) || v > kDigestVersion || v < 1)
        return makeError(path + ": a digest of version " + *version +
                         ", newer than this memscope reads (" + std::to_string(kDigestVersion) +
                         ")");
    RankDigest d;
    d.path = path;
    d.rank = t.metadata.rank;
    d.pid = t.metadata.pid;
    d.name = rankName(d.rank, t.metadata.name.empty() ? path : t.metadata.name);
    d.time_base = t.metadata.time_base;
    d.from_digest = true;
    auto number = [&](const char* key, int64_t& out) -> Result<void> {
        const std::string* text = t.metadata.property(key);
        if (!text || !parseInt(*text, out))
            return makeError(path + ": the digest's " + key + " is missing or not a number");
        return {};
    };
    int64_t device = 0, step = -1;
    for (auto [key, target] : {std::pair<const char*, int64_t*>{"digest.device", &device},
                               {"digest.start", &d.start},
                               {"digest.end", &d.end},
                               {"digest.peak_bytes", &d.peak_bytes},
                               {"digest.peak_time", &d.peak_time},
                               {"digest.peak_step", &step}})
        if (auto r = number(key, *target); !r) return r.error();
    d.device = int16_t(device);
    d.peak_step = int32_t(step);
    if (const std::string* p = t.metadata.property("digest.peak_phase"); p && !p->empty())
        d.peak_phase = trainingPhaseFromString(*p);
    if (const std::string* r = t.metadata.property("digest.peak_reserved_bytes");
        r && !r->empty()) {
        int64_t bytes = 0;
        if (!parseInt(*r, bytes) || bytes < 0)
            return makeError(path + ": the digest's reserved peak is not a number");
        d.peak_reserved_bytes = uint64_t(bytes);
    }
    std::vector<int64_t> values;
    const std::string* phases = t.metadata.property("digest.peaks_by_phase");
    if (!phases || !parseInts(*phases, values) || values.size() != kTrainingPhaseCount)
        return makeError(path + ": the digest's peaks by phase are missing or malformed");
    for (TrainingPhase p : kAllTrainingPhases)
        if (values[size_t(index(p))] >= 0)
            d.peaks_by_phase[size_t(index(p))] = values[size_t(index(p))];
    const std::string* steps = t.metadata.property("digest.step_starts");
    if (!steps || !parseInts(*steps, d.step_starts))
        return makeError(path + ": the digest's steps are missing or malformed");
    const std::string* envelope = t.metadata.property("digest.envelope");
    if (!envelope || !parseInts(*envelope, d.envelope) ||
        (!d.envelope.empty() && d.envelope.size() != kRankEnvelopeColumns))
        return makeError(path + ": the digest's envelope is missing or cut short");
    // The composition at the peak is what its events hold.
    for (uint64_t i = 0; i < t.events.size(); ++i)
        if (t.events[i].kind == EventKind::Alloc)
            d.categories_at_peak[size_t(index(t.categoryOf(i)))] += int64_t(t.events[i].size);
    return d;
}

}  // namespace memscope
