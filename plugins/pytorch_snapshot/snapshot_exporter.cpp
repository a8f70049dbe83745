// Writes any Trace as a memory snapshot pickle (protocol 4) that memory_viz and
// torch's own tooling open: the keys of torch.cuda.memory._snapshot().
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <vector>

#include "memscope/base/file_io.h"
#include "memscope/base/units.h"
#include "memscope/plugins/pytorch_snapshot.h"
#include "module_annotations.h"
#include "pickle_writer.h"

namespace memscope::pytorch_snapshot {
namespace {

constexpr std::string_view kCategoryNames[kCategoryCount] = {
    "parameter",  "optimizer_state", "input",           "temporary",
    "activation", "gradient",        "autograd_detail", "unknown"};

std::string_view actionOf(EventKind k) {
    switch (k) {
        case EventKind::Alloc:
            return "alloc";
        case EventKind::FreeRequested:
            return "free_requested";
        case EventKind::FreeCompleted:
            return "free_completed";
        case EventKind::SegmentAlloc:
            return "segment_alloc";
        case EventKind::SegmentFree:
            return "segment_free";
        case EventKind::SegmentMap:
            return "segment_map";
        case EventKind::SegmentUnmap:
            return "segment_unmap";
        case EventKind::Oom:
            return "oom";
        case EventKind::Snapshot:
            return "snapshot";
        case EventKind::Marker:
            return "annotate";
    }
    return "annotate";
}

std::string_view stateName(BlockState s) {
    switch (s) {
        case BlockState::ActiveAllocated:
            return "active_allocated";
        case BlockState::ActivePendingFree:
            return "active_pending_free";
        case BlockState::Inactive:
            return "inactive";
    }
    return "inactive";
}

class SnapshotWriter {
public:
    SnapshotWriter(const Trace& trace, std::FILE* out, const TaskContext& ctx)
        : t_(trace), w_(out), ctx_(ctx) {}

    Result<void> write() {
        prepareCategories();
        w_.begin();
        w_.emptyDict();
        w_.memoize();
        pickle::Batcher top(w_, true);
        top.item();
        key("segments");
        writeSegments();
        top.item();
        key("device_traces");
        if (auto r = writeTraces(); !r) return r;
        if (!host_events_.empty()) {
            top.item();
            key("host_traces");
            if (auto r = writeEntries(host_events_); !r) return r;
        }
        writeSettings(top);
        if (const std::vector<AnnotationEntry> entries = annotationEntries(); !entries.empty()) {
            top.item();
            key("external_annotations");
            writeAnnotations(entries);
        }
        if (!t_.allocator_state) {
            // Not PyTorch's: says that the empty 'segments' above means "unknown",
            // so that a kineto or native trace comes back without an end state.
            top.item();
            key(kNoAllocatorStateKey);
            w_.boolean(true);
        }
        for (const auto& [k, v] : t_.metadata.properties) {
            if (!k.starts_with("snapshot.") || k.size() == 9) continue;
            top.item();
            key(k.substr(9));
            json(v);
        }
        top.finish();
        w_.end();
        return w_.status();
    }

private:
    // Strings that repeat are written once and then fetched from the memo.
    void key(std::string_view s) {
        auto it = keys_.find(s);
        if (it != keys_.end()) return w_.get(it->second);
        w_.string(s);
        keys_.emplace(std::string(s), w_.memoize());
    }
    void interned(StringId id) {
        if (id.value < string_memo_.size() && string_memo_[id.value] != kNone)
            return w_.get(string_memo_[id.value]);
        w_.string(t_.string(id));
        if (id.value >= string_memo_.size()) string_memo_.resize(id.value + 1, kNone);
        string_memo_[id.value] = w_.memoize();
    }

