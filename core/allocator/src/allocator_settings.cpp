#include "memscope/allocator/allocator_settings.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace memscope {

namespace {

constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kMinBlockSize = 512;
// max_split_size_mb must exceed the large pool's 20 MiB buffer (PyTorch
// refuses less), and is capped so that bytes cannot overflow.
constexpr uint64_t kMinMaxSplitMb = 20;
constexpr uint64_t kMaxMaxSplitMb = uint64_t(1) << 40;

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

std::optional<uint64_t> parseUnsigned(std::string_view s) {
    s = trim(s);
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
}

std::optional<double> parseDouble(std::string_view s) {
    s = trim(s);
    double v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty() || !std::isfinite(v))
        return std::nullopt;
    return v;
}

std::optional<bool> parseBool(std::string_view s) {
    s = trim(s);
    if (s == "True" || s == "true" || s == "1") return true;
    if (s == "False" || s == "false" || s == "0") return false;
    return std::nullopt;
}

// The size interval of a power-of-two MiB boundary (1 -> 0, 2 -> 1, ...).
size_t intervalOfMb(uint64_t mb) {
    return std::min<size_t>(size_t(std::bit_width(mb) - 1), kRoundupIntervals - 1);
}

bool validDivisions(uint64_t d) {
    return d <= 1 || (std::has_single_bit(d) && d <= (uint64_t(1) << 20));
}

// "4", or "[256:1,512:2,>:4]".
Result<std::array<uint32_t, kRoundupIntervals>> parseDivisions(
    std::string_view text, std::array<uint32_t, kRoundupIntervals> current) {
    text = trim(text);
    auto bad = [&](std::string_view why) {
        return makeError("roundup_power2_divisions:" + std::string(text) + ": " + std::string(why));
    };
    if (text.empty() || text.front() != '[') {
        const auto v = parseUnsigned(text);
        if (!v || !validDivisions(*v)) return bad("expected a power of two, or [MB:N,...,>:N]");
        current.fill(uint32_t(*v));
        return current;
    }
    if (text.back() != ']') return bad("missing ']'");
    std::string_view body = text.substr(1, text.size() - 2);
    size_t last = 0;
    bool first = true;
    while (!body.empty()) {
        const size_t comma = body.find(',');
        const std::string_view item = body.substr(0, comma);
        body = comma == std::string_view::npos ? std::string_view{} : body.substr(comma + 1);
        const size_t colon = item.find(':');
        if (colon == std::string_view::npos) return bad("expected MB:N in the list");
        const std::string_view key = trim(item.substr(0, colon));
        const auto v = parseUnsigned(item.substr(colon + 1));
        if (!v || !validDivisions(*v)) return bad("divisions must be powers of two");
        if (key == ">") {
            std::fill(current.begin() + std::ptrdiff_t(first ? 0 : last + 1), current.end(),
                      uint32_t(*v));
        } else {
            const auto mb = parseUnsigned(key);
            if (!mb || *mb == 0 || !std::has_single_bit(*mb))
                return bad("interval sizes are powers of two in MB");
            const size_t index = intervalOfMb(*mb);
            if (first)
                std::fill(current.begin(), current.begin() + std::ptrdiff_t(index), uint32_t(*v));
            current[index] = uint32_t(*v);
            last = index;
        }
        first = false;
    }
    return current;
}

// The JSON object the snapshot importer keeps: {"1": 0, "2": 0, ...}.
void readRecordedDivisions(std::string_view json, std::array<uint32_t, kRoundupIntervals>& out) {
    size_t pos = 0;
    while ((pos = json.find('"', pos)) != std::string_view::npos) {
        const size_t close = json.find('"', pos + 1);
        if (close == std::string_view::npos) return;
        const auto mb = parseUnsigned(json.substr(pos + 1, close - pos - 1));
        const size_t colon = json.find(':', close);
        if (colon == std::string_view::npos) return;
        size_t end = json.find_first_of(",}", colon);
        if (end == std::string_view::npos) end = json.size();
        const auto v = parseUnsigned(json.substr(colon + 1, end - colon - 1));
        if (mb && *mb > 0 && std::has_single_bit(*mb) && v && validDivisions(*v))
            out[intervalOfMb(*mb)] = uint32_t(*v);
        pos = end;
    }
}

std::string_view unquote(std::string_view s) {
    s = trim(s);
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
    return s;
}

}  // namespace

ResolvedAllocatorSettings allocatorSettingsOf(const Trace& trace) {
    ResolvedAllocatorSettings out;
    const TraceMetadata& md = trace.metadata;
    bool any = false;
    if (const std::string* v = md.property("allocator_settings.max_split_size")) {
        any = true;
        // -1 (or SIZE_MAX) = unlimited; else bytes, held to what PyTorch accepts.
        if (const auto bytes = parseUnsigned(*v);
            bytes && *bytes > kMinMaxSplitMb * kMiB && *bytes / kMiB <= kMaxMaxSplitMb)
            out.settings.max_split_size = *bytes;
    }
    if (const std::string* v = md.property("allocator_settings.expandable_segments")) {
        any = true;
        out.settings.expandable_segments = parseBool(*v).value_or(false);
    }
    if (const std::string* v = md.property("allocator_settings.garbage_collection_threshold")) {
        any = true;
        if (const auto f = parseDouble(*v); f && *f > 0 && *f < 1)
            out.settings.garbage_collection_threshold = *f;
    }
    if (const std::string* v = md.property("allocator_settings.roundup_power2_divisions")) {
        any = true;
        readRecordedDivisions(*v, out.settings.roundup_power2_divisions);
    }
    if (const std::string* v = md.property("allocator_settings.PYTORCH_CUDA_ALLOC_CONF")) {
        any = true;
        // Older snapshots may record only the variable; the parsed fields, where
        // present, already hold the same. A variable PyTorch itself refused
        // would not have run, so a bad one is ignored rather than reported.
        if (!md.property("allocator_settings.expandable_segments"))
            if (auto applied = applyAllocatorConf(out.settings, unquote(*v)))
                out.settings = *applied;
    }
    if (any) out.source = AllocatorSettingsSource::Recorded;
    return out;
}

