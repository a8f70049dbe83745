// Streams a chrome trace through RapidJSON's SAX reader and keeps the
// "[memory]" events and the CPU ops (compactly: interned name, span, thread):
// memory stays proportional to those, not to the file. The ops then give the
// phases (ProfilerStep#N, forward, backward, optimizer) and each memory
// event's innermost op as a one-frame stack.
#include <rapidjson/reader.h>

#include <algorithm>
#include <filesystem>
#include <queue>
#include <unordered_map>

#include "json_input.h"
#include "memscope/plugins/kineto.h"

namespace memscope::kineto {
namespace {

constexpr int kMaxDepth = 256;

enum class Field : uint8_t {
    Other,
    Name,
    Ts,
    Dur,
    Pid,
    Tid,
    Ph,
    Cat,
    Args,
    DeviceType,
    DeviceId,
    Addr,
    Bytes,
    TotalAllocated,
    TotalReserved,
    Rank,
};

class Handler : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, Handler> {
public:
    Handler(Trace& trace, json_input::Source& src, const TaskContext& ctx)
        : trace_(trace), gate_(ctx, src) {
        key_total_reserved_ = trace_.internString("total_reserved");
    }

    bool StartObject() {
        if (stream_) stream_->mark();
        if (++depth_ > kMaxDepth) return tooDeep();
        if (depth_ == event_depth_ && in_events_) {
            ev_ = Pending{};
        } else if (depth_ == event_depth_ + 1 && in_events_ && field_ == Field::Args) {
            in_args_ = true;
            // A second "args" replaces the first, as in Python's json.
            ev_.resetArgs();
        } else if (depth_ == 2 && field_ == Field::Rank) {
            in_distributed_ = true;  // "distributedInfo": {"rank": ...}
        }
        field_ = Field::Other;
        return true;
    }
    bool EndObject(rapidjson::SizeType) {
        if (stream_) stream_->mark();
        if (depth_ == event_depth_ && in_events_) {
            if (!flushEvent()) return false;
        } else if (depth_ == event_depth_ + 1) {
            in_args_ = false;
        } else if (depth_ == 2) {
            in_distributed_ = false;
        }
        --depth_;
        field_ = Field::Other;
        return progress();
    }
    bool StartArray() {
        if (stream_) stream_->mark();
        if (++depth_ > kMaxDepth) return tooDeep();
        if (depth_ == 1) {  // the JSON Array Format: a bare list of events
            in_events_ = true;
            event_depth_ = 2;
        } else if (depth_ == 2 && top_key_ == "traceEvents") {
            in_events_ = true;
            event_depth_ = 3;
            // A second "traceEvents" replaces the first, as in Python's json.
            if (events_arrays_++ > 0) {
                trace_.events.clear();
                trace_.attributes.clear();
                live_by_size_.clear();
                last_reserved_.clear();
                ops_.clear();
                threads_.clear();
                event_thread_.clear();
                memory_events_ = 0;
                no_ts_ = bad_bytes_ = Drops{};
            }
        }
        field_ = Field::Other;
        return true;
    }
    bool EndArray(rapidjson::SizeType) {
        if (stream_) stream_->mark();
        if (in_events_ && depth_ == event_depth_ - 1) in_events_ = false;
        --depth_;
        field_ = Field::Other;
        return true;
    }
    bool Key(const char* s, rapidjson::SizeType n, bool) {
        if (stream_) stream_->mark();
        const std::string_view k(s, n);
        field_ = Field::Other;
        if (depth_ == 1) {
            top_key_.assign(k);
            if (k == "distributedInfo") field_ = Field::Rank;
        } else if (in_distributed_ && depth_ == 2) {
            if (k == "rank") field_ = Field::Rank;
        } else if (in_events_ && depth_ == event_depth_) {
            if (k == "name")
                field_ = Field::Name;
            else if (k == "ts")
                field_ = Field::Ts;
            else if (k == "dur")
                field_ = Field::Dur;
            else if (k == "pid")
                field_ = Field::Pid;
            else if (k == "tid")
                field_ = Field::Tid;
            else if (k == "ph")
                field_ = Field::Ph;
            else if (k == "cat")
                field_ = Field::Cat;
            else if (k == "args")
                field_ = Field::Args;
        } else if (in_args_ && depth_ == event_depth_ + 1) {
            if (k == "Device Type")
                field_ = Field::DeviceType;
            else if (k == "Device Id")
                field_ = Field::DeviceId;
            else if (k == "Addr")
                field_ = Field::Addr;
            else if (k == "Bytes")
                field_ = Field::Bytes;
            else if (k == "Total Allocated")
                field_ = Field::TotalAllocated;
            else if (k == "Total Reserved")
                field_ = Field::TotalReserved;
        }
        return true;
    }
    bool String(const char* s, rapidjson::SizeType n, bool) {
        if (stream_) stream_->mark();
        const std::string_view text(s, n);
        if (field_ == Field::Name) {
            ev_.memory = text == "[memory]";
            ev_.name_cut = text.size() > kMaxOpName;
            ev_.name.assign(text.substr(0, kMaxOpName));
        } else if (field_ == Field::Ph) {
            ev_.complete = text == "X";
        } else if (field_ == Field::Cat) {
            ev_.cpu = text == "cpu_op" || text == "user_annotation" || text == "python_function";
        } else if (depth_ == 1 && (field_ == Field::Other))
            scalarProperty(std::string_view(s, n));
        else
            return number(s, n);  // some writers quote numbers
        return true;
    }
    // Numbers arrive as text (kParseNumbersAsStringsFlag) so that µs with a
    // fraction become ns exactly and 64-bit addresses keep every bit.
    bool RawNumber(const char* s, rapidjson::SizeType n, bool) {
        if (stream_) stream_->mark();
        if (depth_ == 1) scalarProperty(std::string_view(s, n));
        return number(s, n);
    }
    bool Null() {
        if (stream_) stream_->mark();
        return true;
    }
    bool Bool(bool b) {
        if (stream_) stream_->mark();
        if (depth_ == 1) scalarProperty(b ? "true" : "false");
        return true;
    }

