#include "memscope/analysis/oom_report.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "memscope/base/units.h"
#include "memscope/model/phases.h"
#include "memscope/timeline/allocator_replay.h"

namespace memscope {
namespace {

// The snapshot's device_free (the importer keeps it as text), if recorded.
std::optional<uint64_t> deviceFree(const Trace& trace, uint64_t event) {
    auto it = std::lower_bound(trace.attributes.begin(), trace.attributes.end(), event,
                               [](const EventAttribute& a, uint64_t e) { return a.event < e; });
    for (; it != trace.attributes.end() && it->event == event; ++it) {
        if (trace.string(it->key) != "device_free") continue;
        const std::string_view text = trace.string(it->value);
        uint64_t v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec == std::errc() && end == text.data() + text.size()) return v;
    }
    return std::nullopt;
}

// A trace that holds its end state and no allocator history for the device:
// the legacy snapshots an OOM handler dumped, or a segments-only file.
bool onlyEndState(const Trace& trace, const DeviceTimeline& tl) {
    if (!trace.allocator_state) return false;
    const auto& segs = trace.allocator_state->segments;
    if (std::none_of(segs.begin(), segs.end(),
                     [&](const Segment& s) { return s.device == tl.device; }))
        return false;
    return std::none_of(tl.trace_events.begin(), tl.trace_events.end(), [&](uint64_t i) {
        const EventKind k = trace.events[i].kind;
        return k != EventKind::Snapshot && k != EventKind::Marker;
    });
}

// The innermost phase on the device covering `time`, for events that carry none.
PhaseId phaseAt(const Trace& trace, int16_t device, int64_t time) {
    PhaseId best;
    int64_t best_start = INT64_MIN;
    for (size_t i = 0; i < trace.phases.size(); ++i) {
        const Phase& p = trace.phases[i];
        if (!phaseOnDevice(p, device) || p.start > time) continue;
        if (p.end != p.start && p.end < time) continue;  // start == end: still open
        if (p.start >= best_start) {
            best_start = p.start;
            best = PhaseId(uint32_t(i + 1));
        }
    }
    return best;
}

// Intervals live at the OOM event itself, by event order rather than time, so
// a free at the same microsecond but after the event is not missed. Snapshot
// importers keep each device's events in recorded order. For an end state,
// those live at the end.
std::vector<uint32_t> liveAtEvent(const DeviceTimeline& tl, uint64_t event) {
    std::vector<uint32_t> live;
    for (uint32_t i = 0; i < tl.intervals.size(); ++i) {
        const AllocationInterval& a = tl.intervals[i];
        const bool born = a.alloc_event == kNoEvent || a.alloc_event < event;
        const bool alive = a.free_event == kNoEvent || (event != kNoEvent && a.free_event > event);
        if (born && alive) live.push_back(i);
    }
    std::sort(live.begin(), live.end(),
              [&](uint32_t x, uint32_t y) { return tl.intervals[x].size > tl.intervals[y].size; });
    return live;
}

OomVerdict verdictOf(const OomReport& r) {
    if (!r.requested_bytes) return OomVerdict::Unknown;
    const uint64_t want = *r.requested_bytes;
    if (r.largest_free_block >= want && want > 0) return OomVerdict::FreeBlockElsewhere;
    if (r.cachedFreeBytes() >= want) return OomVerdict::Fragmentation;
    return OomVerdict::MemoryFull;
}

Result<OomReport> reportAt(const Trace& trace, const DeviceTimeline& tl, uint64_t event,
                           int64_t local_index, size_t top_sites, const TaskContext& ctx) {
    OomReport r;
    r.device = tl.device;
    r.trace_event = event;
    r.event_index = local_index;
    if (event != kNoEvent) {
        const Event& e = trace.events[event];
        r.time = e.time;
        r.requested_bytes = e.size;
        r.device_free_bytes = deviceFree(trace, event);
        r.phase = e.phase.isNull() ? phaseAt(trace, tl.device, e.time) : e.phase;
    } else {
        r.time = tl.end;
    }
    // Hostile clocks must not overflow the difference.
    if (__builtin_sub_overflow(r.time, tl.start, &r.since_start)) r.since_start = 0;
    if (const Phase* p = trace.phase(r.phase)) r.phase_inferred = p->inferred;

    auto state = allocatorStateAt(trace, tl, r.time, ctx);
    if (!state) return state.error();
    r.reserved_bytes = state->reserved_bytes;
    r.allocated_bytes = state->active_bytes;
    r.largest_free_block = state->largest_free_gap;
    r.note = state->note;

    const std::vector<uint32_t> live = liveAtEvent(tl, event);
    for (uint32_t i : live) {
        const AllocationInterval& a = tl.intervals[i];
        const size_t c = size_t(index(a.category));
        const int64_t bytes = int64_t(std::min<uint64_t>(a.size, INT64_MAX / 4));
        r.active_bytes = addSaturating(r.active_bytes, bytes);
        r.by_category[c] = addSaturating(r.by_category[c], bytes);
        (a.category_inferred ? r.category_sources[c].inferred : r.category_sources[c].recorded) =
            true;
    }
    r.sites = sitesOf(trace, tl, live, top_sites);
    r.verdict = verdictOf(r);
    return r;
}

std::string bytes(uint64_t b) {
    return formatBytes(int64_t(std::min<uint64_t>(b, INT64_MAX)));
}

std::string momentText(const Trace& trace, const OomReport& r) {
    char buf[96];
    if (trace.metadata.time_base == TimeBase::Nanoseconds)
        std::snprintf(buf, sizeof buf, "%.3f s", double(r.since_start) / 1e9);
    else
        std::snprintf(buf, sizeof buf, "event %lld", (long long)r.since_start);
    std::string out = buf;
    if (r.event_index >= 0) out += " (event " + std::to_string(r.event_index) + ")";
    return out;
}

}  // namespace

