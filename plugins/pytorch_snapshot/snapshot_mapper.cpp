#include "snapshot_mapper.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "memscope/plugins/pytorch_snapshot.h"
#include "module_annotations.h"
#include "pickle_json.h"
#include "projected_reserve.h"

namespace memscope::pytorch_snapshot {

using pickle::Container;
using pickle::Kind;
using pickle::Machine;
using pickle::Tag;
using pickle::Value;

// Long strings are interned once per place in the input (a memo slot is one
// place): hashing an 8 MiB string for every frame that refers to it is what
// made 40,000 such frames take minutes.
StringId SnapshotMapper::internStr(Machine& m, const Value& v) {
    if (v.aux < 256) return trace_.internString(m.str(v));
    auto [it, fresh] = long_strings_.try_emplace(v.bits);
    if (fresh) it->second = trace_.internString(m.str(v));
    return it->second;
}

std::vector<LoadWarning> SnapshotMapper::warnings() const {
    std::vector<LoadWarning> out;
    auto add = [&](const Drops& d, WarningKind kind, const std::string& what) {
        if (d.count)
            out.push_back({kind, std::to_string(d.count) + " " + what + " (first: " + d.first + ")",
                           d.count});
    };
    add(bad_addr_, WarningKind::SkippedRecords,
        "trace entries with an 'addr' that is not an integer were left out");
    add(huge_size_, WarningKind::SkippedRecords,
        "trace entries with a 'size' of 2^63 bytes or more were left out");
    add(huge_segment_, WarningKind::SkippedRecords,
        "segments with a 'total_size' of 2^63 bytes or more were left out with their blocks");
    add(huge_block_, WarningKind::SkippedRecords,
        "blocks with a 'size' or 'requested_size' of 2^63 bytes or more were left out");
    add(bad_time_, WarningKind::ClampedValues,
        "trace entries without a usable 'time_us' (missing, NaN or out of range) were given the "
        "time of the entry before them on their device");
    add(cut_text_, WarningKind::ClampedValues,
        "attribute values longer than 4 KiB were cut to 4 KiB");
    return out;
}

SnapshotMapper::SnapshotMapper(Trace& trace) : trace_(trace) {
    key_device_free_ = trace_.internString("device_free");
    key_compile_context_ = trace_.internString("compile_context");
    key_user_metadata_ = trace_.internString("user_metadata");
    key_action_ = trace_.internString("action");
    key_pool_id_ = trace_.internString("pool_id");
}

void SnapshotMapper::attribute(StringId key, std::string_view value) {
    trace_.attributes.push_back(
        EventAttribute{trace_.events.size(), key, trace_.internString(value)});
}

uint32_t SnapshotMapper::sinkFor(Machine& m, uint32_t list, uint32_t type) {
    Container& c = m.at(list);
    if (c.sink == 0) {
        const size_t index = type == kEventSink ? event_sinks_.size() : segment_sinks_.size();
        if (type == kEventSink)
            event_sinks_.emplace_back();
        else
            segment_sinks_.emplace_back();
        c.sink = uint32_t((index + 1) << 1) | type;
    }
    if ((c.sink & 1) != type) {
        m.fail("a list mixes trace entries and segments");
        return UINT32_MAX;
    }
    return (c.sink >> 1) - 1;
}

void SnapshotMapper::releaseTree(Machine& m, const Value& v, int depth, bool tuples) {
    Container* c = m.deref(v);
    if (!c || (c->kind == Kind::Tuple && !tuples)) return;
    if (depth > 0)
        for (size_t i = 0; i < c->items.size(); ++i)
            if (c->items[i].tag == Tag::Ref) releaseTree(m, c->items[i], depth - 1, tuples);
    pending_release_.push_back(uint32_t(v.bits));
}

void SnapshotMapper::onBatchEnd(Machine& m) {
    for (uint32_t index : pending_release_) m.release(index);
    pending_release_.clear();
}

bool SnapshotMapper::onAppend(Machine& m, uint32_t list, Value& item, bool& keep) {
    // What follows reads and writes what mapping an entry does.
    settle(m);
    if (item.tag == Tag::Pending) {
        if (!entries_) return m.fail("an entry that was never read");  // cannot happen
        item = entries_->resolve(item.bits);  // the entry's dict appended again
    }
    if (item.tag == Tag::Entry) {
        keep = false;
        return duplicateEntry(m, list, item.bits);
    }
    Container* c = m.deref(item);
    if (!c || c->kind != Kind::Dict) return true;
    if (c->replacement.tag == Tag::Frame) {  // the same frame dict twice in one batch
        item = c->replacement;
        return true;
    }
    // Torch writes 'action' first: a trace entry is known by its first key,
    // read through the cache of the keys' places.
    if (c->items.size() >= 2 && c->items[0].tag == Tag::Str &&
        entry_keys_.of(c->items[0], m.str(c->items[0])) == EntryKey::Action) {
        keep = false;
        return convertEntry(m, list, uint32_t(item.bits));
    }
    bool action = false, filename = false, name = false, segment = false;
    for (size_t i = 0; i + 1 < c->items.size(); i += 2) {
        if (c->items[i].tag != Tag::Str) continue;
        const std::string_view k = m.str(c->items[i]);
        if (k == "action") {
            action = true;  // other writers' entries: 'action' anywhere
            break;
        } else if (k == "filename")
            filename = true;
        else if (k == "name")
            name = true;
        else if (k == "total_size" || k == "blocks")
            segment = true;
    }
    const uint32_t dict = uint32_t(item.bits);
    if (action) {
        keep = false;
        return convertEntry(m, list, dict);
    }
    if (segment) {
        keep = false;
        return convertSegment(m, list, dict);
    }
    if (filename && name) return convertFrame(m, dict, item);
    return true;
}

// A frames list written by CPython is one batch of memo references to frame
// dicts already interned: the stack goes to the interner now, written straight
// into its batch, and the items are never stored.
bool SnapshotMapper::onPlainBatch(Machine& m, uint32_t list, std::span<const Value> items,
                                  bool& consumed) {
    for (const Value& v : items)
        if (v.tag != Tag::Frame) return true;
    FrameId* out = stacks_.append(items.size());
    for (const Value& v : items) *out++ = FrameId(uint32_t(v.bits));
    Container& c = m.at(list);
    c.replacement = Value{Tag::Stack, 0, stacks_.commit(items.size()).value};
    c.folded = true;
    consumed = true;
    return true;
}

void SnapshotMapper::onProgress(uint64_t reached, uint64_t total) {
    auto reserve = [this, reached, total] {
        // An entry is at least a dozen bytes of pickle.
        const uint64_t cap = total / 12 + 1024;
        pickle::reserveProjected(trace_.events, reached, total, cap, &events_warmer_);
        pickle::reserveProjected(has_time_, reached, total, cap);
    };
    // The events may be being written on the pipeline's worker: reserved there.
    if (entries_)
        entries_->beforeNext(reserve);
    else
        reserve();
}

void SnapshotMapper::unfold(Machine& m, uint32_t list) {
    Container& c = m.at(list);
    if (c.replacement.tag != Tag::Stack) return;
    stacks_.drain();  // rare: a frames list appended to again
    for (FrameId f : trace_.stack(stacks_.resolve(StackId(uint32_t(c.replacement.bits)))))
        c.items.push_back(Value{Tag::Frame, 0, f.value});
    c.replacement = Value{};
}

bool SnapshotMapper::convertFrame(Machine& m, uint32_t dict, Value& out) {
    Container& d = m.at(dict);
    if (d.replacement.tag != Tag::Frame) {
        Frame f;
        for (size_t i = 0; i + 1 < d.items.size(); i += 2) {
            if (d.items[i].tag != Tag::Str) continue;
            const std::string_view k = m.str(d.items[i]);
            const Value& v = d.items[i + 1];
            if (k == "name" && v.tag == Tag::Str)
                f.function = internStr(m, v);
            else if (k == "filename" && v.tag == Tag::Str)
                f.file = internStr(m, v);
            else if (k == "line" && v.isInt() && !v.isNegative())
                f.line = uint32_t(std::min<uint64_t>(v.asU64(), UINT32_MAX));
        }
        d.replacement = Value{Tag::Frame, 0, trace_.internFrame(f).value};
        pending_release_.push_back(dict);
    }
    out = d.replacement;
    return true;
}

StackId SnapshotMapper::stackOf(Machine& m, const Value& frames) {
    if (frames.tag == Tag::Stack) return StackId(uint32_t(frames.bits));
    Container* c = m.deref(frames);
    if (!c || c->kind == Kind::Dict) return {};
    if (c->replacement.tag == Tag::Stack) return StackId(uint32_t(c->replacement.bits));
    frame_buf_.clear();
    for (size_t i = 0; i < c->items.size(); ++i) {
        Value f = c->items[i];
        if (f.tag == Tag::Ref) {
            Container* fd = m.deref(f);
            if (!fd || fd->kind != Kind::Dict) continue;
            convertFrame(m, uint32_t(f.bits), f);
        }
        if (f.tag == Tag::Frame) frame_buf_.push_back(FrameId(uint32_t(f.bits)));
    }
    const StackId id = stacks_.submit(frame_buf_);
    c = m.deref(frames);
    c->replacement = Value{Tag::Stack, 0, id.value};
    return id;
}

Result<void> SnapshotMapper::placeDevices(Machine& m, const Value& traces, bool host) {
    const char* what = host ? "host_traces" : "device_traces";
    Container* l = m.deref(traces);
    if (!l || l->kind == Kind::Dict)
        return makeError(std::string("not a memory snapshot: '") + what + "' is not a list");
    auto assign = [&](uint32_t sink_tag, int32_t device) -> Result<void> {
        if ((sink_tag & 1) != kEventSink)
            return makeError(std::string("'") + what + "' holds segments");
        EventSink& s = event_sinks_[(sink_tag >> 1) - 1];
        if (s.device != kUnassigned)
            return makeError(std::string("a device trace appears twice in '") + what + "'");
        s.device = device;
        return {};
    };
    if (host && l->sink) return assign(l->sink, -1);  // a flat list of host entries
    // Devices without entries leave no other trace, yet memory_viz offers one
    // per list: the count is kept for the exporter to write as many.
    if (!host)
        trace_.metadata.setProperty(std::string(kDeviceCountKey), std::to_string(l->items.size()));
    for (size_t i = 0; i < l->items.size(); ++i) {
        Container* d = m.deref(l->items[i]);
        if (!d || d->kind == Kind::Dict)
            return makeError(std::string("not a memory snapshot: '") + what + "'[" +
                             std::to_string(i) + "] is not a list");
        if (i > size_t(INT16_MAX))
            return makeError(std::string("too many devices in '") + what + "'");
        if (d->sink) {
            if (auto r = assign(d->sink, host ? -1 : int32_t(i)); !r) return r;
        } else if (!d->items.empty()) {
            return makeError(std::string("'") + what + "'[" + std::to_string(i) +
                             "] holds something other than trace entries");
        }
    }
    return {};
}

void SnapshotMapper::addAnnotations(Machine& m, const Value& list) {
    Container* l = m.deref(list);
    if (!l) return;
    for (size_t i = 0; i < l->items.size(); ++i) {
        if (stop()) return;
        Container* a = m.deref(l->items[i]);
        if (!a || a->kind != Kind::Dict) continue;
        Annotation ann;
        // memscope's module scopes (module_annotations.h): kind, path, root, type.
        bool module = false;
        std::optional<ModuleScopeKind> module_kind;
        ModuleMark mark;
        for (size_t j = 0; j + 1 < a->items.size(); j += 2) {
            if (a->items[j].tag != Tag::Str) continue;
            const std::string_view key = m.str(a->items[j]);
            const Value& v = a->items[j + 1];
            if (key == "stage" && v.tag == Tag::Str) {
                const std::string_view s = m.str(v);
                ann.stage = s == "START" ? AnnotationStage::Start
                            : s == "END" ? AnnotationStage::End
                                         : AnnotationStage::Instant;
            } else if (key == "name") {
                ann.name =
                    v.tag == Tag::Str ? internStr(m, v) : trace_.internString(renderJson(m, v, 2));
            } else if (key == "device" && v.isInt() && v.asI64() >= -1 && v.asI64() <= INT16_MAX) {
                ann.device = int16_t(v.asI64());
            } else if (key == "time_us" && v.tag == Tag::Int) {
                int64_t ns;
                ann.time = __builtin_mul_overflow(v.asI64(), int64_t(1000), &ns) ? 0 : ns;
            } else if (key == kModuleKindKey) {
                module = true;
                if (v.tag == Tag::Str) module_kind = moduleScopeKind(m.str(v));
            } else if (v.tag == Tag::Str && key == kModulePathKey) {
                mark.path = internStr(m, v);
            } else if (v.tag == Tag::Str && key == kModuleRootKey) {
                mark.root = internStr(m, v);
            } else if (v.tag == Tag::Str && key == kModuleTypeKey) {
                mark.type = internStr(m, v);
            }
        }
        if (module) {
            // Not an annotation even when unreadable: it would come back as a phase.
            if (!module_kind || ann.stage == AnnotationStage::Instant) continue;
            mark.time = ann.time;
            mark.stage = ann.stage;
            mark.kind = *module_kind;
            module_marks_.push_back(mark);
            continue;
        }
        trace_.annotations.push_back(ann);
    }
}

void SnapshotMapper::finishEvents() {
    auto& events = trace_.events;
    std::vector<uint8_t> keep(events.size(), 0);
    uint64_t kept = 0;
    for (const EventSink& s : event_sinks_) {
        if (s.device == kUnassigned) continue;
        for (auto [b, e] : s.ranges)
            for (uint64_t i = b; i < e; ++i) {
                if (stop()) return;
                events[i].device = int16_t(s.device);
                keep[i] = 1;
                ++kept;
            }
    }
    if (kept != events.size()) {
        // Entries in lists that are not a device's trace: not part of the timeline.
        std::vector<uint64_t> remap(events.size(), UINT64_MAX);
        uint64_t w = 0;
        events_without_time_ = 0;
        for (uint64_t i = 0; i < events.size(); ++i) {
            if (stop()) return;
            if (!keep[i]) continue;
            remap[i] = w;
            events[w] = events[i];
            has_time_[w] = has_time_[i];
            if (!has_time_[w]) ++events_without_time_;
            ++w;
        }
        events.resize(w);
        has_time_.resize(w);
        auto& attrs = trace_.attributes;
        size_t aw = 0;
        for (size_t i = 0; i < attrs.size(); ++i) {
            if (stop()) return;
            const uint64_t to = attrs[i].event < remap.size() ? remap[attrs[i].event] : UINT64_MAX;
            if (to == UINT64_MAX) continue;
            attrs[aw] = attrs[i];
            attrs[aw++].event = to;
        }
        attrs.resize(aw);
    }
    if (!events.empty() && events_without_time_ > 0 && events_without_time_ < events.size()) {
        // Some entries have a clock and some do not: the clock is kept, and an
        // entry without one takes the time of the entry before it on its
        // device (the first timed one for those before any), with a warning.
        std::unordered_map<int16_t, int64_t> last, first;
        for (uint64_t i = 0; i < events.size(); ++i)
            if (has_time_[i]) first.try_emplace(events[i].device, events[i].time);
        int64_t any = 0;
        for (uint64_t i = 0; i < events.size(); ++i)
            if (has_time_[i]) {
                any = events[i].time;
                break;
            }
        for (uint64_t i = 0; i < events.size(); ++i) {
            if (stop()) return;
            Event& e = events[i];
            if (has_time_[i]) {
                last[e.device] = e.time;
                continue;
            }
            auto it = last.find(e.device);
            if (it != last.end())
                e.time = it->second;
            else if (auto f = first.find(e.device); f != first.end())
                e.time = f->second;
            else
                e.time = any;
        }
        bad_time_.count = events_without_time_;
        if (bad_time_.first.empty()) bad_time_.first = "an entry before the first timed one";
        events_without_time_ = 0;
    }
    if (!events.empty() && events_without_time_ == 0) {
        trace_.metadata.time_base = TimeBase::Nanoseconds;
        trace_.metadata.setProperty("pytorch.time_source", "time_us");
        return;
    }
    // No clock (2.1-era files): each device's events are numbered in order.
    trace_.metadata.time_base = TimeBase::EventIndex;
    trace_.metadata.setProperty(
        "pytorch.time_source",
        events.empty() ? "none (no trace entries)" : "event index (the snapshot has no time_us)");
    std::vector<int64_t> next(size_t(1) << 16, 0);
    for (Event& e : events) e.time = next[uint16_t(e.device)]++;
}

Result<void> SnapshotMapper::finish(Machine& m, const Value& root, const TaskContext& ctx) {
    ctx_ = &ctx;
    // Machine::run() settled before it returned; a caller that read the
    // root some other way gets the same.
    settle(m);
    if (!m.error().empty()) return makeError(m.error());
    events_warmer_.stop();  // the stream is read: what it filled is faulted in
    if (ctx.cancelled()) return cancelledError();
    Container* r = m.deref(root);
    if (!r || r->kind == Kind::Tuple || r->kind == Kind::Set)
        return makeError(
            "not a memory snapshot: the pickle holds no dict or list at the top level");
    if (r->kind == Kind::List) {
        // torch.cuda.memory_snapshot() and very old dumps: a bare list of segments.
        if (auto s = addSegments(m, root, false); !s) return s;
    } else {
        bool known = false, no_state = false;
        // A key given twice: the last one wins, as in Python's dict.
        std::unordered_map<std::string_view, size_t> last_of;
        for (size_t i = 0; i + 1 < r->items.size(); i += 2) {
            if ((i & 0x7fe) == 0 && ctx.cancelled()) return cancelledError();
            if (r->items[i].tag == Tag::Str) last_of[m.str(r->items[i])] = i;
        }
        for (size_t i = 0; i + 1 < r->items.size(); i += 2) {
            // Polled every 1024 keys too: a file of 300,000 top-level keys
            // spends its last 100 ms here.
            if (cancelled_ || ((i & 0x7fe) == 0 && ctx.cancelled())) return cancelledError();
            if (r->items[i].tag != Tag::Str || last_of[m.str(r->items[i])] != i) continue;
            const std::string key(m.str(r->items[i]));
            const Value& v = r->items[i + 1];
            Result<void> ok;
            if (key == "segments") {
                known = true;
                ok = addSegments(m, v, false);
            } else if (key == "device_traces") {
                known = true;
                ok = placeDevices(m, v, false);
            } else if (key == "host_segments") {
                ok = addSegments(m, v, true);
            } else if (key == "host_traces") {
                ok = placeDevices(m, v, true);
            } else if (key == kNoAllocatorStateKey) {
                no_state = v.isInt() && v.bits != 0;
            } else if (key == "external_annotations") {
                addAnnotations(m, v);
            } else if (key == "allocator_settings") {
                if (Container* s = m.deref(v); s && s->kind == Kind::Dict) {
                    for (size_t j = 0; j + 1 < s->items.size(); j += 2) {
                        const Value& k = s->items[j];
                        const std::string name =
                            k.tag == Tag::Str ? std::string(m.str(k)) : renderJson(m, k, 1);
                        trace_.metadata.setProperty("allocator_settings." + name,
                                                    renderJson(m, s->items[j + 1]));
                    }
                } else {
                    trace_.metadata.setProperty("allocator_settings", renderJson(m, v));
                }
            } else {
                trace_.metadata.setProperty("snapshot." + key, renderJson(m, v));
            }
            if (!ok) return ok;
        }
        if (!known)
            return makeError(
                "not a memory snapshot: the top-level dict has neither 'segments' nor "
                "'device_traces'");
        if (no_state && trace_.allocator_state && trace_.allocator_state->segments.empty())
            trace_.allocator_state.reset();
    }
    stacks_.remap();  // every stack id stored so far is provisional
    finishEvents();
    if (cancelled_) return cancelledError();
    buildPhases();
    if (cancelled_ || ctx.cancelled()) return cancelledError();
    addModuleScopes(trace_, module_marks_);
    ctx_ = nullptr;
    std::string defaults;
    if (saw_compile_context_) defaults += "\"compile_context\":\"N/A\"";
    if (saw_user_metadata_)
        defaults += std::string(defaults.empty() ? "" : ",") + "\"user_metadata\":\"\"";
    if (!defaults.empty())
        trace_.metadata.setProperty("pytorch.entry_defaults", "{" + defaults + "}");
    trace_.metadata.setProperty("pytorch.pickle_protocol", std::to_string(m.protocol()));
    return {};
}

}  // namespace memscope::pytorch_snapshot