    bool cancelledOrFailed() const { return gate_.cancelled(); }
    void setStream(json_input::Stream* stream) { stream_ = stream; }
    std::vector<LoadWarning> warnings() const {
        std::vector<LoadWarning> out;
        auto add = [&](const Drops& d, WarningKind kind, const std::string& what) {
            if (d.count)
                out.push_back({kind,
                               std::to_string(d.count) + " " + what + " (first: " + d.first + ")",
                               d.count});
        };
        add(no_ts_, WarningKind::SkippedRecords,
            "[memory] events without a valid 'ts' were left out");
        add(bad_bytes_, WarningKind::SkippedRecords,
            "[memory] events whose 'Bytes' is not a 64-bit integer (NaN, Infinity, too large) were "
            "left out");
        add(cut_properties_, WarningKind::ClampedValues,
            "top-level values longer than 4 KiB were cut");
        add(dropped_properties_, WarningKind::SkippedRecords,
            "top-level keys beyond the first 10,000 were left out of the metadata");
        add(cut_names_, WarningKind::ClampedValues, "op names longer than 1 KiB were cut");
        return out;
    }
    const std::string& error() const { return error_; }
    uint64_t memoryEvents() const { return memory_events_; }

private:
    struct Pending {
        bool memory = false, complete = false, cpu = false, name_cut = false;
        bool bytes_seen = false;
        std::string name, ts_text, bytes_text;
        bool has_ts = false, has_dur = false, has_addr = false, has_bytes = false,
             has_reserved = false;
        int64_t ts = 0, dur = 0, bytes = 0, device_type = 1, device_id = 0, pid = -1,
                tid = INT64_MIN;
        uint64_t addr = 0, reserved = 0;
        void resetArgs() {
            bytes_seen = has_addr = has_bytes = has_reserved = false;
            bytes_text.clear();
            bytes = device_id = 0;
            device_type = 1;
            addr = reserved = 0;
        }
    };

