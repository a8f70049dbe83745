#include "memscope/recording/recording_merge.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "memscope/base/json_text.h"
#include "memscope/model/run_name.h"
#include "memscope/recording/phase_assignment.h"
#include "memscope/recording/recorded_modules.h"
#include "memscope/recording/recorded_ops.h"
#include "trace_copier.h"

namespace memscope {
namespace {

struct PendingAttribute {
    size_t event = 0;  // index into Builder::events before sorting
    StringId key;
    StringId value;
};

bool isSegmentKind(EventKind k) {
    return k == EventKind::SegmentAlloc || k == EventKind::SegmentFree ||
           k == EventKind::SegmentMap || k == EventKind::SegmentUnmap;
}

bool isTensorKind(EventKind k) {
    return k == EventKind::Alloc || k == EventKind::FreeRequested || k == EventKind::FreeCompleted;
}

bool sameEntry(const Event& a, const Event& b) {
    return a.kind == b.kind && a.device == b.device && a.address == b.address && a.size == b.size &&
           a.time == b.time;
}

PhaseKind phaseKindOf(HookPhaseKind k) {
    switch (k) {
        case HookPhaseKind::Step:
            return PhaseKind::Step;
        case HookPhaseKind::Forward:
            return PhaseKind::Forward;
        case HookPhaseKind::Backward:
            return PhaseKind::Backward;
        case HookPhaseKind::Recompute:
            return PhaseKind::Recompute;
        case HookPhaseKind::Optimizer:
            return PhaseKind::Optimizer;
        case HookPhaseKind::ZeroGrad:
            return PhaseKind::Range;
    }
    return PhaseKind::Range;
}

std::string secondsText(int64_t ns) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.3f", double(ns) / 1e9);
    return text;
}

// Collects the merged events and their attributes in runs, one per source,
// and merges the runs by time at the end. A k-way merge rather than a sort:
// each source keeps its own order exactly, also where its clock steps back
// (the allocator's approximate clock can), so a history merged alone is the
// history unchanged.
class Builder {
public:
    explicit Builder(Trace& out) : out_(out) {}

    void beginRun() {
        if (run_starts_.empty() || run_starts_.back() != events_.size())
            run_starts_.push_back(events_.size());
    }
    size_t add(const Event& e) {
        if (run_starts_.empty()) run_starts_.push_back(0);
        events_.push_back(e);
        return events_.size() - 1;
    }
    void attribute(size_t event, std::string_view key, std::string_view value) {
        attributes_.push_back({event, out_.internString(key), out_.internString(value)});
    }
    void attribute(size_t event, StringId key, StringId value) {
        attributes_.push_back({event, key, value});
    }
    // Copies `from`'s events [first, from.events.size()) with their attributes.
    void copyEvents(const Trace& from, TraceCopier& copier, size_t first,
                    const std::vector<bool>* keep = nullptr) {
        auto attr = std::lower_bound(
            from.attributes.begin(), from.attributes.end(), uint64_t(first),
            [](const EventAttribute& a, uint64_t index) { return a.event < index; });
        for (size_t i = first; i < from.events.size(); ++i) {
            const bool kept = !keep || (*keep)[i];
            const size_t index = kept ? add(copier.event(from.events[i])) : 0;
            for (; attr != from.attributes.end() && attr->event == i; ++attr)
                if (kept) attribute(index, copier.string(attr->key), copier.string(attr->value));
        }
    }
    // Markers are kept apart and merged as one more run, in time order.
    void marker(int64_t time, int16_t device, std::string_view key, std::string_view value) {
        Event e;
        e.kind = EventKind::Marker;
        e.time = time;
        e.device = device;
        markers_.push_back({e, out_.internString(key), out_.internString(value)});
    }

