#include "memscope/whatif/oom_alternatives.h"

#include <algorithm>
#include <cstdio>

#include "memscope/allocator/allocator_model_replay.h"
#include "memscope/base/units.h"
#include "memscope/whatif/whatif.h"

namespace memscope {

namespace {

// The max_split_size_mb values tried, largest first: the largest that serves
// is suggested, since a smaller one splits less and costs more segments.
constexpr uint64_t kMaxSplitTriesMb[] = {1024, 512, 256, 128, 64};

// The trace with the failed request as an allocation in place of the OOM
// event: what a prediction needs to say whether the request would be served.
Trace withFailedRequest(const Trace& trace, uint64_t oom_event, uint64_t size) {
    Trace copy = trace;
    Event& e = copy.events[oom_event];
    e.kind = EventKind::Alloc;
    e.size = size;
    e.address = uint64_t(0xFFFF) << 48;  // above every real device address
    e.category = Category::Unknown;
    return copy;
}

std::string spare(uint64_t bytes) {
    return formatBytes(int64_t(bytes)) + " to spare";
}

}  // namespace

Result<OomAlternatives> oomAlternatives(const Trace& trace, const Timeline& timeline,
                                        const OomReport& report, const TaskContext& ctx) {
    if (report.endState() || !report.requested_bytes)
        return makeError("the report has no failed request (an end state): nothing to replay");
    const DeviceTimeline* tl = timeline.device(report.device);
    if (!tl) return makeError("no timeline for the OOM's device");
    if (report.trace_event >= trace.events.size())
        return makeError("the OOM event is not in the trace");

    OomAlternatives out;
    out.capacity_from_device_free = report.device_free_bytes.has_value();
    out.device_capacity = report.reserved_bytes + report.device_free_bytes.value_or(0);
    const uint64_t request = *report.requested_bytes;
    const Event& oom = trace.events[report.trace_event];
    const uint64_t stream = oom.stream < trace.streams.size() ? trace.streams[oom.stream] : 0;

    const AllocatorSettings recorded = allocatorSettingsOf(trace).settings;
    auto replay = [&](const AllocatorSettings& settings) {
        AllocatorModelOptions o;
        o.settings = settings;
        o.device_capacity = out.device_capacity;
        o.stop_before = report.event_index;
        o.final_request = AllocatorModelOptions::FinalRequest{request, stream};
        return replayAllocatorModel(trace, *tl, o, ctx);
    };
    auto served = [&](const AllocatorModelRun& run) {
        return !run.failure && run.final_request_served.value_or(false);
    };

    auto base = replay(recorded);
    if (!base) return base.error();
    out.model_agrees = !served(*base);

    if (!recorded.expandable_segments) {
        AllocatorSettings s = recorded;
        s.expandable_segments = true;
        auto run = replay(s);
        if (!run) return run.error();
        OomAlternative a{OomAlternativeKind::Settings, toAllocatorConf(s), served(*run), 0, ""};
        if (a.served) a.spare_bytes = out.device_capacity - run->reserved_after_final_request;
        out.alternatives.push_back(std::move(a));
    }
    if (recorded.max_split_size == AllocatorSettings::kNoMaxSplit) {
        OomAlternative best{OomAlternativeKind::Settings, "max_split_size_mb", false, 0,
                            "none of 64–1024 MiB"};
        for (uint64_t mb : kMaxSplitTriesMb) {
            AllocatorSettings s = recorded;
            s.max_split_size = mb * 1024 * 1024;
            auto run = replay(s);
            if (!run) return run.error();
            if (served(*run)) {
                best = {OomAlternativeKind::Settings, "max_split_size_mb:" + std::to_string(mb),
                        true, out.device_capacity - run->reserved_after_final_request, ""};
                break;
            }
        }
        out.alternatives.push_back(std::move(best));
    }
    if (std::none_of(out.alternatives.begin(), out.alternatives.end(),
                     [](const OomAlternative& a) { return a.served; })) {
        const uint64_t free_in_all =
            report.cachedFreeBytes() + report.device_free_bytes.value_or(0);
        out.settings_verdict = free_in_all < request
                                   ? "the device was full: " + formatBytes(int64_t(free_in_all)) +
                                         " free in all (cache and device) for a request of " +
                                         formatBytes(int64_t(request)) +
                                         ", so no allocator setting could serve it"
                                   : "no allocator setting tried undoes this fragmentation";
    }
    out.alternatives.push_back(
        {OomAlternativeKind::EmptyCache, "empty_cache", false, 0,
         "the allocator already frees every cached whole segment (and unmaps free pages) before "
         "it reports an OOM; the " +
             formatBytes(int64_t(report.cachedFreeBytes())) +
             " cached free were in segments that also held live blocks, which empty_cache cannot "
             "free"});

    // The cheapest policy, by predicted step time, whose predicted run serves
    // the request on the same device from the same cache.
    const Trace injected = withFailedRequest(trace, report.trace_event, request);
    auto tl2 = Timeline::build(injected);
    if (!tl2) return tl2.error();
    WhatIfOptions wo;
    wo.device_capacity = out.device_capacity;
    wo.allocator_start = AllocatorStart::RecordedCache;
    TaskContext inner;
    inner.cancel = ctx.cancel;
    auto what = whatIf(injected, **tl2, "", {}, wo, inner);
    OomAlternative policy{OomAlternativeKind::Policy, "checkpointing", false, 0, ""};
    if (!what) {
        policy.detail = what.message();
    } else if (what->device != report.device) {
        policy.detail =
            "the what-if predicts device " + std::to_string(what->device) + ", not the OOM's";
    } else {
        const WhatIfRow* best = nullptr;
        for (const WhatIfRow& r : what->rows) {
            if (r.measured || r.refused || !r.allocator || r.allocator->failure) continue;
            if (!best || r.step_ms < best->step_ms) best = &r;
        }
        if (best) {
            char ms[64];
            std::snprintf(ms, sizeof ms, "%.2f× the step time", best->step_time_ratio);
            policy = {OomAlternativeKind::Policy, best->policy, true,
                      out.device_capacity > best->allocator->reserved_peak_bytes
                          ? out.device_capacity - best->allocator->reserved_peak_bytes
                          : 0,
                      ms};
        } else if (!what->chain) {
            policy.detail = "no layer chain found: " + what->chain_problem;
        } else {
            size_t tried = 0;
            for (const WhatIfRow& r : what->rows) tried += !r.measured && !r.refused;
            policy.detail = "none of the " + std::to_string(tried) + " policies predicted";
        }
    }
    out.alternatives.push_back(std::move(policy));
    return out;
}

std::vector<std::string> oomAlternativeLines(const OomAlternatives& a) {
    std::vector<std::string> lines;
    lines.push_back("what would have fit (predicted by the caching-allocator model, with " +
                    formatBytes(int64_t(a.device_capacity)) + " for the allocator: " +
                    (a.capacity_from_device_free
                         ? "what it had reserved and what the device had free"
                         : "what it had reserved; the device's free bytes are not "
                           "recorded") +
                    "):");
    if (!a.model_agrees)
        lines.push_back(
            "  note: the model under the recorded settings would have served this request, so "
            "these answers are less sure");
    if (!a.settings_verdict.empty()) lines.push_back("  " + a.settings_verdict);
    for (const OomAlternative& alt : a.alternatives) {
        std::string line = "  ";
        switch (alt.kind) {
            case OomAlternativeKind::Settings:
                line += alt.name + ": ";
                line += alt.served ? "would have served it, with " + spare(alt.spare_bytes)
                                   : "would not have served it" +
                                         (alt.detail.empty() ? "" : " (" + alt.detail + ")");
                break;
            case OomAlternativeKind::EmptyCache:
                line += "emptying the cache: would not have helped: " + alt.detail;
                break;
            case OomAlternativeKind::Policy:
                line += alt.served
                            ? "checkpointing " + alt.name + " (the cheapest that fits, " +
                                  alt.detail + "): would have served it, with " +
                                  spare(alt.spare_bytes) + " at its reserved peak"
                            : "checkpointing: no policy would have served it (" + alt.detail + ")";
                break;
        }
        lines.push_back(std::move(line));
    }
    return lines;
}

}  // namespace memscope
