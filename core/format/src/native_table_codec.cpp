// Table chunk payloads. Every table chunk starts with the id of its first item,
// so a reader can tell that nothing was skipped; the item encodings are listed
// in docs/FORMAT.md. Decoders parse a whole chunk before applying any of it.
#include "native_table_codec.h"

#include <algorithm>
#include <bit>
#include <string_view>

#include "native_bytes.h"

namespace memscope::native {
namespace {

// Longer text is cut: one item must fit a chunk (kMaxRawChunkBytes).
constexpr size_t kMaxTextBytes = 16u << 20;

void putText(ByteWriter& w, std::string_view s) {
    w.text(s.substr(0, kMaxTextBytes));
}

// Emits items [0, n) in chunks of about kTargetChunkBytes: `first` is the id of
// item 0 (written at the start of each chunk when `with_first_id`).
template <typename PutItem>
void emitSplit(ChunkType type, size_t n, uint64_t first, bool with_first_id, PutItem put,
               const ChunkEmitter& emit) {
    size_t i = 0;
    while (i < n) {
        std::vector<unsigned char> buf;
        ByteWriter w(buf);
        if (with_first_id) w.varint(first + i);
        uint32_t count = 0;
        while (i < n && (count == 0 || buf.size() < kTargetChunkBytes)) {
            put(w, i);
            ++i;
            ++count;
        }
        emit(type, count, buf);
    }
}

std::string checkFirst(ByteReader& r, uint64_t expected, const char* what) {
    const uint64_t first = r.varint();
    if (r.failed()) return std::string(what) + " chunk cut short";
    if (first != expected)
        return std::string(what) + " chunk starts at id " + std::to_string(first) + ", expected " +
               std::to_string(expected);
    return {};
}

// Every item takes at least one byte, so a count larger than the payload is a lie.
bool plausibleCount(uint32_t count, const ByteReader& r) {
    return count <= r.remaining();
}

bool fitsInt32(int64_t v) {
    return v >= INT32_MIN && v <= INT32_MAX;
}
bool fitsInt16(int64_t v) {
    return v >= INT16_MIN && v <= INT16_MAX;
}

std::string decodeStrings(uint32_t count, ByteReader& r, Trace& trace) {
    if (auto e = checkFirst(r, trace.strings.size(), "strings"); !e.empty()) return e;
    if (!plausibleCount(count, r)) return "strings count larger than the chunk";
    std::vector<std::string_view> texts;
    texts.reserve(count);
    for (uint32_t i = 0; i < count; ++i) texts.push_back(r.text());
    if (r.failed()) return "strings chunk cut short";
    for (std::string_view t : texts) {
        const size_t expected = trace.strings.size();
        if (trace.internString(t).value != expected) return "duplicate string in strings chunk";
    }
    return {};
}

std::string decodeFrames(uint32_t count, ByteReader& r, Trace& trace) {
    if (auto e = checkFirst(r, trace.frames().size() + 1, "frames"); !e.empty()) return e;
    if (!plausibleCount(count, r)) return "frames count larger than the chunk";
    const uint64_t strings = trace.strings.size();
    std::vector<Frame> frames;
    frames.reserve(count);
    for (uint32_t i = 0; i < count; ++i) {
        Frame f;
        const uint64_t function = r.varint();
        const uint64_t file = r.varint();
        const uint64_t line = r.varintAtMost(UINT32_MAX);
        if (r.failed()) return "frames chunk cut short";
        if (function >= strings || file >= strings) return "frame refers to an unknown string";
        f.function = StringId(static_cast<uint32_t>(function));
        f.file = StringId(static_cast<uint32_t>(file));
        f.line = static_cast<uint32_t>(line);
        frames.push_back(f);
    }
    for (const Frame& f : frames) {
        const size_t expected = trace.frames().size() + 1;
        if (trace.internFrame(f).value != expected) return "duplicate frame in frames chunk";
    }
    return {};
}

std::string decodeStacks(uint32_t count, ByteReader& r, Trace& trace) {
    if (auto e = checkFirst(r, trace.stackCount(), "stacks"); !e.empty()) return e;
    if (!plausibleCount(count, r)) return "stacks count larger than the chunk";
    const uint64_t frame_count = trace.frames().size();
    std::vector<uint32_t> sizes;
    std::vector<FrameId> frames;
    sizes.reserve(count);
    for (uint32_t i = 0; i < count; ++i) {
        const uint64_t depth = r.varint();
        if (r.failed() || depth == 0 || depth > r.remaining()) return "bad stack depth";
        sizes.push_back(static_cast<uint32_t>(depth));
        for (uint64_t k = 0; k < depth; ++k) {
            const uint64_t f = r.varint();
            if (r.failed()) return "stacks chunk cut short";
            if (f == 0 || f > frame_count) return "stack refers to an unknown frame";
            frames.emplace_back(static_cast<uint32_t>(f));
        }
    }
    size_t offset = 0;
    for (uint32_t depth : sizes) {
        const size_t expected = trace.stackCount();
        const StackId id =
            trace.internStack(std::span<const FrameId>(frames).subspan(offset, depth));
        if (id.value != expected) return "duplicate stack in stacks chunk";
        offset += depth;
    }
    return {};
}

std::string decodeStreams(uint32_t count, ByteReader& r, Trace& trace) {
    if (auto e = checkFirst(r, trace.streams.size(), "streams"); !e.empty()) return e;
    if (!plausibleCount(count, r)) return "streams count larger than the chunk";
    std::vector<uint64_t> values;
    values.reserve(count);
    for (uint32_t i = 0; i < count; ++i) values.push_back(r.varint());
    if (r.failed()) return "streams chunk cut short";
    for (uint64_t v : values) {
        const size_t expected = trace.streams.size();
        if (trace.internStream(v) != expected) return "duplicate stream in streams chunk";
    }
    return {};
}

std::string decodePhases(uint32_t count, ByteReader& r, Trace& trace) {
    if (auto e = checkFirst(r, trace.phases.size() + 1, "phases"); !e.empty()) return e;
    if (!plausibleCount(count, r)) return "phases count larger than the chunk";
    const uint64_t strings = trace.strings.size();
    // Straight into the trace (a copy through a chunk's own vector was most
    // of the time: fresh pages twice), cut back if the chunk fails.
    const size_t before = trace.phases.size();
    if (trace.phases.capacity() - before < count)
        trace.phases.reserve(std::max<size_t>(before + count, 2 * trace.phases.capacity()));
    const auto fail = [&](const char* why) {
        trace.phases.resize(before);
        return std::string(why);
    };
    for (uint32_t i = 0; i < count; ++i) {
        const uint64_t own_id = before + 1 + i;
        const uint64_t name = r.varint();
        const uint8_t kind = r.byte();
        const uint64_t parent = r.varint();
        const int64_t step = r.svarint();
        const int64_t block = r.svarint();
        const int64_t device = r.svarint();
        const auto start = static_cast<uint64_t>(r.svarint());
        const auto length = static_cast<uint64_t>(r.svarint());
        if (r.failed()) return fail("phases chunk cut short");
        if (name >= strings) return fail("phase refers to an unknown string");
        if (kind > static_cast<uint8_t>(PhaseKind::Range)) return fail("unknown phase kind");
        if (parent >= own_id) return fail("phase parent is not an earlier phase");
        if (!fitsInt32(step) || !fitsInt32(block) || !fitsInt16(device))
            return fail("phase field out of range");
        Phase& p = trace.phases.emplace_back();
        p.name = StringId(static_cast<uint32_t>(name));
        p.kind = static_cast<PhaseKind>(kind);
        p.parent = PhaseId(static_cast<uint32_t>(parent));
        p.step = static_cast<int32_t>(step);
        p.block = static_cast<int32_t>(block);
        p.device = static_cast<int16_t>(device);
        p.start = static_cast<int64_t>(start);
        p.end = static_cast<int64_t>(start + length);  // wraps, as the writer's subtraction did
    }
    return {};
}

std::string decodePhaseEnds(uint32_t count, ByteReader& r, Trace& trace) {
    if (!plausibleCount(count, r)) return "phase ends count larger than the chunk";
    std::vector<std::pair<uint32_t, int64_t>> ends;
    ends.reserve(count);
    for (uint32_t i = 0; i < count; ++i) {
        const uint64_t id = r.varint();
        const int64_t end = r.svarint();
        if (r.failed()) return "phase ends chunk cut short";
        if (id == 0 || id > trace.phases.size()) return "phase end refers to an unknown phase";
        ends.emplace_back(static_cast<uint32_t>(id), end);
    }
    for (auto [id, end] : ends) trace.phases[id - 1].end = end;
    return {};
}

std::string decodeModules(uint32_t count, ByteReader& r, Trace& trace) {
    if (auto e = checkFirst(r, trace.modules.modules.size() + 1, "modules"); !e.empty()) return e;
    const uint8_t source = r.byte();
    if (r.failed()) return "modules chunk cut short";
    if (source > static_cast<uint8_t>(ModuleSource::Inferred)) return "unknown module source";
    if (!plausibleCount(count, r)) return "modules count larger than the chunk";
    const uint64_t strings = trace.strings.size();
    std::vector<Module> modules;
    modules.reserve(count);
    for (uint32_t i = 0; i < count; ++i) {
        const uint64_t own_id = trace.modules.modules.size() + 1 + i;
        const uint64_t path = r.varint(), root = r.varint(), type = r.varint(), parent = r.varint();
        if (r.failed()) return "modules chunk cut short";
        if (path >= strings || root >= strings || type >= strings)
            return "module refers to an unknown string";
        if (parent >= own_id) return "module parent is not an earlier module";
        Module m;
        m.path = StringId(static_cast<uint32_t>(path));
        m.root = StringId(static_cast<uint32_t>(root));
        m.type = StringId(static_cast<uint32_t>(type));
        m.parent = ModuleId(static_cast<uint32_t>(parent));
        modules.push_back(m);
    }
    trace.modules.source = static_cast<ModuleSource>(source);
    for (const Module& m : modules) trace.modules.add(m);  // depth follows the parent
    return {};
}

std::string decodeModuleScopes(uint32_t count, ByteReader& r, Trace& trace) {
    if (!plausibleCount(count, r)) return "module scopes count larger than the chunk";
    std::vector<ModuleScope> scopes;
    scopes.reserve(count);
    uint64_t prev = 0;
    for (uint32_t i = 0; i < count; ++i) {
        const uint64_t start = prev + static_cast<uint64_t>(r.svarint());
        const auto length = static_cast<uint64_t>(r.svarint());
        const uint64_t module = r.varint();
        const uint8_t kind = r.byte();
        if (r.failed()) return "module scopes chunk cut short";
        if (module == 0 || module > trace.modules.modules.size())
            return "module scope refers to an unknown module";
        if (kind >= kModuleScopeKindCount) return "unknown module scope kind";
        prev = start;
        ModuleScope s;
        s.start = static_cast<int64_t>(start);
        s.end = static_cast<int64_t>(start + length);  // wraps, as the writer's subtraction did
        s.module = ModuleId(static_cast<uint32_t>(module));
        s.kind = static_cast<ModuleScopeKind>(kind);
        scopes.push_back(s);
    }
    trace.modules.scopes.insert(trace.modules.scopes.end(), scopes.begin(), scopes.end());
    return {};
}

// u8 source (1 recorded), then per scope: svarint start delta, svarint
// length, varint name (a string id), varint depth (clamped to kMaxOpDepth).
std::string decodeOpScopes(uint32_t count, ByteReader& r, Trace& trace) {
    const uint8_t source = r.byte();
    if (r.failed()) return "op scopes chunk cut short";
    if (source != static_cast<uint8_t>(OpSource::Recorded)) return "unknown op source";
    if (!plausibleCount(count, r)) return "op scopes count larger than the chunk";
    const uint64_t strings = trace.strings.size();
    std::vector<OpScope> scopes;
    scopes.reserve(count);
    uint64_t prev = 0;
    for (uint32_t i = 0; i < count; ++i) {
        const uint64_t start = prev + static_cast<uint64_t>(r.svarint());
        const auto length = static_cast<uint64_t>(r.svarint());
        const uint64_t name = r.varint();
        const uint64_t depth = r.varint();
        if (r.failed()) return "op scopes chunk cut short";
        if (name >= strings) return "op scope names an unknown string";
        prev = start;
        OpScope s;
        s.start = static_cast<int64_t>(start);
        s.end = static_cast<int64_t>(start + length);  // wraps, as the writer's subtraction did
        s.name = StringId(static_cast<uint32_t>(name));
        s.depth = static_cast<uint16_t>(std::min<uint64_t>(depth, kMaxOpDepth));
        scopes.push_back(s);
    }
    trace.ops.source = OpSource::Recorded;
    trace.ops.scopes.insert(trace.ops.scopes.end(), scopes.begin(), scopes.end());
    return {};
}

std::string decodeAnnotations(uint32_t count, ByteReader& r, Trace& trace) {
    if (!plausibleCount(count, r)) return "annotations count larger than the chunk";
    const uint64_t strings = trace.strings.size();
    std::vector<Annotation> annotations;
    annotations.reserve(count);
    uint64_t time = 0;
    for (uint32_t i = 0; i < count; ++i) {
        time += static_cast<uint64_t>(r.svarint());
        const uint64_t name = r.varint();
        const int64_t device = r.svarint();
        const uint8_t stage = r.byte();
        if (r.failed()) return "annotations chunk cut short";
        if (name >= strings) return "annotation refers to an unknown string";
        if (!fitsInt16(device)) return "annotation device out of range";
        if (stage > static_cast<uint8_t>(AnnotationStage::Instant))
            return "unknown annotation stage";
        annotations.push_back({static_cast<int64_t>(time), StringId(static_cast<uint32_t>(name)),
                               static_cast<int16_t>(device), static_cast<AnnotationStage>(stage)});
    }
    trace.annotations.insert(trace.annotations.end(), annotations.begin(), annotations.end());
    return {};
}

std::string decodeAttributes(uint32_t count, ByteReader& r, uint64_t event_count, Trace& trace) {
    if (!plausibleCount(count, r)) return "attributes count larger than the chunk";
    const uint64_t strings = trace.strings.size();
    std::vector<EventAttribute> attributes;
    attributes.reserve(count);
    for (uint32_t i = 0; i < count; ++i) {
        const uint64_t event = r.varint();
        const uint64_t key = r.varint();
        const uint64_t value = r.varint();
        if (r.failed()) return "attributes chunk cut short";
        if (event >= event_count) return "attribute refers to an unknown event";
        if (key >= strings || value >= strings) return "attribute refers to an unknown string";
        attributes.push_back(
            {event, StringId(static_cast<uint32_t>(key)), StringId(static_cast<uint32_t>(value))});
    }
    trace.attributes.insert(trace.attributes.end(), attributes.begin(), attributes.end());
    return {};
}

std::string decodeMetadata(uint32_t count, ByteReader& r, Trace& trace) {
    TraceMetadata m;
    m.source_format = std::string(r.text());
    m.name = std::string(r.text());
    const uint8_t time_base = r.byte();
    m.pid = r.svarint();
    const int64_t rank = r.svarint();
    const uint64_t n = r.varint();
    if (r.failed()) return "metadata chunk cut short";
    if (time_base > static_cast<uint8_t>(TimeBase::EventIndex)) return "unknown time base";
    if (!fitsInt32(rank)) return "rank out of range";
    if (n != count || n > r.remaining()) return "bad property count";
    m.time_base = static_cast<TimeBase>(time_base);
    m.rank = static_cast<int32_t>(rank);
    m.properties.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
        std::string key(r.text());
        std::string value(r.text());
        if (r.failed()) return "metadata chunk cut short";
        m.properties.emplace_back(std::move(key), std::move(value));
    }
    trace.metadata = std::move(m);  // the last metadata chunk wins
    return {};
}

std::string decodeAllocatorState(uint32_t count, ByteReader& r, Trace& trace) {
    const uint64_t segment_count = r.varint();
    const uint64_t block_count = r.varint();
    if (r.failed()) return "allocator state cut short";
    // A segment takes at least 10 bytes, a block at least 5.
    if (segment_count != count || segment_count > r.remaining() / 10 ||
        block_count > r.remaining() / 5)
        return "allocator state counts larger than the chunk";
    const uint64_t stacks = trace.stackCount();
    AllocatorState state;
    state.segments.reserve(segment_count);
    state.blocks.reserve(block_count);
    for (uint64_t i = 0; i < segment_count; ++i) {
        Segment s;
        s.address = r.varint();
        s.total_size = r.varint();
        s.stream = r.varint();
        s.pool_id_first = r.varint();
        s.pool_id_second = r.varint();
        const uint64_t stack = r.varint();
        const uint64_t first_block = r.varint();
        const uint64_t blocks = r.varint();
        const int64_t device = r.svarint();
        const uint8_t flags = r.byte();
        if (r.failed()) return "allocator state cut short";
        if (stack >= stacks) return "segment refers to an unknown stack";
        if (first_block > block_count || blocks > block_count - first_block)
            return "segment's blocks out of range";
        if (!fitsInt16(device)) return "segment device out of range";
        s.stack = StackId(static_cast<uint32_t>(stack));
        s.first_block = static_cast<uint32_t>(first_block);
        s.block_count = static_cast<uint32_t>(blocks);
        s.device = static_cast<int16_t>(device);
        s.expandable = flags & 1;
        s.large = flags & 2;
        state.segments.push_back(s);
    }
    for (uint64_t i = 0; i < block_count; ++i) {
        Block b;
        b.address = r.varint();
        b.size = r.varint();
        b.requested_size = r.varint();
        const uint64_t stack = r.varint();
        const uint8_t block_state = r.byte();
        if (r.failed()) return "allocator state cut short";
        if (stack >= stacks) return "block refers to an unknown stack";
        if (block_state > static_cast<uint8_t>(BlockState::Inactive)) return "unknown block state";
        b.stack = StackId(static_cast<uint32_t>(stack));
        b.state = static_cast<BlockState>(block_state);
        state.blocks.push_back(b);
    }
    trace.allocator_state = std::move(state);  // the last one wins
    return {};
}

// Doubles travel as their IEEE 754 bits, little-endian.
void putDouble(ByteWriter& w, double v) {
    unsigned char b[8];
    storeLE64(b, std::bit_cast<uint64_t>(v));
    w.bytes(b, 8);
}
double getDouble(ByteReader& r) {
    ByteReader b = r.sub(8);
    if (r.failed()) return 0;
    return std::bit_cast<double>(loadLE64(b.position()));
}

// Chunk 15: the predicted run's provenance, written whole (docs/FORMAT.md).
void encodePrediction(const Prediction& p, std::vector<unsigned char>& buf) {
    ByteWriter w(buf);
    for (const std::string* text : {&p.source, &p.measured_policy, &p.policy, &p.layers_source})
        putText(w, *text);
    w.varint(p.assumptions.size());
    for (const std::string& a : p.assumptions) putText(w, a);
}

std::string decodePrediction(uint32_t count, ByteReader& r, Trace& trace) {
    Prediction p;
    for (std::string* text : {&p.source, &p.measured_policy, &p.policy, &p.layers_source})
        *text = std::string(r.text());
    const uint64_t n = r.varint();
    // Each assumption takes at least its length's byte.
    if (r.failed() || n != count || n > r.remaining()) return "bad assumption count";
    p.assumptions.reserve(n);
    for (uint64_t i = 0; i < n; ++i) p.assumptions.emplace_back(r.text());
    if (r.failed()) return "prediction cut short";
    trace.prediction = std::move(p);  // the last one wins
    return {};
}

// Chunk 16: a rank's digest, written whole (docs/FORMAT.md). Optional values
// are a presence byte, then the value.
void encodeDigest(const DigestSection& d, std::vector<unsigned char>& buf) {
    ByteWriter w(buf);
    w.varint(d.version);
    putText(w, d.source);
    w.svarint(d.device);
    for (int64_t v : {d.start, d.end, d.peak_bytes, d.peak_time}) w.svarint(v);
    w.byte(d.peak_phase ? uint8_t(1 + index(*d.peak_phase)) : 0);
    w.svarint(d.peak_step);
    w.byte(d.peak_reserved_bytes ? 1 : 0);
    if (d.peak_reserved_bytes) w.varint(*d.peak_reserved_bytes);
    for (const auto& peak : d.peaks_by_phase) {
        w.byte(peak ? 1 : 0);
        if (peak) w.svarint(*peak);
    }
    w.varint(d.steps);
    for (const std::vector<int64_t>* values : {&d.step_starts, &d.envelope}) {
        w.varint(values->size());
        for (int64_t v : *values) w.svarint(v);
    }
    w.varint(d.inferred.size());
    for (const DigestInference& i : d.inferred) {
        w.varint(i.event);
        w.byte(uint8_t(index(i.category)));
        w.byte(uint8_t(i.rule));
    }
    w.varint(d.allocations);
    w.varint(d.summed_allocations);
}

std::string decodeDigest(ByteReader& r, Trace& trace) {
    DigestSection d;
    const uint64_t version = r.varint();
    if (r.failed()) return "digest cut short";
    if (version == 0) return "a digest of version 0";
    d.version = uint32_t(std::min<uint64_t>(version, UINT32_MAX));
    if (version > kDigestVersion) {
        // A later memscope's layout: the trace is still marked as a digest, so
        // that it is never taken for a full trace, and whoever reads its
        // figures (rankDigestOf) says that it is newer. The rest of the chunk
        // is not read.
        trace.digest = std::move(d);
        return {};
    }
    d.source = std::string(r.text());
    // Checked before it is narrowed: a device out of range is not clamped to another.
    if (const int64_t device = r.svarint(); r.failed()) {
        return "digest cut short";
    } else if (device < -1 || device > INT16_MAX) {
        return "the digest's device " + std::to_string(device) + " is out of range";
    } else {
        d.device = int16_t(device);
    }
    for (int64_t* v : {&d.start, &d.end, &d.peak_bytes, &d.peak_time}) *v = r.svarint();
    if (const uint8_t phase = r.byte(); phase > kTrainingPhaseCount) {
        return "bad peak phase";
    } else if (phase) {
        d.peak_phase = kAllTrainingPhases[phase - 1];
    }
    d.peak_step = int32_t(std::clamp<int64_t>(r.svarint(), -1, INT32_MAX));
    if (r.byte()) d.peak_reserved_bytes = r.varint();
    for (auto& peak : d.peaks_by_phase)
        if (r.byte()) peak = r.svarint();
    d.steps = r.varint();
    for (std::vector<int64_t>* values : {&d.step_starts, &d.envelope}) {
        const uint64_t n = r.varint();
        // Each value takes at least one byte.
        if (r.failed() || n > r.remaining()) return "bad digest list length";
        values->reserve(n);
        for (uint64_t i = 0; i < n; ++i) values->push_back(r.svarint());
    }
    const uint64_t inferred = r.varint();
    if (r.failed() || inferred > r.remaining() / 3) return "bad inferred category count";
    d.inferred.reserve(inferred);
    for (uint64_t i = 0; i < inferred; ++i) {
        DigestInference entry;
        entry.event = r.varint();
        const uint8_t category = r.byte(), rule = r.byte();
        if (category >= kCategoryCount || rule == 0) return "bad inferred category";
        entry.category = kAllCategories[category];
        // Rules are appended, never renumbered: one from a later memscope
        // keeps its category and reads as weak evidence here.
        entry.rule = rule < kCategoryRuleCount ? CategoryRule(rule) : CategoryRule::Weak;
        d.inferred.push_back(entry);
    }
    d.allocations = r.varint();
    d.summed_allocations = r.varint();
    if (r.failed()) return "digest cut short";
    trace.digest = std::move(d);  // the last one wins
    return {};
}

void encodeRunMetrics(const RunMetrics& m, std::vector<unsigned char>& buf) {
    ByteWriter w(buf);
    putText(w, m.policy);
    w.byte(m.model ? 1 : 0);
    if (m.model) {
        const ModelShape& c = *m.model;
        putText(w, c.name);
        putText(w, c.description);
        putText(w, c.dtype);
        for (int32_t v : {c.layers, c.hidden, c.heads, c.seq, c.batch, c.vocab}) w.svarint(v);
        putDouble(w, c.dropout);
    }
    w.varint(m.step_ns.size());
    for (int64_t v : m.step_ns) w.svarint(v);
    w.varint(m.recompute_ns.size());
    for (int64_t v : m.recompute_ns) w.svarint(v);
    w.varint(m.losses.size());
    for (double v : m.losses) putDouble(w, v);
}

std::string decodeRunMetrics(uint32_t count, ByteReader& r, Trace& trace) {
    RunMetrics m;
    m.policy = std::string(r.text());
    const uint8_t has_model = r.byte();
    if (r.failed()) return "run metrics cut short";
    if (has_model > 1) return "bad model flag";
    if (has_model) {
        ModelShape c;
        c.name = std::string(r.text());
        c.description = std::string(r.text());
        c.dtype = std::string(r.text());
        for (int32_t* v : {&c.layers, &c.hidden, &c.heads, &c.seq, &c.batch, &c.vocab}) {
            const int64_t x = r.svarint();
            if (!fitsInt32(x)) return "model field out of range";
            *v = static_cast<int32_t>(x);
        }
        c.dropout = getDouble(r);
        if (r.failed()) return "run metrics cut short";
        m.model = std::move(c);
    }
    // Every value takes at least one byte (a double eight), so counts larger
    // than what is left are lies.
    const uint64_t steps = r.varint();
    if (r.failed() || steps != count || steps > r.remaining()) return "bad step count";
    m.step_ns.reserve(steps);
    for (uint64_t i = 0; i < steps; ++i) m.step_ns.push_back(r.svarint());
    const uint64_t recompute = r.varint();
    if (r.failed() || recompute > r.remaining()) return "bad recompute count";
    m.recompute_ns.reserve(recompute);
    for (uint64_t i = 0; i < recompute; ++i) m.recompute_ns.push_back(r.svarint());
    const uint64_t losses = r.varint();
    if (r.failed() || losses > r.remaining() / 8) return "bad loss count";
    m.losses.reserve(losses);
    for (uint64_t i = 0; i < losses; ++i) m.losses.push_back(getDouble(r));
    if (r.failed()) return "run metrics cut short";
    trace.metrics = std::move(m);  // the last one wins
    return {};
}

}  // namespace

