// Streams a chrome trace through RapidJSON's SAX reader and keeps only the
// "[memory]" events: memory stays proportional to those, not to the file.
#include <rapidjson/reader.h>

#include <filesystem>
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
    Pid,
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
            const Pending before = ev_;
            ev_ = Pending{};
            ev_.memory = before.memory;
            ev_.has_ts = before.has_ts;
            ev_.ts = before.ts;
            ev_.pid = before.pid;
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
            else if (k == "pid")
                field_ = Field::Pid;
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
        if (field_ == Field::Name)
            ev_.memory = std::string_view(s, n) == "[memory]";
        else if (depth_ == 1 && (field_ == Field::Other))
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
        return out;
    }
    const std::string& error() const { return error_; }
    uint64_t memoryEvents() const { return memory_events_; }

private:
    struct Pending {
        bool memory = false;
        bool bytes_seen = false;
        std::string ts_text, bytes_text;
        bool has_ts = false, has_addr = false, has_bytes = false, has_reserved = false;
        int64_t ts = 0, bytes = 0, device_type = 1, device_id = 0, pid = -1;
        uint64_t addr = 0, reserved = 0;
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
            case Field::Pid:
                parseInt(s, n, ev_.pid);
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
        if (!ev_.memory) return true;
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
        if (ev_.has_reserved) {
            // Kept only where it changes: it is the reserved curve, not per-event data.
            auto [it, fresh] = last_reserved_.try_emplace(e.device, ev_.reserved);
            if (fresh || it->second != ev_.reserved) {
                it->second = ev_.reserved;
                trace_.attributes.push_back({trace_.events.size(), key_total_reserved_,
                                             trace_.internString(std::to_string(ev_.reserved))});
            }
        }
        trace_.events.push_back(e);
        return true;
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

    Trace& trace_;
    json_input::Stream* stream_ = nullptr;
    Drops no_ts_, bad_bytes_, cut_properties_, dropped_properties_;
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