    void finish() {
        std::stable_sort(markers_.begin(), markers_.end(),
                         [](const auto& a, const auto& b) { return a.event.time < b.event.time; });
        beginRun();
        for (const MarkerEvent& m : markers_) attribute(add(m.event), m.key, m.value);

        // Runs as [begin, end) ranges; merge by head time, earlier run first
        // on a tie.
        std::vector<std::pair<size_t, size_t>> runs;
        for (size_t r = 0; r < run_starts_.size(); ++r) {
            const size_t end = r + 1 < run_starts_.size() ? run_starts_[r + 1] : events_.size();
            if (run_starts_[r] < end) runs.emplace_back(run_starts_[r], end);
        }
        std::vector<uint64_t> new_index(events_.size());
        out_.events.clear();
        out_.events.reserve(events_.size());
        for (;;) {
            size_t best = runs.size();
            for (size_t r = 0; r < runs.size(); ++r)
                if (runs[r].first < runs[r].second &&
                    (best == runs.size() ||
                     events_[runs[r].first].time < events_[runs[best].first].time))
                    best = r;
            if (best == runs.size()) break;
            const size_t i = runs[best].first++;
            new_index[i] = out_.events.size();
            out_.events.push_back(events_[i]);
        }
        out_.attributes.reserve(attributes_.size());
        for (const PendingAttribute& a : attributes_)
            out_.attributes.push_back({new_index[a.event], a.key, a.value});
        std::stable_sort(
            out_.attributes.begin(), out_.attributes.end(),
            [](const EventAttribute& a, const EventAttribute& b) { return a.event < b.event; });
        events_ = {};
        attributes_ = {};
    }

private:
    struct MarkerEvent {
        Event event;
        StringId key;
        StringId value;
    };
    Trace& out_;
    std::vector<Event> events_;
    std::vector<size_t> run_starts_;
    std::vector<PendingAttribute> attributes_;
    std::vector<MarkerEvent> markers_;
};

// The allocator's segment entries, to recognise CUPTI's records of the same
// cudaMalloc/cudaFree.
class SegmentIndex {
public:
    void add(const Event& e) {
        if (isSegmentKind(e.kind)) times_[key(e)].push_back({e.time, false});
    }
    // Consumes the nearest unmatched entry within the window.
    bool match(const Event& e) {
        auto it = times_.find(key(e));
        if (it == times_.end()) return false;
        Candidate* best = nullptr;
        uint64_t best_distance = 0;
        for (Candidate& c : it->second) {
            if (c.used) continue;
            // Unsigned: the distance between any two int64 times fits.
            const uint64_t d = c.time > e.time ? uint64_t(c.time) - uint64_t(e.time)
                                               : uint64_t(e.time) - uint64_t(c.time);
            if (d <= uint64_t(kSegmentMatchWindowNs) && (!best || d < best_distance)) {
                best = &c;
                best_distance = d;
            }
        }
        if (!best) return false;
        best->used = true;
        return true;
    }

private:
    using Key = std::tuple<uint8_t, int16_t, uint64_t, uint64_t>;
    struct Candidate {
        int64_t time;
        bool used;
    };
    static Key key(const Event& e) { return {uint8_t(e.kind), e.device, e.address, e.size}; }
    std::map<Key, std::vector<Candidate>> times_;
};

void warn(const TaskContext& ctx, WarningKind kind, std::string message, uint64_t count = 0) {
    ctx.warn({kind, std::move(message), count});
}

// The ops that made the memory (what made it), from either producer.
void addOps(Trace& out, const CapturedOps& ops, const std::string& by, MergeStats& stats,
            const TaskContext& ctx) {
    if (ops.bad > 0)
        warn(ctx, WarningKind::SkippedRecords,
             std::to_string(ops.bad) + " op records from " + by +
                 " were malformed and were left out",
             ops.bad);
    const RecordedOpsStats added = addRecordedOps(out, ops);
    if (added.unknown_name > 0)
        warn(ctx, WarningKind::SkippedRecords,
             std::to_string(added.unknown_name) + " op scopes from " + by +
                 " name an op their log does not define (the log was cut short?); left out",
             added.unknown_name);
    if (added.scopes == 0) return;
    stats.op_scopes += added.scopes;
    out.metadata.setProperty("ops", "recorded by " + by);
}

// The hook's module scopes (where in the model), apart from the phases.
void addHookModules(Trace& out, const HookSidecar& hook, const TaskContext& ctx) {
    std::vector<HookModuleScope> scopes = hook.module_scopes;
    scopes.insert(scopes.end(), hook.open_module_scopes.begin(), hook.open_module_scopes.end());
    const RecordedModulesStats stats = addRecordedModules(out, hook.modules, scopes);
    if (stats.unknown_module > 0)
        warn(ctx, WarningKind::SkippedRecords,
             std::to_string(stats.unknown_module) +
                 " module scopes name a module the hook's log does not define (the log was cut "
                 "short?) and were left out",
             stats.unknown_module);
    const HookModuleInfo& info = hook.module_info;
    if (stats.modules > 0)
        out.metadata.setProperty(
            "modules", "recorded by the memscope Python hook (module forward hooks" +
                           (info.depth > 0 ? ", " + std::to_string(info.depth) + " levels deep"
                                           : std::string()) +
                           ")");
    else if (info.depth == 0)
        out.metadata.setProperty("modules", "off (memscope-cli record --module-depth 0)");
    if (!info.compile.empty()) out.metadata.setProperty("modules.compile", info.compile);
    if (info.dropped_modules > 0 || info.dropped_roots > 0)
        warn(ctx, WarningKind::DroppedRecords,
             "the hook stopped recording some module calls: " +
                 std::to_string(info.dropped_modules) +
                 " modules past its bound of distinct "
                 "modules, " +
                 std::to_string(info.dropped_roots) +
                 " calls of roots past its bound of models alive at once",
             info.dropped_modules + info.dropped_roots);
}

// The hook's tensor roles as the categories of the allocations holding
// them; what they labelled, and what they could not, said in the metadata
// (labels outside the recorded range find nothing, as expected).
void labelRoles(Trace& out, std::vector<HookTensorRole> roles, MergeStats& stats) {
    if (roles.empty()) return;
    stats.tensor_roles = labelTensorRoles(out, std::move(roles));
    const TensorRoleStats& s = stats.tensor_roles;
    std::string text = "recorded by the memscope Python hook: " + std::to_string(s.allocations) +
                       " allocations labelled from " + std::to_string(s.labels) + " labels";
    if (s.unplaced > 0)
        text += "; " + std::to_string(s.unplaced) +
                " found no allocation (outside the recorded range, or memory not recorded)";
    if (s.conflicting > 0)
        text += "; " + std::to_string(s.conflicting) +
                " named another role for an allocation already labelled (the first kept)";
    out.metadata.setProperty("tensor_roles", std::move(text));
}

// The run's name, process, rank and properties as CUPTI's trace has them.
void takeCuptiMetadata(TraceMetadata& out, const TraceMetadata& m) {
    out.name = m.name;
    out.pid = m.pid;
    out.rank = m.rank;
    for (const auto& [k, v] : m.properties) out.setProperty(k, v);
}

// The hook's warning when it could not finish its files.
void warnHookUnfinished(const HookSidecar& hook, const TaskContext& ctx) {
    warn(ctx, WarningKind::DamagedTail,
         hook.log_file ? "the hook could not finish its files (the process was killed, left with "
                         "os._exit, or the disk was full): its phases are kept up to the last "
                         "second it could write, the allocator history up to its last dump"
                       : "the process ended before the memscope hook could finish (killed?): "
                         "phases and allocator history stop at its last save");
}

// What became of record --apply's policy: "applied_policy" only when it was
// applied (a refused policy is never shown as applied), and how.
void takeHookApply(TraceMetadata& m, const HookApply& apply) {
    if (!apply.refused.empty()) {
        m.setProperty("apply.refused", "--apply " + apply.policy + ": " + apply.refused);
        return;
    }
    if (!apply.applied) {
        if (!apply.unused.empty())
            m.setProperty("apply.not_applied", "--apply " + apply.policy + ": " + apply.unused);
        return;
    }
    m.setProperty("applied_policy", apply.policy);
    if (!apply.save_lists.empty()) m.setProperty("applied.save_lists", apply.save_lists);
    if (!apply.optimizer_in_backward.empty())
        m.setProperty("applied.optimizer_in_backward", apply.optimizer_in_backward);
    std::string wrapped;
    for (const std::string& c : apply.checkpointed) wrapped += (wrapped.empty() ? "" : ", ") + c;
    if (!wrapped.empty()) m.setProperty("applied.checkpointed", std::move(wrapped));
    if (!apply.sequential.empty()) m.setProperty("applied.sequential", apply.sequential);
}

// What the hook knows of the process (pid and rank where CUPTI did not say,
// versions, its hooks, how the process ended, its command line), and its
// warnings.
void takeHookMetadata(Trace& out, const HookSidecar& hook, const TaskContext& ctx) {
    if (out.metadata.pid < 0) out.metadata.pid = hook.pid;
    if (out.metadata.rank < 0) out.metadata.rank = hook.rank;
    if (!hook.python.empty()) out.metadata.setProperty("python", hook.python);
    if (!hook.torch.empty()) out.metadata.setProperty("torch", hook.torch);
    for (const auto& [phase, how] : hook.hooks) out.metadata.setProperty("hook." + phase, how);
    if (!hook.phases.empty())
        out.metadata.setProperty("phases",
                                 "recorded by the memscope Python hook (module forward, "
                                 "autograd backward, optimizer hooks)");
    if (!hook.history_enabled && !hook.history_reason.empty())
        out.metadata.setProperty("allocator_history", "off: " + hook.history_reason);
    if (hook.exit == "SIGTERM" || hook.exit == "SIGINT")
        out.metadata.setProperty("ended_by", hook.exit);
    if (hook.apply) {
        takeHookApply(out.metadata, *hook.apply);
        // The run's checkpoint policy is known: the one applied. compare
        // then holds whatif's prediction of it to this run (prediction_check.h).
        if (out.metadata.property("applied_policy")) {
            if (!out.metrics) out.metrics = RunMetrics{};
            if (out.metrics->policy.empty()) out.metrics->policy = hook.apply->policy;
        }
    }
    if (!hook.complete) warnHookUnfinished(hook, ctx);
    for (const std::string& w : hook.warnings) warn(ctx, WarningKind::Other, "hook: " + w);
    if (!out.metadata.property("command") && !hook.orig_argv.empty()) {
        std::string command;
        for (const std::string& a : hook.orig_argv) command += (command.empty() ? "" : " ") + a;
        out.metadata.setProperty("command", std::move(command));
        // Exactly, as the tracer keeps it: an argument may hold a space.
        out.metadata.setProperty("argv", jsonStringList(hook.orig_argv));
    }
    if (!hook.cwd.empty() && !out.metadata.property("cwd"))
        out.metadata.setProperty("cwd", hook.cwd);
}

// What people call the run: the script (or program) and its rank. The hook
// knows the script best (CUPTI sees the interpreter's command line); the
// tracer named its trace from its own; the pid when neither could.
std::string runName(const TraceMetadata& m, const HookSidecar* hook) {
    std::string name;
    if (hook) name = runNameFromPython(hook->orig_argv, hook->argv, m.rank);
    if (name.empty()) name = m.name;
    if (name.empty()) name = fallbackRunName(m.pid, m.rank);
    if (hook && hook->apply && hook->apply->applied)
        name = appliedRunName(name, hook->apply->policy);
    return name;
}

// A history without timestamps (PyTorch 2.1 and older record none) cannot be
// lined up with the phases and CUPTI's records: it is left out here, and the
// caller keeps it as a file of its own.
void dropUntimedHistories(std::vector<HistoryPart>& histories, MergeStats& stats,
                          const TaskContext& ctx) {
    const size_t histories_given = histories.size();
    std::erase_if(histories, [](const HistoryPart& h) {
        return h.trace.metadata.time_base != TimeBase::Nanoseconds;
    });
    if (histories.size() == histories_given) return;
    stats.untimed_histories = histories_given - histories.size();
    warn(ctx, WarningKind::SkippedRecords,
         "the allocator history has no timestamps (PyTorch 2.1 or older), so it cannot be "
         "lined up with the phases and CUPTI's records: it is kept beside the trace as a "
         "snapshot of its own",
         stats.untimed_histories);
}

// One of the hook's training phases as a trace phase.
Phase phaseFrom(const HookPhase& hp, Trace& out) {
    Phase p;
    p.kind = phaseKindOf(hp.kind);
    p.step = hp.step;
    p.start = hp.start_ns;
    // A zero-length phase would read as "still open": give it 1 ns.
    p.end = hp.end_ns > hp.start_ns ? hp.end_ns : hp.start_ns + 1;
    p.name = out.internString(hp.kind == HookPhaseKind::Step ? "step " + std::to_string(hp.step)
                                                             : std::string(toString(hp.kind)));
    return p;
}

// The sources merged into one trace, one after the other: the events
// collected so far, the annotations copied, and what the allocator history
// covers, so that CUPTI's records of the same are left out.
class SourceMerger {
public:
    SourceMerger(Trace& out, MergeStats& stats, const TaskContext& ctx)
        : out_(out), stats_(stats), ctx_(ctx), builder_(out) {}