    bool tooDeep() {
        error_ = "JSON nested deeper than " + std::to_string(kMaxDepth) + " levels";
        return false;
    }

    bool progress() { return gate_.tick(); }

    // Top-level scalars ("schemaVersion", "traceName", ...) as metadata.
    // Values are cut to kMaxPropertyText and at most kMaxProperties are kept:
    // 2,000 one-megabyte values must not become 2 GB of metadata.
    void scalarProperty(std::string_view text) {
        if (top_key_.empty() || top_key_ == "traceEvents") return;
        if (trace_.metadata.properties.size() >= kMaxProperties &&
            !trace_.metadata.property("kineto." + top_key_)) {
            if (dropped_properties_.count++ == 0)
                dropped_properties_.first = top_key_.substr(0, 80);
            return;
        }
        if (text.size() > kMaxPropertyText) {
            if (cut_properties_.count++ == 0) cut_properties_.first = top_key_.substr(0, 80);
            text = text.substr(0, kMaxPropertyText);
        }
        trace_.metadata.setProperty("kineto." + top_key_, std::string(text));
    }

    bool number(const char* s, size_t n) {
        using namespace json_input;
        switch (field_) {
            case Field::Ts:
                ev_.has_ts = microsToNanos(s, n, ev_.ts);
                ev_.ts_text.assign(s, std::min<size_t>(n, 40));
                break;
            case Field::Dur:
                ev_.has_dur = microsToNanos(s, n, ev_.dur) && ev_.dur >= 0;
                break;
            case Field::Pid:
                parseInt(s, n, ev_.pid);
                break;
            case Field::Tid:
                parseInt(s, n, ev_.tid);
                break;
            case Field::DeviceType:
                parseInt(s, n, ev_.device_type);
                break;
            case Field::DeviceId:
                parseInt(s, n, ev_.device_id);
                break;
            case Field::Addr:
                ev_.has_addr = parseUInt(s, n, ev_.addr);
                break;
            case Field::Bytes:
                ev_.has_bytes = parseInt(s, n, ev_.bytes) && ev_.bytes != INT64_MIN;
                ev_.bytes_seen = true;
                ev_.bytes_text.assign(s, std::min<size_t>(n, 40));
                break;
            case Field::TotalReserved: {
                int64_t v;
                ev_.has_reserved = parseInt(s, n, v);
                ev_.reserved = uint64_t(v);
                break;
            }
            case Field::Rank: {
                int64_t v;
                if (in_distributed_ && parseInt(s, n, v) && v >= INT32_MIN && v <= INT32_MAX)
                    trace_.metadata.rank = int32_t(v);
                break;
            }
            default:
                break;
        }
        return true;
    }