    void writeJson(const nlohmann::ordered_json& j, int depth) {
        using T = nlohmann::ordered_json::value_t;
        switch (j.type()) {
            case T::null:
            case T::discarded:
                return w_.none();
            case T::boolean:
                return w_.boolean(j.get<bool>());
            case T::number_integer:
                return w_.integer(j.get<int64_t>());
            case T::number_unsigned:
                return w_.unsignedInteger(j.get<uint64_t>());
            case T::number_float:
                return w_.floating(j.get<double>());
            case T::string:
                return w_.string(j.get_ref<const std::string&>());
            case T::binary:
                return w_.none();
            case T::array: {
                w_.emptyList();
                pickle::Batcher b(w_, false);
                for (const auto& e : j) {
                    b.item();
                    depth > 0 ? writeJson(e, depth - 1) : w_.none();
                }
                return b.finish();
            }
            case T::object: {
                w_.emptyDict();
                pickle::Batcher b(w_, true);
                for (const auto& [k, v] : j.items()) {
                    b.item();
                    key(k);
                    depth > 0 ? writeJson(v, depth - 1) : w_.none();
                }
                return b.finish();
            }
        }
    }
    // Metadata values are JSON text (the importer rendered them); anything that
    // does not parse is written back as the string it is.
    void json(const std::string& text) {
        const nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr, false);
        if (j.is_discarded()) return w_.string(text);
        writeJson(j, 16);
    }

    void frame(FrameId id) {
        if (id.value < frame_memo_.size() && frame_memo_[id.value] != kNone)
            return w_.get(frame_memo_[id.value]);
        const Frame& f = t_.frame(id);
        w_.emptyDict();
        const uint32_t memo = w_.memoize();
        w_.mark();
        key("name");
        interned(f.function);
        key("filename");
        interned(f.file);
        key("line");
        w_.integer(f.line);
        w_.setItems();
        if (id.value >= frame_memo_.size()) frame_memo_.resize(id.value + 1, kNone);
        frame_memo_[id.value] = memo;
    }
    void stack(StackId id) {
        if (id.isNull()) return w_.emptyList();
        if (id.value < stack_memo_.size() && stack_memo_[id.value] != kNone)
            return w_.get(stack_memo_[id.value]);
        w_.emptyList();
        const uint32_t memo = w_.memoize();
        pickle::Batcher b(w_, false);
        for (FrameId f : t_.stack(id)) {
            b.item();
            frame(f);
        }
        b.finish();
        if (id.value >= stack_memo_.size()) stack_memo_.resize(id.value + 1, kNone);
        stack_memo_[id.value] = memo;
    }

    void writeSegments() {
        w_.emptyList();
        w_.memoize();
        if (!t_.allocator_state) return;
        pickle::Batcher list(w_, false);
        for (const Segment& s : t_.allocator_state->segments) {
            list.item();
            uint64_t allocated = 0, active = 0, requested = 0;
            for (const Block& b : t_.allocator_state->blocksOf(s)) {
                if (b.state == BlockState::Inactive) continue;
                active += b.size;
                if (b.state == BlockState::ActiveAllocated) {
                    allocated += b.size;
                    requested += b.requested_size;
                }
            }
            w_.emptyDict();
            w_.memoize();
            w_.mark();
            key("device");
            w_.integer(s.device);
            key("address");
            w_.unsignedInteger(s.address);
            key("total_size");
            w_.unsignedInteger(s.total_size);
            key("allocated_size");
            w_.unsignedInteger(allocated);
            key("active_size");
            w_.unsignedInteger(active);
            key("requested_size");
            w_.unsignedInteger(requested);
            key("stream");
            w_.unsignedInteger(s.stream);
            key("segment_type");
            key(s.large ? "large" : "small");
            key("segment_pool_id");
            w_.unsignedInteger(s.pool_id_first);
            w_.unsignedInteger(s.pool_id_second);
            w_.tuple2();
            key("is_expandable");
            w_.boolean(s.expandable);
            key("frames");
            stack(s.stack);
            key("blocks");
            w_.emptyList();
            pickle::Batcher blocks(w_, false);
            for (const Block& b : t_.allocator_state->blocksOf(s)) {
                blocks.item();
                w_.emptyDict();
                w_.mark();
                key("address");
                w_.unsignedInteger(b.address);
                key("size");
                w_.unsignedInteger(b.size);
                key("requested_size");
                w_.unsignedInteger(b.requested_size);
                key("state");
                key(stateName(b.state));
                key("frames");
                stack(b.stack);
                w_.setItems();
            }
            blocks.finish();
            w_.setItems();
            w_.boundary();
        }
        list.finish();
    }

    // memory_viz colours entries by 'category' when any has one, and then needs
    // 'unknown' among them (it pushes to a misspelt array otherwise).
    void prepareCategories() {
        bool known = false, unknown = false, other = false;
        for (const Event& e : t_.events) {
            (e.category == Category::Unknown ? unknown : known) = true;
            other |= e.kind != EventKind::Alloc && e.kind != EventKind::FreeCompleted;
        }
        unknown_on_other_kinds_ = known && !unknown;
        with_categories_ = known && (unknown || other);
    }

