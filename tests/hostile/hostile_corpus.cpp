#include "hostile_corpus.h"

#include <zlib.h>
#include <zstd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "memscope/format/native_format.h"

namespace memscope::hostile {
namespace {

// --- a pickle written byte by byte (protocol 4 opcodes) ---------------------
class P {
public:
    P() { op(0x80), op(4); }
    P& op(uint8_t o) {
        b.push_back(char(o));
        return *this;
    }
    P& u32(uint32_t v) {
        for (int i = 0; i < 4; ++i) b.push_back(char(v >> (8 * i)));
        return *this;
    }
    P& str(const std::string& s) {
        if (s.size() < 256) {
            op(0x8c).op(uint8_t(s.size()));
        } else {
            op('X').u32(uint32_t(s.size()));
        }
        b += s;
        return *this;
    }
    P& integer(int64_t v) {
        if (v >= INT32_MIN && v <= INT32_MAX) return op('J').u32(uint32_t(int32_t(v)));
        op(0x8a).op(8);
        for (int i = 0; i < 8; ++i) b.push_back(char(uint64_t(v) >> (8 * i)));
        return *this;
    }
    P& huge(uint64_t v) {  // >= 2^63 as a positive 9-byte LONG1
        op(0x8a).op(9);
        for (int i = 0; i < 8; ++i) b.push_back(char(v >> (8 * i)));
        return op(0);
    }
    P& real(double d) {
        uint64_t bits;
        std::memcpy(&bits, &d, 8);
        op('G');
        for (int i = 7; i >= 0; --i) b.push_back(char(bits >> (8 * i)));
        return *this;
    }
    P& put(uint32_t i) { return op('r').u32(i); }
    P& get(uint32_t i) { return op('j').u32(i); }
    P& key(const std::string& k) { return str(k); }
    P& stop() { return op('.'); }
    std::string b;
};
constexpr uint8_t EMPTY_DICT = '}', EMPTY_LIST = ']', MARK = '(', SETITEMS = 'u', SETITEM = 's',
                  APPENDS = 'e', APPEND = 'a', POP = '0', NONE = 'N';

// {action, addr, size, stream, time_us} without the closing SETITEMS.
void entry(P& p, const char* action, int64_t addr, int64_t size, int64_t time_us) {
    p.op(EMPTY_DICT).op(MARK);
    p.key("action").str(action);
    p.key("addr").integer(addr);
    p.key("size").integer(size);
    p.key("stream").integer(0);
    p.key("time_us").integer(time_us);
}

// {'segments': [], 'device_traces': [[ ...
void openSnapshot(P& p) {
    p.op(EMPTY_DICT).op(MARK);
    p.key("segments").op(EMPTY_LIST);
    p.key("device_traces").op(EMPTY_LIST).op(EMPTY_LIST).op(MARK);
}
void closeSnapshot(P& p) {
    p.op(APPENDS).op(APPEND);  // entries into device 0's list, that into device_traces
    p.op(SETITEMS).stop();
}

std::string hexTs(int64_t us) {
    return std::to_string(us);
}

uint32_t crc32c(const unsigned char* p, size_t n, uint32_t crc) {
    crc = ~crc;
    for (size_t i = 0; i < n; ++i) {
        crc ^= p[i];
        for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
    }
    return ~crc;
}

void le32(std::string& out, size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) out[at + size_t(i)] = char(v >> (8 * i));
}

std::string chunk(uint8_t type, uint32_t count, const std::string& raw, bool compress) {
    std::string stored = raw;
    uint8_t flags = 0;
    if (compress) {
        stored.resize(ZSTD_compressBound(raw.size()));
        stored.resize(ZSTD_compress(stored.data(), stored.size(), raw.data(), raw.size(), 19));
        flags = 1;
    }
    std::string h(20, '\0');
    h[0] = char(type);
    h[1] = char(flags);
    le32(h, 4, count);
    le32(h, 8, uint32_t(stored.size()));
    le32(h, 12, uint32_t(raw.size()));
    uint32_t crc = crc32c(reinterpret_cast<const unsigned char*>(h.data()), 16, 0);
    crc = crc32c(reinterpret_cast<const unsigned char*>(stored.data()), stored.size(), crc);
    le32(h, 16, crc);
    return h + stored;
}

std::string readAll(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

struct RawChunk {
    uint8_t type;
    std::string bytes;  // header and payload
};
std::vector<RawChunk> chunksOf(const std::string& file) {
    std::vector<RawChunk> out;
    for (size_t at = 16; at + 20 <= file.size();) {
        uint32_t stored = 0;
        for (int i = 0; i < 4; ++i)
            stored |= uint32_t(uint8_t(file[at + 8 + size_t(i)])) << (8 * i);
        out.push_back({uint8_t(file[at]), file.substr(at, 20 + stored)});
        at += 20 + stored;
    }
    return out;
}

Trace eventsTrace(uint64_t events) {
    Trace t;
    t.metadata.source_format = "hostile";
    t.events.resize(events);
    for (uint64_t i = 0; i < events; ++i) {
        Event& e = t.events[i];
        e.time = int64_t(1'700'000'000'000'000'000 + i * 1000);
        e.address = 0x7f0000000000ull + (i / 2) * 512;
        e.size = 512;
        e.kind = i % 2 ? EventKind::FreeCompleted : EventKind::Alloc;
    }
    return t;
}

}  // namespace

bool writeFile(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    return bool(out);
}

std::string pickleMemoGaps(int puts) {
    P p;
    p.op(EMPTY_DICT);
    for (int i = 1; i <= puts; ++i) p.put(uint32_t(i) * 65536u);
    p.key("segments").op(EMPTY_LIST).op(SETITEM);
    return p.stop().b;
}

std::string pickleEmptyListPop(uint64_t pairs) {
    P p;
    p.op(EMPTY_DICT);
    p.b.reserve(pairs * 2 + 64);
    for (uint64_t i = 0; i < pairs; ++i) p.op(EMPTY_LIST).op(POP);
    p.key("segments").op(EMPTY_LIST).op(SETITEM);
    return p.stop().b;
}

std::string pickleSharedBigString(int entries, size_t string_bytes, bool user_metadata) {
    P p;
    openSnapshot(p);
    p.str(std::string(string_bytes, 'x')).put(1).op(POP);
    for (int i = 0; i < entries; ++i) {
        entry(p, "alloc", 0x1000 + int64_t(i) * 512, 512, 1000 + i);
        if (user_metadata) {
            p.key("user_metadata").get(1);
        } else {  // an unknown key rendered as JSON: different per entry
            p.key("extra").op(EMPTY_LIST).op(MARK).get(1).integer(i).op(APPENDS);
        }
        p.op(SETITEMS);
    }
    closeSnapshot(p);
    return p.b;
}

std::string pickleFramesSharingStrings(int frames, size_t string_bytes) {
    P p;
    openSnapshot(p);
    p.str(std::string(string_bytes, 'f')).put(1).op(POP);
    p.str(std::string(string_bytes, 'n')).put(2).op(POP);
    for (int i = 0; i < frames; ++i) {
        entry(p, "alloc", 0x1000 + int64_t(i) * 512, 512, 1000 + i);
        p.key("frames").op(EMPTY_LIST).op(EMPTY_DICT).op(MARK);
        p.key("filename").get(1).key("name").get(2).key("line").integer(i);
        p.op(SETITEMS).op(APPEND);
        p.op(SETITEMS);
    }
    closeSnapshot(p);
    return p.b;
}

std::string pickleManyKeys(int keys) {
    P p;
    p.op(EMPTY_DICT).op(MARK);
    p.key("segments").op(EMPTY_LIST);
    for (int i = 0; i < keys; ++i) {
        p.key("k" + std::to_string(i)).op(NONE);
        if (i % 1000 == 999) p.op(SETITEMS).op(MARK);
    }
    p.op(SETITEMS);
    return p.stop().b;
}

std::string pickleEntries(int entries, EntryOddity oddity) {
    P p;
    openSnapshot(p);
    for (int i = 0; i < entries; ++i) {
        const bool odd = i == 0;
        const int64_t addr = 0x7f0000000000 + int64_t(i / 2) * 1024;
        p.op(EMPTY_DICT).op(MARK);
        p.key("action").str(i % 2 ? "free_completed" : "alloc");
        p.key("addr");
        if (odd && oddity == EntryOddity::AddrFloat)
            p.real(double(addr));
        else
            p.integer(addr);
        p.key("size");
        if (odd && oddity == EntryOddity::SizeHuge)
            p.huge(1ull << 63);
        else
            p.integer(1 << 20);
        p.key("stream").integer(0);
        const int64_t t = 1'700'000'000'000'000 + i * 10;
        if (odd && oddity == EntryOddity::TimeFloat)
            p.key("time_us").real(double(t) + 0.5);
        else if (odd && oddity == EntryOddity::TimeNaN)
            p.key("time_us").real(NAN);
        else if (!(odd && oddity == EntryOddity::TimeMissing))
            p.key("time_us").integer(t);
        p.op(SETITEMS);
    }
    closeSnapshot(p);
    return p.b;
}

std::string pickleHugeSegments() {
    P p;
    p.op(EMPTY_DICT).op(MARK);
    p.key("segments").op(EMPTY_LIST).op(MARK);
    auto block = [&](uint64_t address, bool huge) {
        p.op(EMPTY_DICT).op(MARK);
        p.key("address").integer(int64_t(address));
        p.key("size");
        if (huge)
            p.huge(1ull << 63);
        else
            p.integer(1 << 20);
        p.key("requested_size").integer(1 << 20);
        p.key("state").str("active_allocated");
        p.op(SETITEMS);
    };
    auto segment = [&](uint64_t address, bool huge_total, bool huge_block) {
        p.op(EMPTY_DICT).op(MARK);
        p.key("device").integer(0);
        p.key("address").integer(int64_t(address));
        p.key("total_size");
        if (huge_total)
            p.huge(1ull << 63);
        else
            p.integer(2 << 20);
        p.key("stream").integer(0);
        p.key("segment_type").str("large");
        p.key("blocks").op(EMPTY_LIST).op(MARK);
        block(address, false);
        if (huge_block) block(address + (1 << 20), true);
        p.op(APPENDS);
        p.op(SETITEMS);
    };
    segment(0x7f0000000000, false, true);
    segment(0x7f0001000000, true, false);
    p.op(APPENDS);
    p.key("device_traces").op(EMPTY_LIST).op(EMPTY_LIST).op(APPEND);
    p.op(SETITEMS).stop();
    return p.b;
}

std::string pickleDuplicateKeys() {
    // {'device_traces': [[alloc 1 MiB]], 'segments': [],
    //  'device_traces': [[alloc 2 MiB, alloc 2 MiB]], 'segments': []}: Python keeps the last.
    P p;
    p.op(EMPTY_DICT).op(MARK);
    for (int round = 0; round < 2; ++round) {
        p.key("device_traces").op(EMPTY_LIST).op(EMPTY_LIST).op(MARK);
        for (int i = 0; i <= round; ++i) {
            entry(p, "alloc", 0x1000 + i * 0x1000000, int64_t(1 + round) << 20, 100 + i);
            p.op(SETITEMS);
        }
        p.op(APPENDS).op(APPEND);
        p.key("segments").op(EMPTY_LIST);
    }
    p.op(SETITEMS);
    return p.stop().b;
}

std::string pickleSharedEntry() {
    // device_traces = [[e], [e]] with e one memoized dict.
    P p;
    p.op(EMPTY_DICT).op(MARK);
    p.key("segments").op(EMPTY_LIST);
    p.key("device_traces").op(EMPTY_LIST).op(MARK);
    p.op(EMPTY_LIST);
    entry(p, "alloc", 0x1000, 1 << 20, 100);
    p.op(SETITEMS).put(7).op(APPEND);
    p.op(EMPTY_LIST).get(7).op(APPEND);
    p.op(APPENDS).op(SETITEMS);
    return p.stop().b;
}

std::string kinetoJson(const std::string& first_event_ts, const std::string& first_bytes) {
    std::string s = "{\"schemaVersion\": 1, \"traceEvents\": [\n";
    for (int i = 0; i < 4; ++i) {
        const bool first = i == 0;
        const std::string ts = first ? first_event_ts : std::to_string(1700000000000000LL + i * 10);
        const std::string bytes = first ? first_bytes : (i % 2 ? "-1024" : "1024");
        s += std::string(i ? ",\n" : "") + "{\"ph\": \"i\", \"name\": \"[memory]\", \"pid\": 1";
        if (!ts.empty()) s += ", \"ts\": " + ts;
        s += ", \"args\": {\"Device Type\": 1, \"Device Id\": 0, \"Addr\": " +
             std::to_string(4096 + (i / 2) * 4096) + ", \"Bytes\": " + bytes + "}}";
    }
    return s + "]}\n";
}

std::string kinetoDuplicateTraceEvents() {
    const std::string one = kinetoJson("1700000000000000", "1024");
    // {"traceEvents": [...4...], "traceEvents": [...4...]}: Python keeps the second.
    const std::string events = one.substr(one.find('['), one.rfind(']') - one.find('[') + 1);
    return "{\"traceEvents\": " + events + ", \"traceEvents\": " + events + "}\n";
}

std::string kinetoDuplicateArgs() {
    return "{\"traceEvents\": [{\"ph\": \"i\", \"name\": \"[memory]\", \"ts\": 1700000000000000, "
           "\"args\": {\"Device Type\": 1, \"Device Id\": 0, \"Addr\": 4096, \"Bytes\": 1024}, "
           "\"args\": {\"Device Type\": 1, \"Device Id\": 1, \"Bytes\": 2048}}]}\n";
}

std::string jsonManyKeys(int keys) {
    std::string s = "{\"traceEvents\": []";
    for (int i = 0; i < keys; ++i) s += ", \"k" + std::to_string(i) + "\": " + std::to_string(i);
    return s + "}\n";
}

std::string gzip(const std::string& text) {
    z_stream z{};
    deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    std::string out(deflateBound(&z, uLong(text.size())) + 64, '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
    z.avail_in = uInt(text.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = uInt(out.size());
    deflate(&z, Z_FINISH);
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}

bool writeGzipFill(const std::string& path, const std::string& prefix, char fill, uint64_t repeat,
                   const std::string& suffix) {
    gzFile f = gzopen(path.c_str(), "wb9");
    if (!f) return false;
    gzwrite(f, prefix.data(), unsigned(prefix.size()));
    const std::string block(1 << 20, fill);
    for (uint64_t left = repeat; left > 0;) {
        const unsigned n = unsigned(std::min<uint64_t>(left, block.size()));
        gzwrite(f, block.data(), n);
        left -= n;
    }
    gzwrite(f, suffix.data(), unsigned(suffix.size()));
    return gzclose(f) == Z_OK;
}

std::string timelineFreedOldestFirst(int allocations) {
    // Raw form: [t_ns, action (2 create, 4 destroy), bytes, category]; torch
    // writes a destroy's bytes negated.
    std::string s = "[";
    for (int i = 0; i < allocations; ++i)
        s += (i ? ",[" : "[") + std::to_string(1000 + i) + ",2," + std::to_string(4096 + i) + ",3]";
    for (int i = 0; i < allocations; ++i)
        s += ",[" + std::to_string(1000 + allocations + i) + ",4,-" + std::to_string(4096 + i) +
             ",3]";
    return s + "]\n";
}

bool writeNativeEvents(const std::string& path, uint64_t events, uint32_t per_chunk) {
    NativeWriterOptions o;
    o.events_per_chunk = per_chunk;
    return writeNativeTrace(eventsTrace(events), path, o).ok();
}

bool writeNativeRepeatedEvents(const std::string& path, uint32_t per_chunk, int copies) {
    const std::string one = path + ".one";
    if (!writeNativeEvents(one, per_chunk, per_chunk)) return false;
    const std::string file = readAll(one);
    std::filesystem::remove(one);
    std::string out = file.substr(0, 16);
    for (const RawChunk& c : chunksOf(file)) {
        const int n = c.type == 10 ? copies : 1;
        for (int i = 0; i < n; ++i) out += c.bytes;
    }
    return writeFile(path, out);
}

bool writeNativeTableBomb(const std::string& path, uint8_t type, uint32_t raw_bytes, int chunks) {
    const std::string one = path + ".one";
    if (!writeNativeEvents(one, 2, 1024)) return false;
    const std::string file = readAll(one);
    std::filesystem::remove(one);
    std::string out = file;
    // Items of all-zero fields: annotations 4 bytes, attributes 3, properties 2.
    const uint32_t item = type == 8 ? 4 : type == 9 ? 3 : 2;
    uint32_t count = raw_bytes / item;
    std::string raw(size_t(count) * item, '\0');
    if (type == 1) {  // metadata: texts, time base, pid, rank, then the count
        std::string head;
        head += char(0), head += char(0), head += char(0), head += char(0), head += char(0);
        for (uint64_t v = count;; v >>= 7) {
            if (v < 0x80) {
                head += char(v);
                break;
            }
            head += char(0x80 | (v & 0x7f));
        }
        raw = head + raw;
    }
    const std::string c = chunk(type, count, raw, true);
    for (int i = 0; i < chunks; ++i) out += c;
    return writeFile(path, out);
}

bool writeNativeDigestOfDevice(const std::string& path, int64_t device) {
    const std::string one = path + ".one";
    if (!writeNativeEvents(one, 2, 1024)) return false;
    std::string out = readAll(one);
    std::filesystem::remove(one);
    // The format's prefix varint: n bytes, n - 1 zero bits then a one in the
    // first byte's low bits, the value above them; 9 bytes: a zero, 64 bits.
    auto varint = [](std::string& to, uint64_t v) {
        for (int n = 1; n <= 8; ++n)
            if (v < uint64_t(1) << (7 * n)) {
                const uint64_t coded = v << n | uint64_t(1) << (n - 1);
                for (int i = 0; i < n; ++i) to += char(coded >> (8 * i));
                return;
            }
        to += char(0);
        for (int i = 0; i < 8; ++i) to += char(v >> (8 * i));
    };
    auto svarint = [&](std::string& to, int64_t v) {
        varint(to, (uint64_t(v) << 1) ^ uint64_t(v >> 63));
    };
    // The layout of chunk 16 (docs/FORMAT.md): version, source, device,
    // start, end, peak bytes, peak time, phase, step, reserved, the phases'
    // peaks, steps, step starts, envelope, inferred, allocations, summed.
    std::string raw;
    varint(raw, kDigestVersion);
    varint(raw, 0);
    svarint(raw, device);
    for (int i = 0; i < 4; ++i) svarint(raw, 0);
    raw += char(0);
    svarint(raw, -1);
    raw += char(0);
    for (size_t i = 0; i < kTrainingPhaseCount; ++i) raw += char(0);
    for (int i = 0; i < 6; ++i) varint(raw, 0);
    out += chunk(16, 0, raw, true);
    return writeFile(path, out);
}

namespace {

// Allocations made inside module scopes: module k holds (k + 1) KiB at the peak.
Trace moduleTrace(const std::vector<StringId>& paths, Trace t) {
    t.metadata.source_format = "hostile";
    t.modules.source = ModuleSource::Recorded;
    const int64_t t0 = 1'700'000'000'000'000'000;
    for (size_t k = 0; k < paths.size(); ++k) {
        Module m;
        m.path = paths[k];
        const ModuleId id = t.modules.add(m);
        const int64_t start = t0 + int64_t(k) * 100;
        t.modules.scopes.push_back({start, start + 90, id, ModuleScopeKind::Forward});
        Event e;
        e.time = start + 10;
        e.address = 0x7f0000000000ull + k * 0x10000;
        e.size = 1024 * (k + 1);
        e.kind = EventKind::Alloc;
        t.events.push_back(e);
    }
    for (size_t k = 0; k < paths.size(); ++k) {
        Event e = t.events[k];
        e.time = t0 + int64_t(paths.size()) * 100 + int64_t(k);
        e.kind = EventKind::FreeCompleted;
        t.events.push_back(e);
    }
    return t;
}

}  // namespace

bool writeNativeSharedModulePath(const std::string& path, int modules, size_t path_bytes) {
    Trace t;
    const StringId shared = t.internString(std::string(path_bytes, 'm'));
    return writeNativeTrace(
               moduleTrace(std::vector<StringId>(size_t(modules), shared), std::move(t)), path)
        .ok();
}

std::string hostileRunName() {
    return "run\x1b]0;pwned\x07\x1b[2J\nrank 9 peaks at 0 B\xff\xfe";
}

bool writeNativeHostileStrings(const std::string& path) {
    Trace t;
    t.metadata.name = hostileRunName();
    t.metadata.setProperty("recorded_range", "steps 3-4\x1b[2J\n::error::forged");
    t.metadata.setProperty("policy", "full\x1b]0;title\x07");
    std::vector<StringId> paths = {t.internString("layer\x1b[2J.0\nforged line"),
                                   t.internString("bad\xc3\x28utf8"),
                                   t.internString("c1\xc2\x9b"
                                                  "31mred")};
    return writeNativeTrace(moduleTrace(paths, std::move(t)), path).ok();
}

std::vector<Case> writeCorpus(const std::string& folder, bool full) {
    std::filesystem::create_directories(folder);
    std::vector<Case> cases;
    auto add = [&](std::string name, std::string klass, const std::string& bytes,
                   std::string expect, std::string ext) {
        const std::string path = folder + "/" + name + ext;
        writeFile(path, bytes);
        cases.push_back({std::move(name), std::move(klass), path, std::move(expect)});
    };
    auto addPath = [&](std::string name, std::string klass, std::string path, std::string expect) {
        cases.push_back({std::move(name), std::move(klass), std::move(path), std::move(expect)});
    };
    const int k = full ? 1 : 0;
    // 2. Memory amplification.
    {
        const std::string p = folder + "/native_events_bomb.memscope";
        writeNativeRepeatedEvents(p, 1u << 20, full ? 200 : 8);
        addPath("native_events_bomb", "amplification", p, "warning");
    }
    for (auto [name, type, raw] : {std::tuple{"native_metadata_bomb", uint8_t(1), 64u << 20},
                                   std::tuple{"native_annotations_bomb", uint8_t(8), 192u << 20},
                                   std::tuple{"native_attributes_bomb", uint8_t(9), 192u << 20}}) {
        const std::string p = folder + "/" + name + ".memscope";
        writeNativeTableBomb(p, type, full ? raw : raw / 16, full ? 4 : 2);
        addPath(name, "amplification", p, "warning");
    }
    add("pickle_memo_gaps", "amplification", pickleMemoGaps(full ? 900 : 200), "error", ".pickle");
    add("pickle_empty_list_pop", "amplification", pickleEmptyListPop(full ? 4'000'000 : 200'000),
        "figures", ".pickle");
    add("pickle_big_string_rendered", "amplification",
        pickleSharedBigString(full ? 1000 : 50, 1 << 20, false), "figures", ".pickle");
    add("pickle_big_user_metadata", "amplification",
        pickleSharedBigString(full ? 4500 : 50, 1 << 20, true), "figures", ".pickle");
    {
        const std::string p = folder + "/json_big_string.json.gz";
        writeGzipFill(p, "{\"traceEvents\": [], \"note\": \"", 'a', full ? 1ull << 30 : 96ull << 20,
                      "\"}");
        addPath("json_big_string", "amplification", p, "error");
        const std::string q = folder + "/json_big_key.json.gz";
        writeGzipFill(q, "{\"traceEvents\": [], \"", 'k', full ? 1ull << 30 : 96ull << 20,
                      "\": 1}");
        addPath("json_big_key", "amplification", q, "error");
        const std::string r = folder + "/json_many_big_values.json.gz";
        gzFile f = gzopen(r.c_str(), "wb9");
        const std::string big(1 << 20, 'v');
        gzputs(f, "{\"traceEvents\": []");
        for (int i = 0; i < (full ? 2000 : 100); ++i) {
            const std::string key = ", \"k" + std::to_string(i) + "\": \"";
            gzwrite(f, key.data(), unsigned(key.size()));
            gzwrite(f, big.data(), unsigned(big.size()));
            gzputs(f, "\"");
        }
        gzputs(f, "}");
        gzclose(f);
        addPath("json_many_big_values", "amplification", r, "warning");
        const std::string t = folder + "/timeline_50M_times.json.gz";
        std::string zeros;
        writeGzipFill(t, "[[", ' ', 0, "");
        gzFile g = gzopen(t.c_str(), "wb9");
        gzputs(g, "[[0");
        const std::string run(1 << 20, '0');
        std::string commas;
        for (int i = 0; i < (1 << 19); ++i) commas += ",0";
        for (int i = 0; i < (full ? 100 : 4); ++i)
            gzwrite(g, commas.data(), unsigned(commas.size()));
        gzputs(g, "], [[1,2,3,4,5,6,7,8,9]]]");
        gzclose(g);
        addPath("timeline_many_times", "amplification", t, "error");
    }
    // 3. Quadratic time.
    add("pickle_frames_shared_strings", "quadratic",
        pickleFramesSharingStrings(full ? 40000 : 2000, full ? (8u << 20) : (1u << 20)), "figures",
        ".pickle");
    add("pickle_many_keys", "quadratic", pickleManyKeys(full ? 300000 : 30000), "warning",
        ".pickle");
    add("json_many_keys", "quadratic", jsonManyKeys(full ? 300000 : 30000), "warning", ".json");
    add("timeline_freed_oldest_first", "quadratic", timelineFreedOldestFirst(full ? 300000 : 30000),
        "figures", ".raw.json");
    {
        // 4. Cancel cases are run in-process by the bench; here their files.
        const std::string p = folder + "/json_whitespace.json.gz";
        writeGzipFill(p, "{\"traceEvents\": [", ' ', full ? 1ull << 30 : 64ull << 20, "]}");
        addPath("json_whitespace", "cancel", p, "figures");
    }
    // 5. Silently wrong figures.
    add("snapshot_time_float", "figures", pickleEntries(6, EntryOddity::TimeFloat), "figures",
        ".pickle");
    add("snapshot_time_nan", "figures", pickleEntries(6, EntryOddity::TimeNaN), "warning",
        ".pickle");
    add("snapshot_time_missing", "figures", pickleEntries(6, EntryOddity::TimeMissing), "warning",
        ".pickle");
    add("snapshot_addr_float", "figures", pickleEntries(6, EntryOddity::AddrFloat), "warning",
        ".pickle");
    add("snapshot_size_huge", "figures", pickleEntries(6, EntryOddity::SizeHuge), "warning",
        ".pickle");
    add("snapshot_duplicate_keys", "figures", pickleDuplicateKeys(), "figures", ".pickle");
    add("snapshot_shared_entry", "figures", pickleSharedEntry(), "figures", ".pickle");
    add("kineto_missing_ts", "figures", kinetoJson("", "1024"), "warning", ".json");
    add("kineto_bytes_nan", "figures", kinetoJson("1700000000000000", "NaN"), "warning", ".json");
    add("kineto_bytes_inf", "figures", kinetoJson("1700000000000000", "Infinity"), "warning",
        ".json");
    add("kineto_bytes_overflow", "figures",
        kinetoJson("1700000000000000", "99999999999999999999999"), "warning", ".json");
    add("kineto_sum_overflow", "figures", kinetoJson("1700000000000000", "9223372036854775807"),
        "figures", ".json");
    add("kineto_ts_near_min", "figures", kinetoJson("-9223372036854775", "1024"), "figures",
        ".json");
    add("kineto_duplicate_trace_events", "figures", kinetoDuplicateTraceEvents(), "figures",
        ".json");
    add("kineto_duplicate_args", "figures", kinetoDuplicateArgs(), "figures", ".json");
    // Issue 64, class 3: one module path string shared by many modules.
    {
        const std::string p = folder + "/native_shared_module_path.memscope";
        writeNativeSharedModulePath(p, 300, full ? 16u << 20 : 1u << 20);
        addPath("native_shared_module_path", "strings", p, "warning");
        const std::string q = folder + "/native_one_long_module_path.memscope";
        writeNativeSharedModulePath(q, 1, 2u << 20);
        addPath("native_one_long_module_path", "strings", q, "warning");
    }
    // Issue 64, class 7: control sequences and invalid UTF-8 in names.
    {
        const std::string p = folder + "/native_hostile_strings.memscope";
        writeNativeHostileStrings(p);
        addPath("native_hostile_strings", "strings", p, "figures");
    }
    (void)k;
    (void)hexTs;
    return cases;
}

}  // namespace memscope::hostile