void encodeDefinitions(const PendingTables& p, const ChunkEmitter& emit) {
    emitSplit(
        ChunkType::Strings, p.strings.size(), p.first_string, true,
        [&](ByteWriter& w, size_t i) { putText(w, p.strings[i]); }, emit);
    emitSplit(
        ChunkType::Frames, p.frames.size(), p.first_frame, true,
        [&](ByteWriter& w, size_t i) {
            w.varint(p.frames[i].function.value);
            w.varint(p.frames[i].file.value);
            w.varint(p.frames[i].line);
        },
        emit);
    // Stacks are variable length: walk them with a running offset.
    size_t offset = 0;
    emitSplit(
        ChunkType::Stacks, p.stack_sizes.size(), p.first_stack, true,
        [&](ByteWriter& w, size_t i) {
            w.varint(p.stack_sizes[i]);
            for (uint32_t k = 0; k < p.stack_sizes[i]; ++k)
                w.varint(p.stack_frames[offset + k].value);
            offset += p.stack_sizes[i];
        },
        emit);
    emitSplit(
        ChunkType::Streams, p.streams.size(), p.first_stream, true,
        [&](ByteWriter& w, size_t i) { w.varint(p.streams[i]); }, emit);
    emitSplit(
        ChunkType::Phases, p.phases.size(), p.first_phase, true,
        [&](ByteWriter& w, size_t i) {
            const Phase& ph = p.phases[i];
            w.varint(ph.name.value);
            w.byte(static_cast<uint8_t>(ph.kind));
            w.varint(ph.parent.value);
            w.svarint(ph.step);
            w.svarint(ph.block);
            w.svarint(ph.device);
            w.svarint(ph.start);
            // Wrapping subtraction: no overflow for any pair of times.
            w.svarint(static_cast<int64_t>(static_cast<uint64_t>(ph.end) -
                                           static_cast<uint64_t>(ph.start)));
        },
        emit);
    // Each modules chunk starts with its first id and the trace's module
    // source (one byte); a chunk without modules is written when only the
    // source changed.
    const auto source = static_cast<uint8_t>(p.module_source);
    if (p.modules.empty() && p.module_source_changed) {
        std::vector<unsigned char> buf;
        ByteWriter w(buf);
        w.varint(p.first_module);
        w.byte(source);
        emit(ChunkType::Modules, 0, buf);
    }
    emitSplit(
        ChunkType::Modules, p.modules.size(), 0, false,
        [&](ByteWriter& w, size_t i) {
            if (w.size() == 0) {
                w.varint(p.first_module + i);
                w.byte(source);
            }
            const Module& m = p.modules[i];
            w.varint(m.path.value);
            w.varint(m.root.value);
            w.varint(m.type.value);
            w.varint(m.parent.value);
        },
        emit);
}