    Result<void> writeTraces() {
        int16_t max_device = -1;
        for (const Event& e : t_.events) {
            if (e.device < -1)
                return makeError("event on device " + std::to_string(e.device) +
                                 ": a snapshot has devices 0 and up (and -1 for the host)");
            max_device = std::max(max_device, e.device);
        }
        // memory_viz lists the devices of 'device_traces': one list per device
        // up to the last one that holds a segment, even with no entries.
        if (t_.allocator_state)
            for (const Segment& s : t_.allocator_state->segments)
                max_device = std::max(max_device, s.device);
        // ... and up to as many as the imported snapshot had, empty ones too.
        if (const std::string* n = t_.metadata.property(kDeviceCountKey)) {
            int count = 0;
            const auto [end, ec] = std::from_chars(n->data(), n->data() + n->size(), count);
            if (ec == std::errc() && end == n->data() + n->size() && count > 0)
                max_device = std::max(max_device, int16_t(std::min(count, INT16_MAX + 1) - 1));
        }
        std::vector<std::vector<uint64_t>> by_device(size_t(max_device + 2));  // [0] = host
        for (uint64_t i = 0; i < t_.events.size(); ++i)
            by_device[size_t(t_.events[i].device + 1)].push_back(i);
        for (auto& v : by_device)
            std::stable_sort(v.begin(), v.end(), [&](uint64_t a, uint64_t b) {
                return t_.events[a].time < t_.events[b].time;
            });
        defaults_ =
            nlohmann::ordered_json::parse(t_.metadata.property("pytorch.entry_defaults")
                                              ? *t_.metadata.property("pytorch.entry_defaults")
                                              : "{}",
                                          nullptr, false);
        w_.emptyList();
        w_.memoize();
        pickle::Batcher devices(w_, false);
        for (size_t d = 1; d < by_device.size(); ++d) {
            devices.item();
            if (auto r = writeEntries(by_device[d]); !r) return r;
        }
        devices.finish();
        if (!by_device[0].empty()) {
            host_events_ = std::move(by_device[0]);
        }
        return {};
    }

    Result<void> writeEntries(const std::vector<uint64_t>& events) {
        w_.emptyList();
        w_.memoize();
        pickle::Batcher list(w_, false);
        for (uint64_t i : events) {
            if (++written_ % (1u << 20) == 0) {
                if (ctx_.cancelled()) return cancelledError();
                ctx_.report(written_, t_.events.size());
            }
            list.item();
            entry(i);
            w_.boundary();
        }
        list.finish();
        return {};
    }

    void entry(uint64_t i) {
        const Event& e = t_.events[i];
        // This event's attributes (sorted by event index).
        auto lo = std::lower_bound(t_.attributes.begin(), t_.attributes.end(), i,
                                   [](const EventAttribute& a, uint64_t v) { return a.event < v; });
        auto hi = lo;
        while (hi != t_.attributes.end() && hi->event == i) ++hi;
        std::string_view action = actionOf(e.kind);
        bool has_cc = false, has_um = false;
        for (auto a = lo; a != hi; ++a) {
            const std::string_view k = t_.string(a->key);
            if (k == "action" &&
                (e.kind == EventKind::Marker || e.kind == EventKind::FreeCompleted))
                action = t_.string(a->value);
            has_cc |= k == "compile_context";
            has_um |= k == "user_metadata";
        }
        w_.emptyDict();
        w_.memoize();
        w_.mark();
        key("action");
        key(action);
        if (e.kind != EventKind::Oom) {
            key("addr");
            w_.unsignedInteger(e.address);
        }
        key("size");
        w_.unsignedInteger(e.size);
        key("stream");
        w_.unsignedInteger(e.stream < t_.streams.size() ? t_.streams[e.stream] : 0);
        if (t_.metadata.time_base == TimeBase::Nanoseconds) {
            key("time_us");
            w_.integer(nanosToMicrosFloor(e.time));
        }
        key("frames");
        stack(e.stack);
        for (auto a = lo; a != hi; ++a) {
            const std::string_view k = t_.string(a->key);
            if (k == "action") continue;
            key(k);
            const std::string_view v = t_.string(a->value);
            if (k == "compile_context" || k == "user_metadata")
                w_.string(v);
            else if (k == "pool_id") {
                const nlohmann::ordered_json j = nlohmann::ordered_json::parse(v, nullptr, false);
                if (j.is_array() && j.size() == 2 && j[0].is_number_integer() &&
                    j[1].is_number_integer()) {
                    w_.unsignedInteger(j[0].get<uint64_t>());
                    w_.unsignedInteger(j[1].get<uint64_t>());
                    w_.tuple2();
                } else {
                    json(std::string(v));
                }
            } else
                json(std::string(v));
        }
        if (!has_cc && defaults_.is_object() && defaults_.contains("compile_context")) {
            key("compile_context");
            key("N/A");
        }
        if (!has_um && defaults_.is_object() && defaults_.contains("user_metadata")) {
            key("user_metadata");
            key("");
        }
        if (with_categories_) {
            const bool other = e.kind != EventKind::Alloc && e.kind != EventKind::FreeCompleted;
            key("category");
            key(unknown_on_other_kinds_ && other ? std::string_view("unknown")
                                                 : kCategoryNames[index(e.category)]);
        }
        w_.setItems();
    }