    bool flushEvent() {
        if (!ev_.memory) {
            if (ev_.complete && ev_.cpu && ev_.has_ts && ev_.has_dur &&
                ev_.ts <= INT64_MAX - ev_.dur) {
                if (ev_.name_cut && cut_names_.count++ == 0)
                    cut_names_.first = ev_.name.substr(0, 80);
                ops_.push_back(
                    Op{ev_.ts, ev_.ts + ev_.dur, threadOf(), trace_.internString(ev_.name)});
            }
            ev_.name.clear();  // keeps its capacity for the next event
            return true;
        }
        const std::string which = "[memory] event " + std::to_string(memory_seen_++);
        if (!ev_.has_bytes) {
            // Without Bytes it is not a memory record we understand; with an
            // unusable one (NaN, Inf, beyond 64 bits) it is dropped, said.
            if (ev_.bytes_seen && bad_bytes_.count++ == 0)
                bad_bytes_.first = which + " (Bytes " + ev_.bytes_text + ")";
            return true;
        }
        // Device Type 0 is the CPU (kineto's DeviceType::CPU); the rest are devices.
        const int64_t dev = ev_.device_type == 0 ? -1 : ev_.device_id;
        if (dev < -1 || dev > INT16_MAX) {
            error_ = "a [memory] event with device " + std::to_string(dev);
            return false;
        }
        if (!ev_.has_ts) {
            // At t = 0 it would stretch the trace over 53 years.
            if (no_ts_.count++ == 0)
                no_ts_.first =
                    which + (ev_.ts_text.empty() ? " (no ts)" : " (ts " + ev_.ts_text + ")");
            return true;
        }
        ++memory_events_;
        Event e;
        e.device = int16_t(dev);
        e.time = ev_.ts;
        e.kind = ev_.bytes < 0 ? EventKind::FreeCompleted : EventKind::Alloc;
        e.size = ev_.bytes < 0 ? uint64_t(0) - uint64_t(ev_.bytes) : uint64_t(ev_.bytes);
        e.address = ev_.has_addr ? ev_.addr : syntheticAddress(e);
        if (trace_.metadata.pid < 0 && ev_.pid >= 0) trace_.metadata.pid = ev_.pid;
        if (ev_.has_reserved && e.device >= 0) {
            // Kept only where it changes: it is the reserved curve, not per-event data.
            auto [it, fresh] = last_reserved_.try_emplace(e.device, 0);
            if (fresh || it->second != ev_.reserved) {
                // The change becomes a segment event, so that the timeline's
                // reserved series follows Total Reserved.
                if (it->second != ev_.reserved) {
                    Event seg;
                    seg.device = e.device;
                    seg.time = e.time;
                    seg.kind = ev_.reserved > it->second ? EventKind::SegmentAlloc
                                                         : EventKind::SegmentFree;
                    seg.size = ev_.reserved > it->second ? ev_.reserved - it->second
                                                         : it->second - ev_.reserved;
                    trace_.events.push_back(seg);
                    event_thread_.push_back(kNoThread);
                }
                it->second = ev_.reserved;
                trace_.attributes.push_back({trace_.events.size(), key_total_reserved_,
                                             trace_.internString(std::to_string(ev_.reserved))});
            }
        }
        trace_.events.push_back(e);
        event_thread_.push_back(threadOf());
        return true;
    }

    // (pid, tid) as a dense index: ops and memory events match on it.
    uint32_t threadOf() {
        auto [it, fresh] = threads_.try_emplace({ev_.pid, ev_.tid}, uint32_t(threads_.size()));
        return it->second;
    }

    // 2021-era traces have no Addr: pair a free with the latest live allocation
    // of the same size on the device, so that the live curve still comes out right.
    uint64_t syntheticAddress(const Event& e) {
        auto& live = live_by_size_[(uint64_t(uint16_t(e.device)) << 48) ^ e.size];
        if (e.kind == EventKind::Alloc) {
            const uint64_t a = 0xF000000000000000ull | ++next_synthetic_;
            live.push_back(a);
            return a;
        }
        if (!live.empty()) {
            const uint64_t a = live.back();
            live.pop_back();
            return a;
        }
        return 0xF000000000000000ull | ++next_synthetic_;  // freed before the trace began
    }

    struct Drops {
        uint64_t count = 0;
        std::string first;
    };
    static constexpr size_t kMaxPropertyText = 4096;
    static constexpr size_t kMaxProperties = 10000;
    static constexpr size_t kMaxOpName = 1024;
    static constexpr uint32_t kNoThread = UINT32_MAX;
    struct PairHash {
        size_t operator()(const std::pair<int64_t, int64_t>& p) const {
            return std::hash<int64_t>{}(p.first) * 31 + std::hash<int64_t>{}(p.second);
        }
    };

public:
    struct Op {
        int64_t start = 0, end = 0;  // ns
        uint32_t thread = 0;
        StringId name;
    };
    std::vector<Op> ops_;
    std::vector<uint32_t> event_thread_;  // per Trace::events entry; kNoThread for segments

private:
    std::unordered_map<std::pair<int64_t, int64_t>, uint32_t, PairHash> threads_;