Result<AllocatorSettings> applyAllocatorConf(AllocatorSettings base, std::string_view conf) {
    // Split at commas outside [...].
    size_t start = 0, depth = 0;
    for (size_t i = 0; i <= conf.size(); ++i) {
        const char c = i < conf.size() ? conf[i] : ',';
        if (c == '[') ++depth;
        if (c == ']' && depth > 0) --depth;
        if (c != ',' || depth > 0) continue;
        const std::string_view item = trim(conf.substr(start, i - start));
        start = i + 1;
        if (item.empty()) continue;
        const size_t colon = item.find(':');
        if (colon == std::string_view::npos)
            return makeError("allocator setting '" + std::string(item) +
                             "': expected key:value, as in PYTORCH_CUDA_ALLOC_CONF");
        const std::string_view key = trim(item.substr(0, colon));
        const std::string_view value = trim(item.substr(colon + 1));
        const auto bad = [&](std::string_view expect) {
            return makeError("allocator setting " + std::string(key) + ":" + std::string(value) +
                             ": " + std::string(expect));
        };
        if (key == "expandable_segments") {
            const auto b = parseBool(value);
            if (!b) return bad("expected True or False");
            base.expandable_segments = *b;
        } else if (key == "max_split_size_mb") {
            const auto mb = parseUnsigned(value);
            if (!mb || *mb <= kMinMaxSplitMb || *mb > kMaxMaxSplitMb)
                return bad("expected a whole number of MiB above 20");
            base.max_split_size = *mb * kMiB;
        } else if (key == "roundup_power2_divisions") {
            auto d = parseDivisions(value, base.roundup_power2_divisions);
            if (!d) return d.error();
            base.roundup_power2_divisions = *d;
        } else if (key == "garbage_collection_threshold") {
            const auto f = parseDouble(value);
            if (!f || *f <= 0 || *f >= 1) return bad("expected a fraction between 0 and 1");
            base.garbage_collection_threshold = *f;
        } else if (key == "backend" || key == "release_lock_on_cudamalloc" ||
                   key == "pinned_use_cuda_host_register" || key == "pinned_num_register_threads" ||
                   key == "pinned_use_background_threads" ||
                   key == "graph_capture_record_stream_reuse" ||
                   key == "max_non_split_rounding_mb") {
            // Known to PyTorch; no effect on where blocks go in this model.
        } else {
            return makeError("allocator setting '" + std::string(key) +
                             "' is unknown: expandable_segments, max_split_size_mb, "
                             "roundup_power2_divisions and garbage_collection_threshold are "
                             "modelled");
        }
    }
    if (depth > 0)
        return makeError("allocator settings " + std::string(conf) + ": '[' without ']'");
    return base;
}

std::string toAllocatorConf(const AllocatorSettings& s) {
    std::string out;
    auto add = [&](const std::string& item) {
        if (!out.empty()) out += ',';
        out += item;
    };
    if (s.expandable_segments) add("expandable_segments:True");
    if (s.max_split_size != AllocatorSettings::kNoMaxSplit)
        add("max_split_size_mb:" + std::to_string(s.max_split_size / kMiB));
    const auto& d = s.roundup_power2_divisions;
    if (std::any_of(d.begin(), d.end(), [](uint32_t v) { return v > 1; })) {
        if (std::all_of(d.begin(), d.end(), [&](uint32_t v) { return v == d[0]; })) {
            add("roundup_power2_divisions:" + std::to_string(d[0]));
        } else {
            std::string list = "[";
            for (size_t i = 0; i < d.size(); ++i) {
                if (i > 0) list += ',';
                list += (i + 1 == d.size() ? std::string(">") : std::to_string(uint64_t(1) << i)) +
                        ":" + std::to_string(d[i]);
            }
            add("roundup_power2_divisions:" + list + "]");
        }
    }
    if (s.garbage_collection_threshold > 0) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", s.garbage_collection_threshold);
        add(std::string("garbage_collection_threshold:") + buf);
    }
    return out;
}

std::string describeAllocatorSettings(const AllocatorSettings& settings) {
    const std::string conf = toAllocatorConf(settings);
    return conf.empty() ? "defaults" : conf;
}

uint64_t roundAllocationSize(const AllocatorSettings& settings, uint64_t size) {
    if (size < kMinBlockSize) return kMinBlockSize;
    // PyTorch's intervals: up to 2 MiB is interval 0, then one per power of two.
    const int log_size = std::bit_width(size) - 1;
    const size_t index =
        std::min<size_t>(log_size > 20 ? size_t(log_size - 20) : 0, kRoundupIntervals - 1);
    const uint64_t divisions = settings.roundup_power2_divisions[index];
    if (divisions > 1 && size > kMinBlockSize * divisions) {
        if (std::has_single_bit(size)) return size;
        const uint64_t floor = std::bit_floor(size);
        const uint64_t step = floor >> (std::bit_width(divisions) - 1);
        if (step == 0) return floor << 1;
        const uint64_t rounded = size & ~(step - 1);
        return rounded == size ? size : rounded + step;
    }
    const uint64_t blocks = size / kMinBlockSize + (size % kMinBlockSize != 0);
    return blocks > UINT64_MAX / kMinBlockSize ? UINT64_MAX & ~(kMinBlockSize - 1)
                                               : blocks * kMinBlockSize;
}

}  // namespace memscope