    void writeSettings(pickle::Batcher& top) {
        constexpr std::string_view prefix = "allocator_settings.";
        bool any = false;
        for (const auto& [k, v] : t_.metadata.properties) any |= k.starts_with(prefix);
        if (!any) return;
        top.item();
        key("allocator_settings");
        w_.emptyDict();
        w_.memoize();
        pickle::Batcher b(w_, true);
        for (const auto& [k, v] : t_.metadata.properties) {
            if (!k.starts_with(prefix)) continue;
            b.item();
            key(k.substr(prefix.size()));
            json(v);
        }
        b.finish();
    }

    struct AnnotationEntry {
        int64_t time_us = 0;
        StringId name;
        int16_t device = 0;
        AnnotationStage stage = AnnotationStage::Instant;
        uint32_t scope = kNone;  // a module scope's mark: index into Trace::modules.scopes
    };

    // The trace's annotations as they are, and its phases as START/END pairs
    // (PyTorch >= 2.5's record_function annotations) where the annotations do
    // not already say them: a snapshot's annotations came back as phases.
    std::vector<AnnotationEntry> annotationEntries() const {
        std::vector<AnnotationEntry> given;
        given.reserve(t_.annotations.size());
        for (const Annotation& a : t_.annotations)
            given.push_back({nanosToMicrosFloor(a.time), a.name, a.device, a.stage});
        std::vector<std::vector<AnnotationEntry>> sequences = phaseEntries();
        std::vector<AnnotationEntry> modules = moduleEntries();
        if (sequences.empty() && modules.empty()) return given;

        auto code = [](const AnnotationEntry& e) {
            return (uint64_t(e.name.value) << 24) ^ (uint64_t(uint16_t(e.device)) << 8) ^
                   uint64_t(e.stage) ^ (uint64_t(e.time_us) * 0x9E3779B97F4A7C15ull);
        };
        std::unordered_multimap<uint64_t, size_t> unclaimed;  // code -> index in given
        unclaimed.reserve(given.size());
        for (size_t i = 0; i < given.size(); ++i) unclaimed.emplace(code(given[i]), i);
        for (auto& seq : sequences) {
            size_t w = 0;
            for (const AnnotationEntry& e : seq) {
                bool said = false;
                auto [lo, hi] = unclaimed.equal_range(code(e));
                for (auto it = lo; it != hi; ++it) {
                    const AnnotationEntry& g = given[it->second];
                    if (g.time_us == e.time_us && g.name == e.name && g.device == e.device &&
                        g.stage == e.stage) {
                        unclaimed.erase(it);
                        said = true;
                        break;
                    }
                }
                if (!said) seq[w++] = e;
            }
            seq.resize(w);
        }
        // Merge by time, each sequence keeping its own order (a phase's END
        // rounded up can come after the next phase's START rounded down).
        sequences.insert(sequences.begin(), std::move(given));
        sequences.push_back(std::move(modules));
        std::vector<AnnotationEntry> out;
        std::vector<size_t> at(sequences.size(), 0);
        for (;;) {
            size_t best = SIZE_MAX;
            for (size_t s = 0; s < sequences.size(); ++s)
                if (at[s] < sequences[s].size() &&
                    (best == SIZE_MAX ||
                     sequences[s][at[s]].time_us < sequences[best][at[best]].time_us))
                    best = s;
            if (best == SIZE_MAX) break;
            out.push_back(sequences[best][at[best]++]);
        }
        return out;
    }