    Trace& trace_;
    json_input::Stream* stream_ = nullptr;
    Drops no_ts_, bad_bytes_, cut_properties_, dropped_properties_, cut_names_;
    uint64_t memory_seen_ = 0;
    int events_arrays_ = 0;
    json_input::ProgressGate gate_;
    int depth_ = 0;
    int event_depth_ = 3;
    bool in_events_ = false, in_args_ = false, in_distributed_ = false;
    Field field_ = Field::Other;
    std::string top_key_;
    Pending ev_;
    std::string error_;
    uint64_t memory_events_ = 0;
    uint64_t next_synthetic_ = 0;
    StringId key_total_reserved_;
    std::unordered_map<int16_t, uint64_t> last_reserved_;
    std::unordered_map<uint64_t, std::vector<uint64_t>> live_by_size_;
};

using Op = Handler::Op;

bool isBackwardOp(std::string_view n) {
    return n.starts_with("autograd::engine::evaluate_function") || n.ends_with("Backward0") ||
           n.ends_with("Backward1");
}

// "ProfilerStep#12" -> 12; -1 when the name is not a profiler step.
int32_t profilerStep(std::string_view n) {
    constexpr std::string_view kPrefix = "ProfilerStep#";
    if (!n.starts_with(kPrefix) || n.size() == kPrefix.size() || n.size() > kPrefix.size() + 9)
        return -1;
    int32_t v = 0;
    for (char c : n.substr(kPrefix.size())) {
        if (c < '0' || c > '9') return -1;
        v = v * 10 + (c - '0');
    }
    return v;
}

// Steps from ProfilerStep#N; inside each, forward / backward / optimizer from
// the ops' names (kinds inferred, said in the metadata's "phases").
void addPhases(Trace& trace, const std::vector<Op>& ops) {
    struct Step {
        int64_t start = 0, end = 0;
        int32_t n = 0;
        StringId name;
        int64_t bw_start = INT64_MAX, bw_end = INT64_MIN, opt_start = INT64_MAX,
                opt_end = INT64_MIN;
        std::vector<std::pair<int64_t, int64_t>> zero_grads;
    };
    std::vector<Step> steps;
    for (const Op& op : ops)
        if (int32_t n = profilerStep(trace.string(op.name)); n >= 0) {
            Step st;
            st.start = op.start;
            st.end = op.end;
            st.n = n;
            st.name = op.name;
            steps.push_back(std::move(st));
        }
    if (steps.empty()) return;
    std::sort(steps.begin(), steps.end(),
              [](const Step& a, const Step& b) { return a.start < b.start; });
    std::unordered_map<uint32_t, int> kind_of;  // name -> 0 other, 1 bw, 2 opt, 3 zero_grad
    for (const Op& op : ops) {
        auto [k, fresh] = kind_of.try_emplace(op.name.value, 0);
        if (fresh) {
            const std::string_view n = trace.string(op.name);
            k->second = isBackwardOp(n)                         ? 1
                        : n.starts_with("Optimizer.step#")      ? 2
                        : n.starts_with("Optimizer.zero_grad#") ? 3
                                                                : 0;
        }
        if (k->second == 0) continue;
        auto it = std::upper_bound(steps.begin(), steps.end(), op.start,
                                   [](int64_t t, const Step& s) { return t < s.start; });
        if (it == steps.begin()) continue;
        Step& s = *std::prev(it);
        if (op.start > s.end) continue;
        if (k->second == 1) {
            s.bw_start = std::min(s.bw_start, op.start);
            s.bw_end = std::max(s.bw_end, op.end);
        } else if (k->second == 2) {
            s.opt_start = std::min(s.opt_start, op.start);
            s.opt_end = std::max(s.opt_end, op.end);
        } else {
            s.zero_grads.push_back({op.start, op.end});
        }
    }
    const StringId forward = trace.internString("forward"),
                   backward = trace.internString("backward"),
                   optimizer = trace.internString("optimizer"),
                   zero_grad = trace.internString("zero_grad");
    for (const Step& s : steps) {
        Phase p;
        p.name = s.name;
        p.kind = PhaseKind::Step;
        p.step = s.n;
        p.start = s.start;
        p.end = s.end;
        const PhaseId step = trace.addPhase(p);
        p.parent = step;
        struct Child {
            PhaseId id;
            int64_t start, end;
        };
        std::vector<Child> children;
        auto child = [&](StringId name, PhaseKind kind, int64_t start, int64_t end) {
            p.name = name;
            p.kind = kind;
            p.start = start;
            p.end = std::max(start, end);
            // ProfilerStep#N is the trace's own marker; forward, backward and
            // the optimizer are read from which ops ran: inferred.
            p.inferred = true;
            children.push_back({trace.addPhase(p), p.start, p.end});
        };
        const int64_t forward_end = s.bw_start != INT64_MAX    ? s.bw_start
                                    : s.opt_start != INT64_MAX ? s.opt_start
                                                               : s.end;
        child(forward, PhaseKind::Forward, s.start, forward_end);
        if (s.bw_start != INT64_MAX) child(backward, PhaseKind::Backward, s.bw_start, s.bw_end);
        if (s.opt_start != INT64_MAX)
            child(optimizer, PhaseKind::Optimizer, s.opt_start, s.opt_end);
        const size_t training = children.size();
        for (const auto& [start, end] : s.zero_grads) {
            // Inside the forward/backward/optimizer phase that holds it, else the step.
            p.parent = step;
            for (size_t i = 0; i < training; ++i)
                if (children[i].start <= start && start <= children[i].end)
                    p.parent = children[i].id;
            child(zero_grad, PhaseKind::Range, start, end);
        }
    }
    trace.metadata.setProperty("phases", "inferred from profiler ops");
}

// Each event's innermost phase by time: the shortest one holding it (the
// later-added on a tie, a child over its parent). A sweep in time order.
void assignEventPhases(Trace& trace) {
    if (trace.phases.empty()) return;
    std::vector<uint32_t> by_start(trace.phases.size());
    for (uint32_t i = 0; i < by_start.size(); ++i) by_start[i] = i;
    std::sort(by_start.begin(), by_start.end(), [&](uint32_t a, uint32_t b) {
        return trace.phases[a].start < trace.phases[b].start;
    });
    std::vector<uint64_t> order(trace.events.size());
    for (uint64_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](uint64_t a, uint64_t b) {
        return trace.events[a].time < trace.events[b].time;
    });
    auto narrower = [&](uint32_t a, uint32_t b) {  // true when b is innermost over a
        const Phase &x = trace.phases[a], &y = trace.phases[b];
        const uint64_t dx = uint64_t(x.end) - uint64_t(x.start),
                       dy = uint64_t(y.end) - uint64_t(y.start);
        return dx != dy ? dy < dx : b > a;
    };
    std::priority_queue<uint32_t, std::vector<uint32_t>, decltype(narrower)> active(narrower);
    size_t next = 0;
    for (uint64_t i : order) {
        Event& e = trace.events[i];
        while (next < by_start.size() && trace.phases[by_start[next]].start <= e.time)
            active.push(by_start[next++]);
        while (!active.empty() && trace.phases[active.top()].end < e.time) active.pop();
        if (!active.empty()) e.phase = PhaseId(active.top() + 1);
    }
}

// Each memory event's innermost enclosing op on its thread becomes a
// one-frame stack: per thread, ops by start and events by time, one sweep.
void assignOpStacks(Trace& trace, std::vector<Op>& ops, const std::vector<uint32_t>& thread) {
    std::sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) {
        if (a.thread != b.thread) return a.thread < b.thread;
        if (a.start != b.start) return a.start < b.start;
        return a.end > b.end;  // the outer one first
    });
    std::vector<uint64_t> order;
    order.reserve(trace.events.size());
    for (uint64_t i = 0; i < trace.events.size() && i < thread.size(); ++i)
        if (thread[i] != UINT32_MAX) order.push_back(i);
    std::sort(order.begin(), order.end(), [&](uint64_t a, uint64_t b) {
        if (thread[a] != thread[b]) return thread[a] < thread[b];
        return trace.events[a].time < trace.events[b].time;
    });
    std::unordered_map<uint32_t, StackId> stack_of;  // op name -> its one-frame stack
    std::vector<size_t> open;                        // enclosing ops, outermost first
    size_t next = 0;
    uint32_t current = UINT32_MAX;
    for (uint64_t i : order) {
        Event& e = trace.events[i];
        if (thread[i] != current) {
            current = thread[i];
            open.clear();
            while (next < ops.size() && ops[next].thread < current) ++next;
        }
        for (; next < ops.size() && ops[next].thread == current && ops[next].start <= e.time;
             ++next) {
            while (!open.empty() && ops[open.back()].end < ops[next].start) open.pop_back();
            open.push_back(next);
        }
        while (!open.empty() && ops[open.back()].end < e.time) open.pop_back();
        if (open.empty()) continue;
        const StringId name = ops[open.back()].name;
        auto [it, fresh] = stack_of.try_emplace(name.value);
        if (fresh) {
            const FrameId f = trace.internFrame(Frame{name, StringId{}, 0});
            it->second = trace.internStack(std::span<const FrameId>(&f, 1));
        }
        e.stack = it->second;
    }
}