void encodeUpdates(const PendingTables& p, const ChunkEmitter& emit) {
    emitSplit(
        ChunkType::PhaseEnds, p.phase_ends.size(), 0, false,
        [&](ByteWriter& w, size_t i) {
            w.varint(p.phase_ends[i].first.value);
            w.svarint(p.phase_ends[i].second);
        },
        emit);
    uint64_t prev_scope = 0;
    emitSplit(
        ChunkType::ModuleScopes, p.module_scopes.size(), 0, false,
        [&](ByteWriter& w, size_t i) {
            const ModuleScope& sc = p.module_scopes[i];
            // Each chunk restarts the start deltas at 0; wrapping arithmetic
            // as for phases.
            if (w.size() == 0) prev_scope = 0;
            w.svarint(static_cast<int64_t>(static_cast<uint64_t>(sc.start) - prev_scope));
            prev_scope = static_cast<uint64_t>(sc.start);
            w.svarint(static_cast<int64_t>(static_cast<uint64_t>(sc.end) -
                                           static_cast<uint64_t>(sc.start)));
            w.varint(sc.module.value);
            w.byte(static_cast<uint8_t>(sc.kind));
        },
        emit);
    uint64_t prev_op = 0;
    emitSplit(
        ChunkType::OpScopes, p.op_scopes.size(), 0, false,
        [&](ByteWriter& w, size_t i) {
            const OpScope& sc = p.op_scopes[i];
            // Each chunk starts with the source and restarts the start deltas.
            if (w.size() == 0) {
                w.byte(static_cast<uint8_t>(OpSource::Recorded));
                prev_op = 0;
            }
            w.svarint(static_cast<int64_t>(static_cast<uint64_t>(sc.start) - prev_op));
            prev_op = static_cast<uint64_t>(sc.start);
            w.svarint(static_cast<int64_t>(static_cast<uint64_t>(sc.end) -
                                           static_cast<uint64_t>(sc.start)));
            w.varint(sc.name.value);
            w.varint(sc.depth);
        },
        emit);
    uint64_t prev_time = 0;
    emitSplit(
        ChunkType::Annotations, p.annotations.size(), 0, false,
        [&](ByteWriter& w, size_t i) {
            const Annotation& a = p.annotations[i];
            // Each chunk restarts the time deltas at 0.
            if (w.size() == 0) prev_time = 0;
            w.svarint(static_cast<int64_t>(static_cast<uint64_t>(a.time) - prev_time));
            prev_time = static_cast<uint64_t>(a.time);
            w.varint(a.name.value);
            w.svarint(a.device);
            w.byte(static_cast<uint8_t>(a.stage));
        },
        emit);
    emitSplit(
        ChunkType::Attributes, p.attributes.size(), 0, false,
        [&](ByteWriter& w, size_t i) {
            w.varint(p.attributes[i].event);
            w.varint(p.attributes[i].key.value);
            w.varint(p.attributes[i].value.value);
        },
        emit);
    if (p.metadata) {
        const TraceMetadata& m = *p.metadata;
        std::vector<unsigned char> buf;
        ByteWriter w(buf);
        putText(w, m.source_format);
        putText(w, m.name);
        w.byte(static_cast<uint8_t>(m.time_base));
        w.svarint(m.pid);
        w.svarint(m.rank);
        w.varint(m.properties.size());
        for (const auto& [key, value] : m.properties) {
            putText(w, key);
            putText(w, value);
        }
        emit(ChunkType::Metadata, static_cast<uint32_t>(m.properties.size()), buf);
    }
    if (p.allocator_state) {
        const AllocatorState& s = *p.allocator_state;
        std::vector<unsigned char> buf;
        ByteWriter w(buf);
        w.varint(s.segments.size());
        w.varint(s.blocks.size());
        for (const Segment& seg : s.segments) {
            w.varint(seg.address);
            w.varint(seg.total_size);
            w.varint(seg.stream);
            w.varint(seg.pool_id_first);
            w.varint(seg.pool_id_second);
            w.varint(seg.stack.value);
            w.varint(seg.first_block);
            w.varint(seg.block_count);
            w.svarint(seg.device);
            w.byte(static_cast<uint8_t>((seg.expandable ? 1 : 0) | (seg.large ? 2 : 0)));
        }
        for (const Block& b : s.blocks) {
            w.varint(b.address);
            w.varint(b.size);
            w.varint(b.requested_size);
            w.varint(b.stack.value);
            w.byte(static_cast<uint8_t>(b.state));
        }
        emit(ChunkType::AllocatorState, static_cast<uint32_t>(s.segments.size()), buf);
    }
    if (p.metrics) {
        std::vector<unsigned char> buf;
        encodeRunMetrics(*p.metrics, buf);
        emit(ChunkType::RunMetrics, static_cast<uint32_t>(p.metrics->step_ns.size()), buf);
    }
    if (p.prediction) {
        std::vector<unsigned char> buf;
        encodePrediction(*p.prediction, buf);
        emit(ChunkType::Prediction, static_cast<uint32_t>(p.prediction->assumptions.size()), buf);
    }
    if (p.digest) {
        std::vector<unsigned char> buf;
        encodeDigest(*p.digest, buf);
        emit(ChunkType::Digest, static_cast<uint32_t>(p.digest->inferred.size()), buf);
    }
}