    // 1. The allocator history, dump after dump. False: cancelled.
    bool addHistories(const std::vector<HistoryPart>& histories) {
        std::optional<Event> last_entry;
        builder_.beginRun();
        for (size_t d = 0; d < histories.size(); ++d) {
            if (ctx_.cancelled()) return false;
            const Trace& dump = histories[d].trace;
            const size_t first = firstNewEntry(histories[d], d, last_entry);
            TraceCopier copier(dump, out_);
            for (size_t i = first; i < dump.events.size(); ++i) {
                history_segments_.add(dump.events[i]);
                if (dump.events[i].kind != EventKind::Marker)
                    history_devices_.insert(dump.events[i].device);
            }
            stats_.history_events += dump.events.size() - first;
            builder_.copyEvents(dump, copier, first);
            copyAnnotations(dump, copier);
            if (!dump.events.empty()) last_entry = dump.events.back();
            if (d + 1 == histories.size() && dump.allocator_state)
                out_.allocator_state = copier.allocatorState();
        }
        if (!histories.empty())
            out_.metadata.setProperty("tensor_events", "PyTorch caching-allocator history");
        return true;
    }

    // 2. CPU allocations from c10's reporting hook.
    void addCpuAllocations(const std::vector<CapturedAllocation>& cpu) {
        builder_.beginRun();
        for (const CapturedAllocation& c : cpu) {
            if (c.bytes == 0) continue;
            Event e;
            e.time = c.time;
            e.address = c.address;
            e.size = c.bytes > 0 ? uint64_t(c.bytes) : uint64_t(0) - uint64_t(c.bytes);
            e.device = -1;
            e.kind = c.bytes > 0 ? EventKind::Alloc : EventKind::FreeCompleted;
            builder_.add(e);
        }
        stats_.cpu_events = cpu.size();
        if (!cpu.empty()) out_.metadata.setProperty("host_events", "c10 CPU allocator reports");
    }