Result<Trace> importSource(json_input::Source& src, const TaskContext& ctx, std::string name) {
    Trace trace;
    trace.metadata.source_format = std::string(kId);
    trace.metadata.name = std::move(name);
    trace.metadata.time_base = TimeBase::Nanoseconds;
    Handler handler(trace, src, ctx);
    json_input::Stream stream(src, &ctx);
    handler.setStream(&stream);
    rapidjson::Reader reader;
    constexpr unsigned kFlags = rapidjson::kParseIterativeFlag |
                                rapidjson::kParseNumbersAsStringsFlag |
                                rapidjson::kParseNanAndInfFlag;
    const rapidjson::ParseResult ok = reader.Parse<kFlags>(stream, handler);
    if (handler.cancelledOrFailed() || stream.cancelled()) return cancelledError();
    if (!stream.error().empty()) return makeError(stream.error());
    if (!src.error().empty()) return makeError(src.error());
    if (!handler.error().empty()) return makeError(handler.error());
    if (!ok) {
        return makeError("not valid JSON at byte " + std::to_string(ok.Offset()) + " (of the " +
                         "uncompressed text): error " + std::to_string(int(ok.Code())));
    }
    trace.metadata.setProperty("kineto.memory_events", std::to_string(handler.memoryEvents()));
    addPhases(trace, handler.ops_);
    if (ctx.cancelled()) return cancelledError();
    assignEventPhases(trace);
    assignOpStacks(trace, handler.ops_, handler.event_thread_);
    if (ctx.cancelled()) return cancelledError();
    for (LoadWarning& w : handler.warnings()) ctx.warn(std::move(w));
    ctx.report(src.total(), src.total());
    return trace;
}

