// Trace entries: a dict of the device_traces lists becomes an Event the
// moment it is appended (SnapshotMapper::onAppend).
#include <array>
#include <cmath>
#include <optional>
#include <utility>

#include "pickle_json.h"
#include "snapshot_mapper.h"

namespace memscope::pytorch_snapshot {

using pickle::Container;
using pickle::Kind;
using pickle::Machine;
using pickle::Tag;
using pickle::Value;

namespace {

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

// Longer text is cut (a memoized megabyte string rendered once per entry would
// otherwise be stored once per entry).
constexpr size_t kMaxAttributeText = 4096;

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

bool SnapshotMapper::failEntry(Machine& m) {
    if (!entry_error_.empty()) m.fail(std::exchange(entry_error_, {}));
    return false;
}

bool SnapshotMapper::convertEntry(Machine& m, uint32_t list, uint32_t dict) {
    uint64_t event = kDropped;
    if (!mapEntry(m, list, kSinkOfList, m.at(dict).items, event)) return failEntry(m);
    const Value self{Tag::Ref, m.at(dict).generation, dict};
    if (event == kDropped) {  // dropped
        releaseTree(m, self, 2, true);
        return true;
    }
    // Another list that refers to this dict (a memo reference) gets the event too.
    m.at(dict).replacement = Value{Tag::Entry, 0, event};
    // What releaseTree(dict, 2) does, knowing the one container in it (the
    // frames list, nearly always alone).
    size_t refs = 0;
    Value ref;
    for (const Value& v : m.at(dict).items)
        if (v.tag == Tag::Ref) ref = v, ++refs;
    if (refs > 1) {
        releaseTree(m, self, 2, true);
    } else {
        if (refs == 1) releaseTree(m, ref, 1, true);
        pending_release_.push_back(dict);
    }
    return true;
}

pickle::FlatDict SnapshotMapper::onFlatDict(Machine& m, uint32_t list, std::span<const Value> items,
                                            Value& memo) {
    // Torch writes 'action' first: a trace entry is known by its first key.
    if (items.size() < 2 || items[0].tag != Tag::Str ||
        first_keys_.of(items[0], m.str(items[0])) != EntryKey::Action)
        return pickle::FlatDict::NotTaken;
    if (!entries_) {
        // The machine outlives every call of this: run() settles before it returns.
        entries_ = std::make_unique<EntryPipeline>(
            [this, &m](std::span<const Value> entry, uint32_t sink, uint64_t& event,
                       std::string& error) {
                if (mapEntry(m, 0, sink, entry, event)) return true;
                error = std::exchange(entry_error_, {});
                return false;
            },
            pipeline_block_);
    }
    if (entries_->failed()) {  // an entry before this one: stop here
        settle(m);
        return pickle::FlatDict::Failed;
    }
    // takesFlatDicts() saw the list's sink: an event sink.
    const uint32_t sink = (m.at(list).sink >> 1) - 1;
    // The dict's slot holds what the ordinary path leaves there after
    // freeing it (Entry or Dead) once the entry is mapped: see onAppend.
    memo = Value{Tag::Pending, 0, entries_->add(items, sink, m.offset())};
    return pickle::FlatDict::Taken;
}

void SnapshotMapper::settle(Machine& m) {
    if (!entries_) return;
    entries_->drain();
    if (auto failure = entries_->takeFailure()) m.failAt(failure->message, failure->offset);
}

bool SnapshotMapper::takesFlatDicts(Machine& m, uint32_t list) {
    if (!whole_entries_) return false;
    const uint32_t sink = m.at(list).sink;
    return sink != 0 && (sink & 1) == kEventSink;
}

bool SnapshotMapper::mapEntry(Machine& m, uint32_t list, uint32_t sink,
                              std::span<const Value> items, uint64_t& event) {
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
    for (size_t i = 0; i + 1 < items.size(); i += 2) {
        const Value& k = items[i];
        const Value& v = items[i + 1];
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
    if (!given(EntryKey::Action)) return entryError("a trace entry without 'action'");
    if (at(EntryKey::Action).tag != Tag::Str)
        return entryError("a trace entry's 'action' is not a string");
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
            return entryError("a trace entry's 'size' is not a non-negative integer");
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
                return entryError("a trace entry's 'time_us' is out of range");
            ev.time = ns;
            has_time = true;
        } else if (v.tag == Tag::UInt) {
            return entryError("a trace entry's 'time_us' is out of range");
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
        Drops& why = bad_addr ? bad_addr_ : huge_size_;
        if (why.count++ == 0) why.first = where();
        return true;  // event stays kDropped
    }
    if (!has_time && bad_time_.first.empty()) bad_time_.first = where();
    ev.kind = action_class.kind;
    if (action_class.keep_name) attribute(key_action_, action);
    ev.stack = stackOf(m, frames);

    if (sink == kSinkOfList) sink = sinkFor(m, list, kEventSink);
    if (sink == UINT32_MAX) return false;  // sinkFor() failed the machine
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
    event = index;
    return true;
}

}  // namespace memscope::pytorch_snapshot