Result<std::vector<OomReport>> oomReports(const Trace& trace, const DeviceTimeline& tl,
                                          size_t top_sites, size_t max_reports,
                                          const TaskContext& ctx) {
    std::vector<OomReport> out;
    for (size_t k = 0; k < tl.trace_events.size() && out.size() < max_reports; ++k) {
        const uint64_t i = tl.trace_events[k];
        if (i >= trace.events.size()) return makeError("timeline does not match its trace");
        if (trace.events[i].kind != EventKind::Oom) continue;
        auto r = reportAt(trace, tl, i, int64_t(k), top_sites, ctx);
        if (!r) return r.error();
        out.push_back(std::move(*r));
    }
    if (out.empty() && onlyEndState(trace, tl)) {
        auto r = reportAt(trace, tl, kNoEvent, -1, top_sites, ctx);
        if (!r) return r.error();
        out.push_back(std::move(*r));
    }
    return out;
}

std::string_view toString(OomVerdict v) {
    switch (v) {
        case OomVerdict::Fragmentation:
            return "fragmentation";
        case OomVerdict::MemoryFull:
            return "memory full";
        case OomVerdict::FreeBlockElsewhere:
            return "free block elsewhere";
        case OomVerdict::Unknown:
            break;
    }
    return "unknown";
}

std::string describeVerdict(const OomReport& r) {
    const std::string cached = bytes(r.cachedFreeBytes());
    const std::string largest = bytes(r.largest_free_block);
    switch (r.verdict) {
        case OomVerdict::Fragmentation:
            return "fragmentation: the cache held " + cached + " free, enough for the " +
                   bytes(*r.requested_bytes) + " asked for, but its largest free block was " +
                   largest + "; freed blocks lay scattered between live ones " +
                   "(expandable_segments:True, or freeing before the large allocation, helps)";
        case OomVerdict::MemoryFull: {
            std::string s = "memory full: the cache held only " + cached + " free";
            if (r.device_free_bytes) s += " and the device " + bytes(*r.device_free_bytes);
            return s + ", less than the " + bytes(*r.requested_bytes) +
                   " asked for; what was reserved was in use (lower the peak: a smaller batch, "
                   "activation checkpointing, or free what is alive below)";
        }
        case OomVerdict::FreeBlockElsewhere:
            return "a free block of " + largest + " was cached, as large as the " +
                   bytes(*r.requested_bytes) +
                   " asked for, but the allocator could not use it (another stream or pool)";
        case OomVerdict::Unknown:
            break;
    }
    return "the snapshot records no request: the cache held " + cached +
           " free, its largest free block " + largest +
           "; a larger request needed new device memory";
}

std::vector<std::string> oomReportLines(const Trace& trace, const OomReport& r) {
    std::vector<std::string> out;
    auto row = [&](const char* label, const std::string& value) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "  %-18s ", label);
        out.push_back(buf + value);
    };
    std::string head =
        r.endState()
            ? "memory at the end state on device " + std::to_string(r.device) +
                  " (no out-of-memory event recorded; a snapshot "
                  "dumped at an OOM shows the memory then)"
            : "out of memory on device " + std::to_string(r.device) + " at " + momentText(trace, r);
    out.push_back(std::move(head));
    if (r.requested_bytes) row("asked for", bytes(*r.requested_bytes));
    if (r.device_free_bytes) row("device free", bytes(*r.device_free_bytes));
    row("reserved",
        bytes(r.reserved_bytes) + ", " + bytes(r.cachedFreeBytes()) + " of it free in the cache");
    row("active", formatBytes(r.active_bytes));
    row("largest free block", bytes(r.largest_free_block));
    if (!r.phase.isNull())
        row("phase", phasePath(trace, r.phase) + (r.phase_inferred ? "  (inferred)" : ""));
    row("verdict", describeVerdict(r));
    if (!r.note.empty()) row("note", r.note);
    bool any = false;
    for (Category c : kAllCategories) {
        const int64_t b = r.by_category[size_t(index(c))];
        if (b == 0) continue;
        if (!any) out.push_back("  alive by category");
        any = true;
        const CategorySources src = r.category_sources[size_t(index(c))];
        char buf[160];
        const auto name = toString(c);
        std::snprintf(buf, sizeof buf, "    %-16.*s %s%s", int(name.size()), name.data(),
                      formatBytes(b).c_str(),
                      src.inferred ? (src.recorded ? "  (partly inferred)" : "  (inferred)") : "");
        out.push_back(buf);
    }
    if (!r.sites.empty() && !(r.sites.size() == 1 && !r.sites[0].site)) {
        out.push_back("  top sites alive");
        for (const SiteAtPeak& s : r.sites) {
            const auto category = toString(s.category);
            char buf[96];
            std::snprintf(buf, sizeof buf, "    %10s  %-15.*s %5u x  ",
                          formatBytes(s.bytes).c_str(), int(category.size()), category.data(),
                          s.count);
            out.push_back(buf + s.label + opSuffix(trace, s.op));
        }
    }
    return out;
}

}  // namespace memscope