    // Recorded module scopes as START/END marks (module_annotations.h) in
    // time order, ENDs first at equal times: the importer pairs an END with
    // the latest START of its module, so a call that ends where the next one
    // starts stays two. Inferred modules are not written (memscope finds
    // them again), nor scopes of a trace without a clock.
    std::vector<AnnotationEntry> moduleEntries() const {
        std::vector<AnnotationEntry> out;
        const ModuleTable& table = t_.modules;
        if (table.source != ModuleSource::Recorded ||
            t_.metadata.time_base != TimeBase::Nanoseconds)
            return out;
        int16_t device = 0;
        for (int16_t d : t_.devices())
            if (d >= 0) {
                device = d;
                break;
            }
        for (uint32_t i = 0; i < table.scopes.size(); ++i) {
            const ModuleScope& s = table.scopes[i];
            if (s.end <= s.start || !table.module(s.module)) continue;
            out.push_back({nanosToMicrosFloor(s.start), {}, device, AnnotationStage::Start, i});
            out.push_back({nanosToMicrosCeil(s.end), {}, device, AnnotationStage::End, i});
        }
        std::stable_sort(
            out.begin(), out.end(), [](const AnnotationEntry& a, const AnnotationEntry& b) {
                if (a.time_us != b.time_us) return a.time_us < b.time_us;
                return a.stage == AnnotationStage::End && b.stage != AnnotationStage::End;
            });
        return out;
    }

    // One sequence per device: a depth-first walk of the phase tree, children
    // by start, START on the way in and END on the way out, so that nesting
    // survives equal times and the microsecond rounding. A phase of all
    // devices (-1) is written for every device of the trace.
    std::vector<std::vector<AnnotationEntry>> phaseEntries() const {
        std::vector<std::vector<AnnotationEntry>> out;
        const std::vector<Phase>& phases = t_.phases;
        if (phases.empty() || t_.metadata.time_base != TimeBase::Nanoseconds) return out;
        std::vector<int16_t> devices;
        for (int16_t d : t_.devices())
            if (d >= 0) devices.push_back(d);
        if (devices.empty()) devices.push_back(0);
        for (const Phase& p : phases)
            if (p.device >= 0) devices.push_back(p.device);
        std::sort(devices.begin(), devices.end());
        devices.erase(std::unique(devices.begin(), devices.end()), devices.end());

        std::vector<uint32_t> by_start(phases.size());
        for (uint32_t i = 0; i < phases.size(); ++i) by_start[i] = i;
        std::stable_sort(by_start.begin(), by_start.end(),
                         [&](uint32_t a, uint32_t b) { return phases[a].start < phases[b].start; });
        constexpr uint32_t kRoot = UINT32_MAX;
        std::vector<uint32_t> up(phases.size());  // nearest ancestor on the device
        std::vector<uint32_t> first_child, next_sibling, last_child;
        for (int16_t d : devices) {
            auto on = [&](uint32_t i) { return phases[i].device < 0 || phases[i].device == d; };
            for (uint32_t i = 0; i < phases.size(); ++i) {
                // A parent is an earlier phase; anything else is taken as no parent.
                const uint32_t p = phases[i].parent.value;
                up[i] = p == 0 || p > i ? kRoot : on(p - 1) ? p - 1 : up[p - 1];
            }
            // Children lists in start order; index phases.size() is the root.
            first_child.assign(phases.size() + 1, kRoot);
            last_child.assign(phases.size() + 1, kRoot);
            next_sibling.assign(phases.size(), kRoot);
            for (uint32_t i : by_start) {
                if (!on(i)) continue;
                const uint32_t parent = up[i] == kRoot ? uint32_t(phases.size()) : up[i];
                if (last_child[parent] == kRoot)
                    first_child[parent] = i;
                else
                    next_sibling[last_child[parent]] = i;
                last_child[parent] = i;
            }
            std::vector<AnnotationEntry> seq;
            std::vector<uint32_t> stack;
            for (uint32_t root = first_child[phases.size()]; root != kRoot;
                 root = next_sibling[root]) {
                stack.push_back(root);
                seq.push_back({nanosToMicrosFloor(phases[root].start), phases[root].name, d,
                               AnnotationStage::Start});
                std::vector<uint32_t> cursor{first_child[root]};
                while (!stack.empty()) {
                    const uint32_t child = cursor.back();
                    if (child == kRoot) {
                        const Phase& p = phases[stack.back()];
                        seq.push_back({nanosToMicrosCeil(std::max(p.end, p.start)), p.name, d,
                                       AnnotationStage::End});
                        stack.pop_back();
                        cursor.pop_back();
                        if (!cursor.empty()) cursor.back() = next_sibling[cursor.back()];
                        continue;
                    }
                    stack.push_back(child);
                    seq.push_back({nanosToMicrosFloor(phases[child].start), phases[child].name, d,
                                   AnnotationStage::Start});
                    cursor.push_back(first_child[child]);
                }
            }
            out.push_back(std::move(seq));
        }
        return out;
    }