    // 3. CUPTI: segments the allocator did not report (memory outside
    // PyTorch), tensor-level records of devices the history does not cover,
    // NVTX phases and annotations.
    void addCupti(const Trace& cupti) {
        TraceCopier copier(cupti, out_);
        builder_.beginRun();
        const std::vector<bool> keep = cuptiEventsKept(cupti);
        builder_.copyEvents(cupti, copier, 0, &keep);
        if (out_.allocator_state) addCuptiOnlySegments(cupti, keep);
        for (uint32_t p = 1; p <= cupti.phases.size(); ++p) copier.phase(PhaseId(p));
        copyAnnotations(cupti, copier);
        if (!out_.allocator_state && cupti.allocator_state)
            out_.allocator_state = copier.allocatorState();
    }

    // 4. The hook's training phases, its module scopes, and where
    // torch.profiler took CUPTI over.
    void addHookRecords(const HookSidecar& hook) {
        for (const HookPhase& hp : hook.phases) out_.addPhase(phaseFrom(hp, out_));
        addHookModules(out_, hook, ctx_);
        for (const HookProfilerSession& s : hook.profiler_sessions) {
            builder_.marker(s.time_ns, -1, "cupti_taken_over",
                            s.what +
                                ": torch.profiler took CUPTI over; CUPTI segment records "
                                "stop here (the allocator history is unaffected)");
            warn(ctx_, WarningKind::DroppedRecords,
                 "torch.profiler ran at " + secondsText(s.time_ns) +
                     " s and took CUPTI over: CUPTI records after it are missing (tensor "
                     "events come from the allocator history and are complete)");
        }
    }

