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

#include "memscope/base/json_text.h"
#include "memscope/plugins/pytorch_snapshot.h"
#include "module_annotations.h"
#include "projected_reserve.h"

namespace memscope::pytorch_snapshot {

using pickle::Container;
using pickle::Kind;
using pickle::Machine;
using pickle::Tag;
using pickle::Value;

namespace {

constexpr uint32_t kEventSink = 0;
constexpr uint32_t kSegmentSink = 1;

std::optional<EventKind> kindOf(std::string_view action) {
    if (action == "alloc") return EventKind::Alloc;
    if (action == "free_requested") return EventKind::FreeRequested;
    if (action == "free_completed") return EventKind::FreeCompleted;
    // Older allocators wrote one 'free'; memory_viz pairs it like free_completed.
    if (action == "free") return EventKind::FreeCompleted;
    if (action == "segment_alloc") return EventKind::SegmentAlloc;
    if (action == "segment_free") return EventKind::SegmentFree;
    if (action == "segment_map") return EventKind::SegmentMap;
    if (action == "segment_unmap") return EventKind::SegmentUnmap;
    if (action == "oom") return EventKind::Oom;
    if (action == "snapshot") return EventKind::Snapshot;
    return std::nullopt;  // 'annotate' and unknown actions become markers
}

}  // namespace

EntryKey entryKeyOf(std::string_view key) {
    static constexpr std::pair<std::string_view, EntryKey> kKeys[] = {
        {"action", EntryKey::Action},
        {"addr", EntryKey::Addr},
        {"size", EntryKey::Size},
        {"stream", EntryKey::Stream},
        {"time_us", EntryKey::TimeUs},
        {"frames", EntryKey::Frames},
        {"device_free", EntryKey::DeviceFree},
        {"compile_context", EntryKey::CompileContext},
        {"user_metadata", EntryKey::UserMetadata},
        {"pool_id", EntryKey::PoolId},
    };
    for (const auto& [name, k] : kKeys)
        if (key == name) return k;
    return EntryKey::Other;
}

ActionClass actionClassOf(std::string_view action) {
    const std::optional<EventKind> kind = kindOf(action);
    // The action's own name is kept where the kind does not say it, so that
    // the exporter writes back what the file had ('free', unknown actions).
    return {kind.value_or(EventKind::Marker), (!kind && action != "annotate") || action == "free"};
}

namespace {

BlockState stateOf(std::string_view s) {
    if (s == "active_allocated") return BlockState::ActiveAllocated;
    if (s == "active_pending_free") return BlockState::ActivePendingFree;
    return BlockState::Inactive;
}

// Longer text is cut (a memoized megabyte string rendered once per entry would
// otherwise be stored once per entry).
constexpr size_t kMaxAttributeText = 4096;

void renderInto(Machine& m, const Value& v, int depth, std::string& out, size_t max_text) {
    if (out.size() > max_text) return;
    char buf[40];
    switch (v.tag) {
        case Tag::None:
        case Tag::Dead:
        case Tag::Unset:
        case Tag::Entry:
            out += "null";
            return;
        case Tag::Bool:
            out += v.bits ? "true" : "false";
            return;
        case Tag::Int:
            std::snprintf(buf, sizeof buf, "%" PRId64, v.asI64());
            out += buf;
            return;
        case Tag::UInt:
            std::snprintf(buf, sizeof buf, "%" PRIu64, v.asU64());
            out += buf;
            return;
        case Tag::Float: {
            std::snprintf(buf, sizeof buf, "%.17g", v.asDouble());
            out += buf;
            // Keep it a float when read back ("0" would come back as an int).
            if (!std::strpbrk(buf, ".eEn")) out += ".0";
            return;
        }
        case Tag::Str:
        case Tag::Bytes:
            appendJsonString(out, m.str(v).substr(0, max_text - std::min(max_text, out.size())));
            return;
        case Tag::Frame:
        case Tag::Stack:
            out += "null";
            return;
        case Tag::Ref:
            break;
    }
    Container* c = m.deref(v);
    if (!c || depth <= 0) {
        out += "null";
        return;
    }
    if (c->kind == Kind::Dict) {
        out += '{';
        for (size_t i = 0; i + 1 < c->items.size(); i += 2) {
            if (i) out += ',';
            const Value& k = c->items[i];
            if (k.tag == Tag::Str || k.tag == Tag::Bytes)
                appendJsonString(out, m.str(k));
            else {
                std::string key;
                renderInto(m, k, depth - 1, key, max_text);
                appendJsonString(out, key);
            }
            out += ':';
            renderInto(m, c->items[i + 1], depth - 1, out, max_text);
        }
        out += '}';
    } else {
        out += '[';
        for (size_t i = 0; i < c->items.size(); ++i) {
            if (i) out += ',';
            renderInto(m, c->items[i], depth - 1, out, max_text);
        }
        out += ']';
    }
}

// The number that ends `s` ("block 3", "ProfilerStep#12"), or -1.
int32_t trailingNumber(std::string_view s) {
    size_t i = s.size();
    while (i > 0 && std::isdigit(static_cast<unsigned char>(s[i - 1]))) --i;
    int32_t n = -1;
    if (i == s.size() || std::from_chars(s.data() + i, s.data() + s.size(), n).ec != std::errc())
        return -1;
    return n;
}

}  // namespace

PhaseGuess classifyPhase(std::string_view name) {
    // The last component of a path name ("step 0 / backward / block 3"), as
    // memscope-train and record_function scopes name them.
    if (const size_t slash = name.rfind(" / "); slash != std::string_view::npos)
        name = name.substr(slash + 3);
    std::string lower(name.substr(0, 96));
    for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    const std::string_view s = lower;
    auto numbered = [&](std::string_view prefix) {
        if (!s.starts_with(prefix) || s.size() == prefix.size()) return -1;
        const int32_t n = trailingNumber(s);
        return n >= 0 && s.size() - prefix.size() == std::to_string(n).size() ? n : -1;
    };
    PhaseGuess g;
    if (s == "forward") {
        g.kind = PhaseKind::Forward;
    } else if (s == "backward") {
        g.kind = PhaseKind::Backward;
    } else if (s.starts_with("optimizer") || s.starts_with("adam ")) {
        g.kind = PhaseKind::Optimizer;  // "adam <param>": memscope-train's per-parameter update
    } else if (const int32_t step = std::max(numbered("step "), numbered("profilerstep#"));
               step >= 0) {
        g.kind = PhaseKind::Step;
        g.step = step;
    } else if (s.starts_with("recompute")) {
        g.kind = PhaseKind::Recompute;  // "recompute block 3", "recompute attention 3"
        g.block = trailingNumber(s);
    } else if (const int32_t block = numbered("block "); block >= 0) {
        g.kind = PhaseKind::Block;
        g.block = block;
    }
    return g;
}

std::string renderJson(Machine& m, const Value& v, int depth, size_t max_text) {
    std::string out;
    renderInto(m, v, depth, out, max_text);
    return out;
}

// Long strings are interned once per place in the input (a memo slot is one
// place): hashing an 8 MiB string for every frame that refers to it is what
// made 40,000 such frames take minutes.
StringId SnapshotMapper::internStr(Machine& m, const Value& v) {
    if (v.aux < 256) return trace_.internString(m.str(v));
    auto [it, fresh] = long_strings_.try_emplace(v.bits);
    if (fresh) it->second = trace_.internString(m.str(v));
    return it->second;
}

bool SnapshotMapper::dropEntry(Machine& m, uint32_t dict, Drops& why, std::string first) {
    if (why.count++ == 0) why.first = std::move(first);
    releaseTree(m, Value{Tag::Ref, m.at(dict).generation, dict}, 2, true);
    return true;
}

// The same entry dict in a second list (a memo reference): Python sees one
// object in both lists, so both get the event.
bool SnapshotMapper::duplicateEntry(Machine& m, uint32_t list, uint64_t event) {
    if (event >= trace_.events.size()) return true;
    const uint32_t sink = sinkFor(m, list, kEventSink);
    if (sink == UINT32_MAX) return false;
    const uint64_t index = trace_.events.size();
    auto& ranges = event_sinks_[sink].ranges;
    if (!ranges.empty() && ranges.back().second == index)
        ++ranges.back().second;
    else
        ranges.emplace_back(index, index + 1);
    const auto first =
        std::lower_bound(trace_.attributes.begin(), trace_.attributes.end(), event,
                         [](const EventAttribute& a, uint64_t e) { return a.event < e; });
    std::vector<EventAttribute> copies;
    for (auto it = first; it != trace_.attributes.end() && it->event == event; ++it) {
        copies.push_back(*it);
        copies.back().event = index;
    }
    trace_.attributes.insert(trace_.attributes.end(), copies.begin(), copies.end());
    trace_.events.push_back(trace_.events[event]);
    has_time_.push_back(has_time_[event]);
    if (!has_time_[event]) ++events_without_time_;
    return true;
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
    // An entry is at least a dozen bytes of pickle.
    const uint64_t cap = total / 12 + 1024;
    pickle::reserveProjected(trace_.events, reached, total, cap, &events_warmer_);
    pickle::reserveProjected(has_time_, reached, total, cap);
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

bool SnapshotMapper::convertEntry(Machine& m, uint32_t list, uint32_t dict) {
    Container& d = m.at(dict);
    Event ev;
    bool has_time = false, bad_addr = false, huge_size = false;
    const size_t attrs_before = trace_.attributes.size();
    auto render = [&](const Value& v, int depth) {
        std::string text = renderJson(m, v, depth, kMaxAttributeText);
        if (text.size() >= kMaxAttributeText && cut_text_.count++ == 0)
            cut_text_.first = "entry " + std::to_string(entries_seen_);
        return text;
    };
    auto attributeStr = [&](StringId key, const Value& v) {
        trace_.attributes.push_back(EventAttribute{trace_.events.size(), key, internStr(m, v)});
    };
    // The event's own fields are gathered first, the last of a key winning
    // as in the dict Python would build, and read after the loop: a switch
    // over every key cost a mispredicted jump per key. Keys kept as
    // attributes are handled where they are, in the dict's order.
    std::array<Value, kEventFields> field;
    unsigned present = 0;  // bit i: field[i] was given
    // The containers among the items (the frames list, nearly always alone):
    // noted here, they are released without a second walk over the items.
    size_t refs = 0;
    Value ref;
    for (size_t i = 0; i + 1 < d.items.size(); i += 2) {
        const Value& k = d.items[i];
        const Value& v = d.items[i + 1];
        if (k.tag == Tag::Ref || v.tag == Tag::Ref) {
            ref = v.tag == Tag::Ref ? v : k;
            refs += (k.tag == Tag::Ref) + (v.tag == Tag::Ref);
        }
        if (k.tag != Tag::Str) continue;
        const EntryKey key = entry_keys_.of(k, m.str(k));
        if (const unsigned f = unsigned(key); f < kEventFields) {
            field[f] = v;
            present |= 1u << f;
            continue;
        }
        switch (key) {
            case EntryKey::DeviceFree:
                attribute(key_device_free_, renderJson(m, v, 1));
                break;
            case EntryKey::CompileContext:
                saw_compile_context_ = true;
                // "N/A" is PyTorch's "none"; storing it per event would cost more than the event.
                if (v.tag == Tag::Str) {
                    const std::string_view s = m.str(v);
                    if (!s.empty() && s != "N/A") attributeStr(key_compile_context_, v);
                } else if (v.tag != Tag::None) {
                    attribute(key_compile_context_, render(v, 4));
                }
                break;
            case EntryKey::UserMetadata:
                saw_user_metadata_ = true;
                if (v.tag == Tag::Str) {
                    if (v.aux) attributeStr(key_user_metadata_, v);
                } else if (v.tag != Tag::None) {
                    attribute(key_user_metadata_, render(v, 4));
                }
                break;
            case EntryKey::PoolId: {
                const std::string s = render(v, 2);
                if (s != "[0,0]" && s != "null") attribute(key_pool_id_, s);
                break;
            }
            default:
                attribute(internStr(m, k), render(v, 4));
                break;
        }
    }
    auto given = [&](EntryKey key) { return (present >> unsigned(key)) & 1u; };
    auto at = [&](EntryKey key) -> const Value& { return field[size_t(key)]; };
    if (!given(EntryKey::Action)) return m.fail("a trace entry without 'action'");
    if (at(EntryKey::Action).tag != Tag::Str)
        return m.fail("a trace entry's 'action' is not a string");
    const std::string_view action = m.str(at(EntryKey::Action));
    const ActionClass action_class = actions_.of(at(EntryKey::Action), action);
    if (given(EntryKey::Addr)) {
        const Value& v = at(EntryKey::Addr);
        if (v.isInt())
            ev.address = v.asU64();
        else if (v.tag != Tag::None)
            bad_addr = true;
    }
    if (given(EntryKey::Size)) {
        const Value& v = at(EntryKey::Size);
        if (v.tag == Tag::UInt)
            huge_size = true;
        else if (!v.isInt() || v.isNegative())
            return m.fail("a trace entry's 'size' is not a non-negative integer");
        else
            ev.size = v.asU64();
    }
    if (given(EntryKey::Stream) && at(EntryKey::Stream).isInt()) {
        const uint64_t stream = at(EntryKey::Stream).asU64();
        if (stream != last_stream_ || last_stream_id_ == UINT32_MAX) {
            last_stream_ = stream;
            last_stream_id_ = trace_.internStream(stream);
        }
        ev.stream = last_stream_id_;
    }
    if (given(EntryKey::TimeUs)) {
        const Value& v = at(EntryKey::TimeUs);
        if (v.tag == Tag::Int || v.tag == Tag::Bool) {
            int64_t ns;
            if (__builtin_mul_overflow(v.asI64(), int64_t(1000), &ns))
                return m.fail("a trace entry's 'time_us' is out of range");
            ev.time = ns;
            has_time = true;
        } else if (v.tag == Tag::UInt) {
            return m.fail("a trace entry's 'time_us' is out of range");
        } else if (v.tag == Tag::Float) {
            // A float clock (some writers): used where finite and in range.
            const double ns = v.asDouble() * 1000.0;
            if (ns > -9.2e18 && ns < 9.2e18) {
                ev.time = int64_t(std::llround(ns));
                has_time = true;
            }
        }
    }
    const Value frames = given(EntryKey::Frames) ? at(EntryKey::Frames) : Value{};
    ++entries_seen_;
    auto where = [&] {
        return "entry " + std::to_string(entries_seen_ - 1) + " ('" + std::string(action) + "')";
    };
    if (bad_addr || huge_size) {
        // Attributes pushed for it go with it.
        trace_.attributes.resize(attrs_before);
        return dropEntry(m, dict, bad_addr ? bad_addr_ : huge_size_, where());
    }
    if (!has_time && bad_time_.first.empty()) bad_time_.first = where();
    ev.kind = action_class.kind;
    if (action_class.keep_name) attribute(key_action_, action);
    ev.stack = stackOf(m, frames);

    const uint32_t sink = sinkFor(m, list, kEventSink);
    if (sink == UINT32_MAX) return false;
    auto& ranges = event_sinks_[sink].ranges;
    const uint64_t index = trace_.events.size();
    if (!ranges.empty() && ranges.back().second == index)
        ++ranges.back().second;
    else
        ranges.emplace_back(index, index + 1);
    trace_.events.push_back(ev);
    has_time_.push_back(has_time);
    if (!has_time)
        ++events_without_time_;
    else
        ++events_with_time_;
    // Another list that refers to this dict (a memo reference) gets the event too.
    m.at(dict).replacement = Value{Tag::Entry, 0, index};
    // What releaseTree(dict, 2) does, knowing the one container in it.
    if (refs > 1) {
        releaseTree(m, Value{Tag::Ref, m.at(dict).generation, dict}, 2, true);
    } else {
        if (refs == 1) releaseTree(m, ref, 1, true);
        pending_release_.push_back(dict);
    }
    return true;
}

bool SnapshotMapper::convertSegment(Machine& m, uint32_t list, uint32_t dict) {
    const uint32_t sink = sinkFor(m, list, kSegmentSink);
    if (sink == UINT32_MAX) return false;
    SegmentSink& out = segment_sinks_[sink];
    Container& d = m.at(dict);
    Segment s;
    Value frames, blocks;
    const uint64_t segment_index = segments_seen_++;
    bool huge_total = false;
    for (size_t i = 0; i + 1 < d.items.size(); i += 2) {
        if (d.items[i].tag != Tag::Str) continue;
        const std::string_view key = m.str(d.items[i]);
        const Value& v = d.items[i + 1];
        if (key == "device") {
            if (!v.isInt() || v.asI64() < -1 || v.asI64() > INT16_MAX)
                return m.fail("a segment's 'device' is out of range");
            s.device = int16_t(v.asI64());
        } else if (key == "address") {
            if (v.isInt()) s.address = v.asU64();
        } else if (key == "total_size") {
            if (v.tag == Tag::UInt) {
                huge_total = true;
                continue;
            }
            if (!v.isInt() || v.isNegative())
                return m.fail("a segment's 'total_size' is not a non-negative integer");
            s.total_size = v.asU64();
        } else if (key == "stream") {
            if (v.isInt()) s.stream = v.asU64();
        } else if (key == "segment_type") {
            if (v.tag == Tag::Str) s.large = m.str(v) != "small";
        } else if (key == "segment_pool_id") {
            if (Container* t = m.deref(v);
                t && t->items.size() == 2 && t->items[0].isInt() && t->items[1].isInt()) {
                s.pool_id_first = t->items[0].asU64();
                s.pool_id_second = t->items[1].asU64();
            }
        } else if (key == "is_expandable") {
            s.expandable = v.isInt() && v.bits != 0;
        } else if (key == "frames") {
            frames = v;
        } else if (key == "blocks") {
            blocks = v;
        }
    }
    if (huge_total) {
        // Its blocks lie in a range no address can hold: they go with it.
        if (huge_segment_.count++ == 0)
            huge_segment_.first = "segment " + std::to_string(segment_index);
        releaseTree(m, Value{Tag::Ref, m.at(dict).generation, dict}, 4, false);
        return true;
    }
    s.stack = stackOf(m, frames);
    s.first_block = uint32_t(out.blocks.size());
    if (Container* bl = m.deref(blocks); bl && bl->kind != Kind::Dict) {
        uint64_t next = s.address;  // legacy blocks have no address: they tile the segment
        for (size_t bi = 0; bi < bl->items.size(); ++bi) {
            Container* b = m.deref(bl->items[bi]);
            if (!b || b->kind != Kind::Dict) continue;
            Block blk;
            bool has_address = false, has_requested = false, huge = false;
            Value bframes, history;
            for (size_t i = 0; i + 1 < b->items.size(); i += 2) {
                if (b->items[i].tag != Tag::Str) continue;
                const std::string_view key = m.str(b->items[i]);
                const Value& v = b->items[i + 1];
                if (key == "address" && v.isInt()) {
                    blk.address = v.asU64();
                    has_address = true;
                } else if ((key == "size" || key == "requested_size") && v.tag == Tag::UInt) {
                    huge = true;
                } else if (key == "size" && v.isInt() && !v.isNegative()) {
                    blk.size = v.asU64();
                } else if (key == "requested_size" && v.isInt() && !v.isNegative()) {
                    blk.requested_size = v.asU64();
                    has_requested = true;
                } else if (key == "state" && v.tag == Tag::Str) {
                    blk.state = stateOf(m.str(v));
                } else if (key == "frames") {
                    bframes = v;
                } else if (key == "history") {
                    history = v;
                }
            }
            if (huge) {
                if (huge_block_.count++ == 0)
                    huge_block_.first = "segment " + std::to_string(segment_index) + ", block " +
                                        std::to_string(bi);
                continue;
            }
            if (!has_address) blk.address = next;
            next = blk.address + blk.size;
            if (bframes.tag != Tag::None) {
                blk.stack = stackOf(m, bframes);
            } else if (Container* h = m.deref(history); h && !h->items.empty()) {
                // memory_viz shows the first history record of a legacy block.
                if (Container* h0 = m.deref(h->items[0]); h0 && h0->kind == Kind::Dict) {
                    for (size_t i = 0; i + 1 < h0->items.size(); i += 2) {
                        if (h0->items[i].tag != Tag::Str) continue;
                        const std::string_view key = m.str(h0->items[i]);
                        const Value& v = h0->items[i + 1];
                        if (key == "frames")
                            blk.stack = stackOf(m, v);
                        else if (key == "real_size" && v.isInt() && v.tag != Tag::UInt &&
                                 !v.isNegative() && !has_requested) {
                            blk.requested_size = v.asU64();
                            has_requested = true;
                        }
                    }
                }
            }
            if (!has_requested) blk.requested_size = blk.size;
            out.blocks.push_back(blk);
        }
    }
    if (out.blocks.size() - s.first_block > UINT32_MAX)
        return m.fail("too many blocks in one segment");
    s.block_count = uint32_t(out.blocks.size() - s.first_block);
    out.segments.push_back(s);
    releaseTree(m, Value{Tag::Ref, m.at(dict).generation, dict}, 4, false);
    return true;
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

Result<void> SnapshotMapper::addSegments(Machine& m, const Value& list, bool host) {
    Container* l = m.deref(list);
    if (!l || l->kind == Kind::Dict)
        return makeError("not a memory snapshot: 'segments' is not a list");
    if (!trace_.allocator_state) trace_.allocator_state.emplace();
    AllocatorState& state = *trace_.allocator_state;
    if (l->sink == 0) {
        if (!l->items.empty())
            return makeError("'segments' holds something other than segment dicts");
        return {};
    }
    if ((l->sink & 1) != kSegmentSink) return makeError("'segments' holds trace entries");
    SegmentSink& sink = segment_sinks_[(l->sink >> 1) - 1];
    const uint64_t offset = state.blocks.size();
    if (offset + sink.blocks.size() > UINT32_MAX) return makeError("too many blocks");
    for (Segment s : sink.segments) {
        if (stop()) return {};
        s.first_block += uint32_t(offset);
        if (host) s.device = -1;
        state.segments.push_back(s);
    }
    state.blocks.insert(state.blocks.end(), sink.blocks.begin(), sink.blocks.end());
    sink = SegmentSink{};
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

// START/END pairs of external_annotations become phases: per device, an END
// closes the latest open START of its name; a START still open stays open to
// the last event. Nesting is what was open at a START. A phase found alike on
// every device of the trace (how the exporter writes a phase of all devices)
// becomes one phase of device -1.
void SnapshotMapper::buildPhases() {
    const auto& anns = trace_.annotations;
    if (anns.empty() || trace_.metadata.time_base != TimeBase::Nanoseconds) return;
    constexpr uint32_t kNoPhase = UINT32_MAX;
    struct Open {
        StringId name;
        int16_t device = -1;
        int64_t start = 0, end = 0;
        uint32_t parent = kNoPhase;
        uint32_t depth = 0;
        bool closed = false;
    };
    std::vector<Open> found;
    std::unordered_map<uint64_t, std::vector<uint32_t>> by_name;  // (device, name) -> open
    // device -> STARTs in order; the closed ones leave lazily, from the end.
    std::unordered_map<int16_t, std::vector<uint32_t>> open;
    for (const Annotation& a : anns) {
        if (stop()) return;
        if (a.stage == AnnotationStage::Instant) continue;
        const uint64_t k = (uint64_t(uint16_t(a.device)) << 32) | a.name.value;
        std::vector<uint32_t>& on_device = open[a.device];
        if (a.stage == AnnotationStage::Start) {
            while (!on_device.empty() && found[on_device.back()].closed) on_device.pop_back();
            Open p;
            p.name = a.name;
            p.device = a.device;
            p.start = p.end = a.time;
            if (!on_device.empty()) {
                p.parent = on_device.back();
                p.depth = found[p.parent].depth + 1;
            }
            const auto id = uint32_t(found.size());
            found.push_back(p);
            by_name[k].push_back(id);
            on_device.push_back(id);
            continue;
        }
        auto it = by_name.find(k);
        if (it == by_name.end() || it->second.empty()) continue;  // an END without START
        const uint32_t id = it->second.back();
        it->second.pop_back();
        found[id].end = std::max(a.time, found[id].start);
        found[id].closed = true;
    }
    if (found.empty()) return;

    // Still open at the end: open until the last event (of its device if any).
    std::unordered_map<int16_t, int64_t> last;
    int64_t last_any = std::numeric_limits<int64_t>::min();
    for (const Event& e : trace_.events) {
        auto [it, fresh] = last.try_emplace(e.device, e.time);
        if (!fresh) it->second = std::max(it->second, e.time);
        last_any = std::max(last_any, e.time);
    }
    for (Open& p : found) {
        if (p.closed) continue;
        auto it = last.find(p.device);
        p.end = std::max(p.start, it != last.end() ? it->second : last_any);
    }

    // Copies alike on every device (same name, times and merged parent) merge
    // into one phase of device -1, level by level so that parents merge first.
    std::vector<int16_t> devices;
    for (int16_t d : trace_.devices())
        if (d >= 0) devices.push_back(d);
    if (devices.empty()) devices.push_back(0);
    for (const Open& p : found)
        if (p.device >= 0) devices.push_back(p.device);
    std::sort(devices.begin(), devices.end());
    devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
    std::vector<uint32_t> canon(found.size());
    for (uint32_t i = 0; i < found.size(); ++i) canon[i] = i;
    std::vector<uint32_t> order = canon;
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return found[a].depth < found[b].depth; });
    using Key = std::tuple<uint32_t, int64_t, int64_t, uint32_t>;  // name, start, end, parent
    std::map<Key, std::vector<uint32_t>> groups;
    std::map<int16_t, std::vector<uint32_t>> per_device;
    for (size_t level = 0; level < order.size();) {
        size_t next = level;
        groups.clear();
        for (; next < order.size() && found[order[next]].depth == found[order[level]].depth;
             ++next) {
            const uint32_t i = order[next];
            const Open& p = found[i];
            if (p.device < 0) continue;
            const uint32_t parent = p.parent == kNoPhase ? kNoPhase : canon[p.parent];
            groups[Key{p.name.value, p.start, p.end, parent}].push_back(i);
        }
        level = next;
        for (auto& [key, members] : groups) {
            if (members.size() < devices.size()) continue;
            per_device.clear();
            for (uint32_t m : members) per_device[found[m].device].push_back(m);  // in index order
            size_t copies = SIZE_MAX;
            for (int16_t d : devices) {
                auto it = per_device.find(d);
                copies = std::min(copies, it == per_device.end() ? size_t(0) : it->second.size());
            }
            for (size_t c = 0; c < copies; ++c) {
                uint32_t first = UINT32_MAX;
                for (int16_t d : devices) first = std::min(first, per_device[d][c]);
                for (int16_t d : devices) canon[per_device[d][c]] = first;
                found[first].device = -1;
            }
        }
    }

    // In order of their STARTs, so that a parent always comes before its children.
    std::vector<uint32_t> id(found.size(), 0);
    std::vector<uint8_t> open_to_end(trace_.phases.size(), 0);
    trace_.phases.reserve(trace_.phases.size() + found.size());
    for (uint32_t i = 0; i < found.size(); ++i) {
        if (canon[i] != i) continue;
        const Open& o = found[i];
        Phase p;
        p.name = o.name;
        const PhaseGuess g = classifyPhase(trace_.string(o.name));
        p.kind = g.kind;
        p.block = g.block;
        p.step = g.step;
        p.device = o.device;
        p.start = o.start;
        p.end = o.end;
        if (o.parent != kNoPhase) {
            p.parent = PhaseId(id[canon[o.parent]]);
            if (p.step < 0) p.step = trace_.phases[id[canon[o.parent]] - 1].step;
        }
        id[i] = trace_.addPhase(p).value;
        open_to_end.push_back(!o.closed);
    }
    assignEventPhases(open_to_end);
}

// Each event gets the innermost phase active at its time on its device: the
// active one that started last. A phase is active on [start, end), one left
// open on [start, end] (it still holds the last event). Per device, the
// phases' boundaries give a step function of time (P log P); events, mostly
// in time order, walk it.
void SnapshotMapper::assignEventPhases(const std::vector<uint8_t>& open_to_end) {
    const std::vector<Phase>& phases = trace_.phases;
    if (phases.empty() || trace_.events.empty()) return;
    struct Step {
        int64_t time;
        uint32_t phase;  // PhaseId value, 0 = none
    };
    struct Device {
        std::vector<Step> steps;  // each from its time on
        size_t at = 0;            // where the last event of the device was
        bool used = false;
    };
    std::vector<Device> by_device;  // [device + 1]
    for (const Event& e : trace_.events) {
        if (size_t(e.device + 1) >= by_device.size()) by_device.resize(size_t(e.device + 2));
        by_device[size_t(e.device + 1)].used = true;
    }
    struct Edge {
        int64_t time;
        bool start;
        uint32_t phase;  // index
    };
    std::vector<Edge> edges;
    for (size_t slot = 0; slot < by_device.size(); ++slot) {
        if (!by_device[slot].used) continue;
        const auto device = int16_t(int(slot) - 1);
        std::vector<Step>& out = by_device[slot].steps;
        edges.clear();
        for (uint32_t i = 0; i < phases.size(); ++i) {
            const Phase& p = phases[i];
            if (p.device >= 0 && p.device != device) continue;
            edges.push_back({p.start, true, i});
            const bool closed_end = !open_to_end[i] && p.end > p.start;
            const int64_t end = closed_end || p.end == INT64_MAX ? p.end : p.end + 1;
            edges.push_back({std::max(end, p.start), false, i});
        }
        std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
            return a.time != b.time ? a.time < b.time : a.start < b.start;  // ends first
        });
        std::set<std::pair<int64_t, uint32_t>> active;  // (start, index): the last is innermost
        for (size_t i = 0; i < edges.size();) {
            const int64_t t = edges[i].time;
            for (; i < edges.size() && edges[i].time == t; ++i) {
                const Phase& p = phases[edges[i].phase];
                if (edges[i].start)
                    active.emplace(p.start, edges[i].phase);
                else
                    active.erase({p.start, edges[i].phase});
            }
            const uint32_t inner = active.empty() ? 0 : active.rbegin()->second + 1;
            if (out.empty() || out.back().phase != inner) out.push_back({t, inner});
        }
    }
    for (Event& e : trace_.events) {
        if (stop()) return;
        Device& d = by_device[size_t(e.device + 1)];
        const std::vector<Step>& s = d.steps;
        if (s.empty() || e.time < s.front().time) continue;
        auto covers = [&](size_t k) {
            return s[k].time <= e.time && (k + 1 == s.size() || e.time < s[k + 1].time);
        };
        size_t& at = d.at;
        if (!covers(at)) {
            if (at + 1 < s.size() && covers(at + 1)) {
                ++at;
            } else {
                const auto after =
                    std::upper_bound(s.begin(), s.end(), e.time,
                                     [](int64_t t, const Step& x) { return t < x.time; });
                at = size_t(after - s.begin()) - 1;
            }
        }
        e.phase = PhaseId(s[at].phase);
    }
}

}  // namespace memscope::pytorch_snapshot