std::string stemOf(const std::string& path) {
    std::string name = std::filesystem::path(path).filename().string();
    for (std::string_view ext : {".gz", ".json"})
        if (name.ends_with(ext)) name.resize(name.size() - ext.size());
    return name;
}

}  // namespace

int probe(std::span<const std::byte> head, std::string_view path) {
    const std::string text = json_input::headText(head);
    size_t i = text.find_first_not_of(" \t\r\n");
    if (i == std::string::npos) return 0;
    if (text[i] == '{') {
        if (text.find("\"traceEvents\"") != std::string::npos ||
            text.find("\"schemaVersion\"") != std::string::npos)
            return 95;
        return path.ends_with(".json") || path.ends_with(".json.gz") ? 30 : 10;
    }
    if (text[i] == '[') {  // the array form of chrome traces: [{"ph": ...}, ...]
        const size_t j = text.find_first_not_of(" \t\r\n", i + 1);
        if (j != std::string::npos && text[j] == '{') return 60;
    }
    return 0;
}

Result<Trace> importFile(const std::string& path, const TaskContext& ctx) {
    auto src = json_input::openFile(path);
    if (!src) return src.error();
    return importSource(**src, ctx, stemOf(path));
}

Result<Trace> importBytes(std::span<const std::byte> bytes, const TaskContext& ctx,
                          std::string name) {
    auto src = json_input::openMemory(bytes);
    return importSource(*src, ctx, std::move(name));
}

}  // namespace memscope::kineto