    void finish() { builder_.finish(); }

private:
    // A dump repeats what the ring buffer still held of the previous one:
    // continue after the previous dump's last entry; if that entry is gone,
    // entries were lost between (marked and warned of, unless the history
    // was cleared before the dump).
    size_t firstNewEntry(const HistoryPart& part, size_t d, const std::optional<Event>& last) {
        const Trace& dump = part.trace;
        if (!last || dump.events.empty()) return 0;
        size_t j = dump.events.size();
        while (j-- > 0)
            if (sameEntry(dump.events[j], *last)) break;
        if (j < dump.events.size()) return j + 1;
        if (part.cleared_before) return 0;
        ++stats_.gaps;
        const int64_t from = last->time;
        const int64_t to = dump.events.front().time;
        builder_.marker(std::max(from, to), -1, "history_gap",
                        "allocator history entries were lost between " + secondsText(from) +
                            " s and " + secondsText(to) +
                            " s: the ring buffer wrapped before memscope saved it");
        warn(ctx_, WarningKind::DroppedRecords,
             "allocator history entries were lost before dump " + std::to_string(d + 1) +
                 " (the ring buffer wrapped; raise MEMSCOPE_HISTORY_MAX_ENTRIES)",
             1);
        return 0;
    }

    // Each annotation once, whichever source had it first.
    void copyAnnotations(const Trace& from, TraceCopier& copier) {
        for (const Annotation& a : from.annotations) {
            Annotation copy = a;
            copy.name = copier.string(a.name);
            if (annotations_seen_
                    .insert({copy.time, copy.name.value, copy.device, uint8_t(copy.stage)})
                    .second)
                out_.annotations.push_back(copy);
        }
    }