    void writeAnnotations(const std::vector<AnnotationEntry>& entries) {
        w_.emptyList();
        w_.memoize();
        pickle::Batcher list(w_, false);
        for (const AnnotationEntry& a : entries) {
            list.item();
            w_.emptyDict();
            w_.mark();
            key("stage");
            key(a.stage == AnnotationStage::Start ? "START"
                : a.stage == AnnotationStage::End ? "END"
                                                  : "INSTANT");
            key("name");
            if (a.scope == kNone) {
                interned(a.name);
            } else {
                moduleName(a.scope);
            }
            key("device");
            w_.integer(a.device);
            key("time_us");
            w_.integer(a.time_us);
            if (a.scope != kNone) moduleKeys(t_.modules.scopes[a.scope]);
            w_.setItems();
            w_.boundary();
        }
        list.finish();
    }

    // A module's readable path as the entry's name, once per module.
    void moduleName(uint32_t scope) {
        const ModuleId id = t_.modules.scopes[scope].module;
        if (id.value >= module_memo_.size()) module_memo_.resize(id.value + 1, kNone);
        if (module_memo_[id.value] != kNone) return w_.get(module_memo_[id.value]);
        w_.string(modulePath(t_, id));
        module_memo_[id.value] = w_.memoize();
    }
    void moduleKeys(const ModuleScope& s) {
        const Module& m = *t_.modules.module(s.module);
        key(kModuleKindKey);
        key(toString(s.kind));
        key(kModulePathKey);
        interned(m.path);
        key(kModuleRootKey);
        interned(m.root);
        if (!m.type.isNull()) {
            key(kModuleTypeKey);
            interned(m.type);
        }
    }

    static constexpr uint32_t kNone = UINT32_MAX;
    const Trace& t_;
    pickle::Writer w_;
    const TaskContext& ctx_;
    struct Hash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> keys_;
    std::vector<uint64_t> host_events_;  // device -1: written as 'host_traces'
    std::vector<uint32_t> string_memo_, frame_memo_, stack_memo_, module_memo_;
    nlohmann::ordered_json defaults_;
    bool with_categories_ = false;
    bool unknown_on_other_kinds_ = false;
    uint64_t written_ = 0;
};

}  // namespace

namespace {

Result<void> writeFile(const Trace& trace, const std::string& path, const TaskContext& ctx) {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(std::fopen(path.c_str(), "wb"),
                                                        &std::fclose);
    if (!out) return makeError("cannot write " + path + ": " + std::strerror(errno));
    std::setvbuf(out.get(), nullptr, _IOFBF, 1 << 20);
    SnapshotWriter writer(trace, out.get(), ctx);
    if (auto r = writer.write(); !r) return makeError("cannot write " + path + ": " + r.message());
    if (std::fclose(out.release()) != 0)
        return makeError("cannot write " + path + ": " + std::strerror(errno));
    return {};
}

}  // namespace

// Through a temporary file renamed into place: a failed write (a full disk, a
// cancel) leaves an existing PATH as it was and no partial file.
Result<void> exportFile(const Trace& trace, const std::string& path, const TaskContext& ctx) {
    return writeFileReplacing(path,
                              [&](const std::string& temp) { return writeFile(trace, temp, ctx); });
}

}  // namespace memscope::pytorch_snapshot