std::string decodeTableChunk(ChunkType type, uint32_t count, std::span<const unsigned char> payload,
                             uint64_t event_count, Trace& trace) {
    ByteReader r(payload.data(), payload.data() + payload.size());
    switch (type) {
        case ChunkType::Strings:
            return decodeStrings(count, r, trace);
        case ChunkType::Frames:
            return decodeFrames(count, r, trace);
        case ChunkType::Stacks:
            return decodeStacks(count, r, trace);
        case ChunkType::Streams:
            return decodeStreams(count, r, trace);
        case ChunkType::Phases:
            return decodePhases(count, r, trace);
        case ChunkType::PhaseEnds:
            return decodePhaseEnds(count, r, trace);
        case ChunkType::Annotations:
            return decodeAnnotations(count, r, trace);
        case ChunkType::Attributes:
            return decodeAttributes(count, r, event_count, trace);
        case ChunkType::Metadata:
            return decodeMetadata(count, r, trace);
        case ChunkType::AllocatorState:
            return decodeAllocatorState(count, r, trace);
        case ChunkType::RunMetrics:
            return decodeRunMetrics(count, r, trace);
        case ChunkType::Modules:
            return decodeModules(count, r, trace);
        case ChunkType::ModuleScopes:
            return decodeModuleScopes(count, r, trace);
        case ChunkType::Prediction:
            return decodePrediction(count, r, trace);
        case ChunkType::Digest:
            return decodeDigest(r, trace);
        case ChunkType::OpScopes:
            return decodeOpScopes(count, r, trace);
        case ChunkType::Events:
            break;
    }
    return "not a table chunk";
}

}  // namespace memscope::native