    // Which of CUPTI's events are kept: not the segments the history has,
    // nor the tensor events of the devices it covers.
    std::vector<bool> cuptiEventsKept(const Trace& cupti) {
        std::vector<bool> keep(cupti.events.size(), true);
        for (size_t i = 0; i < cupti.events.size(); ++i) {
            const Event& e = cupti.events[i];
            if (isSegmentKind(e.kind) && history_segments_.match(e)) {
                keep[i] = false;
                ++stats_.cupti_segments_matched;
            } else if (isTensorKind(e.kind) && history_devices_.count(e.device)) {
                keep[i] = false;
                ++stats_.cupti_tensor_events_dropped;
            } else {
                ++stats_.cupti_events_kept;
            }
        }
        return keep;
    }

    // Segments only CUPTI saw and still held at the end belong in the end
    // state too: the timeline derives the reserved bytes before recording
    // from it, and would otherwise subtract them from the allocator's.
    void addCuptiOnlySegments(const Trace& cupti, const std::vector<bool>& keep) {
        std::map<std::pair<int16_t, uint64_t>, uint64_t> live;
        for (size_t i = 0; i < cupti.events.size(); ++i) {
            const Event& e = cupti.events[i];
            if (!keep[i]) continue;
            if (e.kind == EventKind::SegmentAlloc || e.kind == EventKind::SegmentMap)
                live[{e.device, e.address}] = e.size;
            else if (e.kind == EventKind::SegmentFree || e.kind == EventKind::SegmentUnmap)
                live.erase({e.device, e.address});
        }
        for (const auto& [where, size] : live) {
            Segment segment;
            segment.device = where.first;
            segment.address = where.second;
            segment.total_size = size;
            segment.first_block = uint32_t(out_.allocator_state->blocks.size());
            out_.allocator_state->segments.push_back(segment);
        }
    }

    Trace& out_;
    MergeStats& stats_;
    const TaskContext& ctx_;
    Builder builder_;
    SegmentIndex history_segments_;
    std::set<int16_t> history_devices_;
    std::set<std::tuple<int64_t, uint32_t, int16_t, uint8_t>> annotations_seen_;
};

}  // namespace

Result<Trace> mergeRecording(RecordingParts parts, const TaskContext& ctx, MergeStats* stats_out) {
    MergeStats stats;
    Trace out;
    out.metadata.source_format = "memscope-record";
    out.metadata.time_base = TimeBase::Nanoseconds;
    if (parts.cupti) takeCuptiMetadata(out.metadata, parts.cupti->metadata);
    const HookSidecar* hook = parts.hook ? &*parts.hook : nullptr;
    if (hook) takeHookMetadata(out, *hook, ctx);
    out.metadata.name = runName(out.metadata, hook);
    dropUntimedHistories(parts.histories, stats, ctx);

    SourceMerger merger(out, stats, ctx);
    if (!merger.addHistories(parts.histories)) return cancelledError();
    merger.addCpuAllocations(parts.cpu);
    if (parts.cupti) merger.addCupti(*parts.cupti);
    if (hook) merger.addHookRecords(*hook);
    merger.finish();
    addOps(out, parts.capture_ops, "at::RecordFunction (memscope's capture library)", stats, ctx);
    if (hook) addOps(out, hook->ops, "the memscope Python hook's TorchDispatchMode", stats, ctx);
    if (hook) labelRoles(out, std::move(parts.hook->tensor_roles), stats);
    nestPhasesByTime(out);
    assignInnermostPhases(out);
    if (stats_out) *stats_out = stats;
    return out;
}

}  // namespace memscope
