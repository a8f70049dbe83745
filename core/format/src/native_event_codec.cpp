// Events chunk codec. Layout (docs/FORMAT.md, "Events chunk" is the reference):
//   varint first_index, varint count, varint time_unit,
//   palette: varint size, then per entry u8 kind, u8 category, svarint device, varint stream
//   six columns, each a varint byte length then one varint per event (two for escapes):
//     tag      palette index
//     time     zigzag((time - previous event's time) / time_unit)
//     address  delta d to the previous address of the event's context, or k,
//              the lane's k-th latest alloc (0 = newest, k < 16), whose size
//              becomes the context's previous size: zigzag(d / 512) << 2 when d
//              is a multiple of 512, else zigzag(d) << 2 | 1; k << 2 | 2; or 1
//              then zigzag(d) when that would overflow. Chunks without flag 2
//              (before 1.4) have no k and one mode bit: zigzag(d / 512) << 1,
//              zigzag(d) << 1 | 1, or the same escape.
//     size     0 = the context's previous size; (size / 512) << 2 | 1;
//              size << 2 | 2; or 3 then the size
//     stack    0 = the context's previous stack, else id + 1
//     phase    zigzag(phase - previous phase of the event's device)
// A context is a (slot, device) pair, a slot a group of kinds whose addresses
// follow each other: a free_completed usually repeats its free_requested's
// address, size and stack, and devices interleaved in time would otherwise
// make every delta jump between address spaces. time_unit is the chunk's
// common divisor of time deltas (1000 for microsecond sources). Most
// allocations are temporaries freed a few allocations later, so a free that
// names its allocation costs a byte where a delta to the previous free's
// address (a random jump) and its size cost five.
//
// Decoding avoids data-dependent branches (prefix varints give their length
// without a loop, choices are made with selects): at 20+ million events per
// second a mispredicted branch per column would cost more than the decoding.
#include "native_event_codec.h"

#include <cstring>
#include <numeric>

#include "native_bytes.h"
#include "native_layout.h"

namespace memscope::native {
namespace {

enum Column { kTag, kTime, kAddress, kSize, kStack, kPhase, kColumnCount };
static_assert(kColumnCount ==
              std::tuple_size_v<std::remove_cvref_t<decltype(EventEncoder().columnStarts())>>);

constexpr uint8_t slotOf(EventKind kind) {
    switch (kind) {
        case EventKind::Alloc:
            return 0;
        case EventKind::FreeRequested:
        case EventKind::FreeCompleted:
            return 1;
        case EventKind::SegmentAlloc:
        case EventKind::SegmentFree:
        case EventKind::SegmentMap:
        case EventKind::SegmentUnmap:
            return 2;
        default:
            return 3;
    }
}

constexpr uint64_t kAlign = 512;  // the caching allocator's rounding
constexpr uint64_t kPayloadLimit = uint64_t{1} << 62;

// A lane's latest allocations, newest at head - 1. References reach
// kRecentWindow back; the ring is twice that so that the decoder can write
// every event at head (no branch on the kind) into a slot no reference reaches.
constexpr uint32_t kRecentWindow = 16;
constexpr uint32_t kRecentRing = 32;
struct RecentAlloc {
    uint64_t address = 0;
    uint64_t size = 0;
};

uint64_t paletteKey(const Event& e) {
    return static_cast<uint64_t>(static_cast<uint8_t>(e.kind)) |
           static_cast<uint64_t>(static_cast<uint8_t>(e.category)) << 8 |
           static_cast<uint64_t>(static_cast<uint16_t>(e.device)) << 16 |
           static_cast<uint64_t>(e.stream) << 32;
}
int16_t keyDevice(uint64_t key) {
    return static_cast<int16_t>(static_cast<uint16_t>(key >> 16));
}

uint64_t mix(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

// Assigns contexts ((slot, device) pairs) and lanes (devices) to palette
// entries in palette order, identically in the encoder and the decoder.
class ContextMap {
public:
    void add(EventKind kind, int16_t device) {
        const uint32_t key = uint32_t(slotOf(kind)) << 16 | static_cast<uint16_t>(device);
        ctx_.push_back(find(ctx_keys_, key));
        lane_.push_back(find(lane_keys_, static_cast<uint16_t>(device)));
    }
    uint32_t ctx(size_t palette_index) const { return ctx_[palette_index]; }
    uint32_t lane(size_t palette_index) const { return lane_[palette_index]; }
    size_t entries() const { return ctx_.size(); }
    size_t ctxCount() const { return ctx_keys_.size(); }
    size_t laneCount() const { return lane_keys_.size(); }
    void clear() {
        ctx_.clear();
        lane_.clear();
        ctx_keys_.clear();
        lane_keys_.clear();
    }

private:
    // Few distinct keys (slots x devices): a linear search is the fastest map.
    static uint32_t find(std::vector<uint32_t>& keys, uint32_t key) {
        for (size_t i = 0; i < keys.size(); ++i)
            if (keys[i] == key) return static_cast<uint32_t>(i);
        keys.push_back(key);
        return static_cast<uint32_t>(keys.size() - 1);
    }
    std::vector<uint32_t> ctx_, lane_, ctx_keys_, lane_keys_;
};

// A varint column being read: while 9 bytes remain, one unchecked load per
// varint; the column's tail takes the checked path.
struct ColumnReader {
    const unsigned char* p = nullptr;
    const unsigned char* end = nullptr;
    bool ok = true;

    uint64_t next() {
        if (end - p >= 9) [[likely]]
            return readVarintUnchecked(p);
        return slow();
    }

    [[gnu::noinline]] uint64_t slow() {
        ByteReader r(p, end);
        const uint64_t v = r.varint();
        if (r.failed()) ok = false;
        p = r.position();
        return v;
    }
};

}  // namespace

uint32_t EventEncoder::paletteIndex(uint64_t key) {
    size_t mask = slot_keys_.size() - 1;
    size_t i = mix(key) & mask;
    while (slot_values_[i] != UINT32_MAX) {
        if (slot_keys_[i] == key) return slot_values_[i];
        i = (i + 1) & mask;
    }
    const auto index = static_cast<uint32_t>(palette_.size());
    palette_.push_back(key);
    slot_keys_[i] = key;
    slot_values_[i] = index;
    if (palette_.size() * 2 > slot_keys_.size()) {  // keep probes short: grow and rehash
        slot_keys_.assign(slot_keys_.size() * 2, 0);
        slot_values_.assign(slot_keys_.size(), UINT32_MAX);
        mask = slot_keys_.size() - 1;
        for (uint32_t k = 0; k < palette_.size(); ++k) {
            size_t j = mix(palette_[k]) & mask;
            while (slot_values_[j] != UINT32_MAX) j = (j + 1) & mask;
            slot_keys_[j] = palette_[k];
            slot_values_[j] = k;
        }
    }
    return index;
}

void EventEncoder::encode(std::span<const Event> events, uint64_t first_index,
                          std::vector<unsigned char>& out) {
    const size_t n = events.size();
    palette_.clear();
    slot_keys_.assign(256, 0);
    slot_values_.assign(256, UINT32_MAX);

    // The time unit first: the gcd of all deltas (1 as soon as one is odd
    // enough, and then it stops looking).
    uint64_t unit = 0;
    {
        uint64_t prev = 0;
        for (const Event& e : events) {
            const auto t = static_cast<uint64_t>(e.time);
            const auto d = static_cast<int64_t>(t - prev);
            prev = t;
            const uint64_t magnitude =
                d < 0 ? 0 - static_cast<uint64_t>(d) : static_cast<uint64_t>(d);
            if (magnitude != 0) unit = std::gcd(unit, magnitude);
            if (unit == 1) break;
        }
        if (unit == 0 || unit > kPayloadLimit) unit = 1;
    }

    // Worst case: two 9-byte varints per value (the escapes), plus putVarint's
    // 8 bytes of scratch. The columns only grow: resizing down and up again
    // would zero-fill the difference on every chunk of a different size.
    unsigned char* cursor[kColumnCount];
    for (int c = 0; c < kColumnCount; ++c) {
        if (columns_[c].size() < n * 20 + 16) columns_[c].resize(n * 20 + 16);
        cursor[c] = columns_[c].data();
    }

    ContextMap contexts;
    std::vector<uint64_t> prev_address, prev_size;
    std::vector<uint32_t> prev_stack, prev_phase;
    std::vector<RecentAlloc> recent;
    std::vector<uint32_t> recent_head;
    uint64_t prev_time = 0;
    for (const Event& e : events) {
        const uint32_t tag = paletteIndex(paletteKey(e));
        if (tag == contexts.entries()) {  // a new palette entry
            contexts.add(e.kind, e.device);
            prev_address.resize(contexts.ctxCount());
            prev_size.resize(contexts.ctxCount());
            prev_stack.resize(contexts.ctxCount());
            prev_phase.resize(contexts.laneCount());
            recent.resize(contexts.laneCount() * kRecentRing);
            recent_head.resize(contexts.laneCount());
        }
        const uint32_t ctx = contexts.ctx(tag);
        const uint32_t lane = contexts.lane(tag);
        cursor[kTag] = putVarint(cursor[kTag], tag);

        const auto time = static_cast<uint64_t>(e.time);  // wrapping arithmetic: no overflow UB
        const auto dt = static_cast<int64_t>(time - prev_time);
        // Most chunks' unit is 1: no 64-bit division per event then.
        cursor[kTime] =
            putVarint(cursor[kTime], zigzag(unit == 1 ? dt : dt / static_cast<int64_t>(unit)));
        prev_time = time;

        const auto da = static_cast<int64_t>(e.address - prev_address[ctx]);
        // A delta of 0 (a free_completed after its free_requested) is already
        // one byte of zeros, which zstd removes; only a jump is worth a reference.
        RecentAlloc* const ring = &recent[size_t{lane} * kRecentRing];
        uint32_t hit = kRecentWindow;
        if (da != 0 && slotOf(e.kind) == 1) {
            for (uint32_t k = 0; k < kRecentWindow; ++k) {
                if (ring[(recent_head[lane] - 1 - k) % kRecentRing].address == e.address) {
                    hit = k;
                    break;
                }
            }
        }
        if (hit < kRecentWindow) {
            cursor[kAddress] = putVarint(cursor[kAddress], uint64_t{hit} << 2 | 2);
            // The size is then coded against the allocation's.
            prev_size[ctx] = ring[(recent_head[lane] - 1 - hit) % kRecentRing].size;
        } else if (da % static_cast<int64_t>(kAlign) == 0) {
            cursor[kAddress] = putVarint(cursor[kAddress], zigzag(da / int64_t{kAlign}) << 2);
        } else if (zigzag(da) < kPayloadLimit) {
            cursor[kAddress] = putVarint(cursor[kAddress], zigzag(da) << 2 | 1);
        } else {
            cursor[kAddress] = putVarint(cursor[kAddress], 1);
            cursor[kAddress] = putVarint(cursor[kAddress], zigzag(da));
        }
        prev_address[ctx] = e.address;

        uint64_t size_code;
        if (e.size == prev_size[ctx]) {
            size_code = 0;
        } else if (e.size % kAlign == 0) {
            size_code = (e.size / kAlign) << 2 | 1;
        } else if (e.size < kPayloadLimit) {
            size_code = e.size << 2 | 2;
        } else {
            size_code = 3;
        }
        cursor[kSize] = putVarint(cursor[kSize], size_code);
        if (size_code == 3) cursor[kSize] = putVarint(cursor[kSize], e.size);
        prev_size[ctx] = e.size;

        const uint32_t stack = e.stack.value;
        cursor[kStack] =
            putVarint(cursor[kStack], stack == prev_stack[ctx] ? 0 : uint64_t{stack} + 1);
        prev_stack[ctx] = stack;

        cursor[kPhase] =
            putVarint(cursor[kPhase], zigzag(int64_t{e.phase.value} - int64_t{prev_phase[lane]}));
        prev_phase[lane] = e.phase.value;

        if (e.kind == EventKind::Alloc)
            ring[recent_head[lane]++ % kRecentRing] = {e.address, e.size};
    }

    ByteWriter w(out);
    w.varint(first_index);
    w.varint(n);
    w.varint(unit);
    w.varint(palette_.size());
    for (uint64_t key : palette_) {
        w.byte(static_cast<uint8_t>(key));
        w.byte(static_cast<uint8_t>(key >> 8));
        w.svarint(keyDevice(key));
        w.varint(key >> 32);
    }
    for (int c = 0; c < kColumnCount; ++c) {
        const size_t len = static_cast<size_t>(cursor[c] - columns_[c].data());
        column_starts_[c] = out.size();
        w.varint(len);
        w.bytes(columns_[c].data(), len);
    }
}

std::string decodeEvents(std::span<const unsigned char> payload, uint32_t count,
                         uint64_t first_index, const EventLimits& limits, EventCoding coding,
                         std::vector<Event>& out) {
    if (count > kMaxEventsPerChunk) return "too many events in one chunk";
    const size_t base = out.size();
    out.resize(base + count);
    std::string error = decodeEvents(payload, count, first_index, limits, coding,
                                     std::span<Event>(out).subspan(base));
    if (!error.empty()) out.resize(base);
    return error;
}

namespace {

// What an event is coded against, per context: the previous address, size
// and stack.
struct ContextState {
    uint64_t address = 0;
    uint64_t size = 0;
    uint32_t stack = 0;
};

// Per lane: the previous phase and the latest allocations.
struct LaneState {
    uint64_t phase = 0;
    uint32_t head = 0;
    RecentAlloc recent[kRecentRing];
};

// Per palette entry, everything an event needs from it. The entry points at
// its context's and lane's state, so that the decoding loop keeps no base
// pointers and indexes nothing: it has more live values than registers.
struct PaletteEntry {
    EventKind kind;
    Category category;
    int16_t device;
    uint32_t stream;
    uint32_t ctx;
    uint32_t lane;
    uint32_t is_alloc;  // 1 for an alloc: it advances its lane's recent ring
    ContextState* ctx_state = nullptr;
    LaneState* lane_state = nullptr;
};

// The decoding state of a chunk; it points the palette's entries at it.
struct DecodeState {
    DecodeState(const ContextMap& contexts, std::vector<PaletteEntry>& palette)
        : contexts(contexts.ctxCount()), lanes(contexts.laneCount()) {
        for (PaletteEntry& e : palette) {
            e.ctx_state = &this->contexts[e.ctx];
            e.lane_state = &lanes[e.lane];
        }
    }
    DecodeState(const DecodeState&) = delete;
    DecodeState& operator=(const DecodeState&) = delete;

    std::vector<ContextState> contexts;
    std::vector<LaneState> lanes;
    uint64_t prev_time = 0;
};

// The columns read without bound checks: the caller has made sure that every
// event of the block leaves 9 readable bytes in every column. Local pointers,
// so that they live in registers across the loop.
struct UncheckedColumns {
    const unsigned char* p[kColumnCount];
    uint64_t next(int c) { return readVarintUnchecked(p[c]); }
};

struct CheckedColumns {
    ColumnReader (&col)[kColumnCount];
    uint64_t next(int c) { return col[c].next(); }
};

// At most this many bytes per event in each column (a varint is at most 9
// bytes; address and size may add an escaped payload).
constexpr int kMaxEventBytes[kColumnCount] = {9, 9, 18, 18, 9, 9};

// Events [begin, end) of `out`. Choices that depend on the data (the address
// and size modes, a repeated stack) are masks and selects, not branches: they
// change from event to event, and a mispredicted branch costs more than the
// rest of the event. Returns the first error, or null.
template <EventCoding kCoding, class Columns>
[[gnu::always_inline]] inline const char* decodeRange(Columns& col,
                                                      const std::vector<PaletteEntry>& palette,
                                                      uint64_t unit, const EventLimits& limits,
                                                      DecodeState& st, Event* out, size_t begin,
                                                      size_t end) {
    constexpr bool kByRecent = kCoding == EventCoding::RecentAllocs;
    constexpr int kAlignShift = 9;
    static_assert(kAlign == uint64_t{1} << kAlignShift);
    const uint64_t palette_size = palette.size();
    uint64_t prev_time = st.prev_time;
    const char* error = nullptr;
    Event* const last = out + end;
    for (Event* ep = out + begin; ep != last; ++ep) {
        const uint64_t tag = col.next(kTag);
        if (tag >= palette_size) [[unlikely]] {
            error = "event palette index out of range";
            break;
        }
        const PaletteEntry& entry = palette[tag];
        Event& e = *ep;
        e.kind = entry.kind;
        e.category = entry.category;
        e.device = entry.device;
        e.stream = entry.stream;

        prev_time += static_cast<uint64_t>(unzigzag(col.next(kTime))) * unit;
        e.time = static_cast<int64_t>(prev_time);

        ContextState& cs = *entry.ctx_state;
        LaneState& ls = *entry.lane_state;
        uint64_t address = cs.address;
        uint64_t size = cs.size;
        bool bad_address = false;
        const uint64_t address_code = col.next(kAddress);
        if (address_code == 1) [[unlikely]] {
            address += static_cast<uint64_t>(unzigzag(col.next(kAddress)));
        } else if constexpr (!kByRecent) {
            const auto delta = static_cast<uint64_t>(unzigzag(address_code >> 1));
            address += delta << ((address_code & 1) ? 0 : kAlignShift);
        } else {
            const uint64_t mode = address_code & 3;
            const uint64_t k = address_code >> 2;
            const auto delta = static_cast<uint64_t>(unzigzag(k));
            bad_address = (mode == 3) | ((mode == 2) & (k >= kRecentWindow));
            // Masked: a bad k has already failed the chunk, and must not read
            // outside the ring on the way.
            const RecentAlloc& named =
                ls.recent[(ls.head - 1 - static_cast<uint32_t>(k)) % kRecentRing];
            const uint64_t stepped = address + (delta << (mode == 1 ? 0 : kAlignShift));
            const uint64_t by_name = 0 - uint64_t{mode == 2};
            address = (named.address & by_name) | (stepped & ~by_name);
            size = (named.size & by_name) | (size & ~by_name);
        }
        cs.address = address;
        e.address = address;

        bool bad_size = false;
        const uint64_t size_code = col.next(kSize);
        const uint64_t size_mode = size_code & 3;
        if (size_mode == 3) [[unlikely]] {
            bad_size = size_code != 3;
            size = col.next(kSize);
        } else {
            const uint64_t value = (size_code >> 2) << (size_mode == 1 ? kAlignShift : 0);
            bad_size = (size_mode == 0) & (size_code != 0);
            const uint64_t coded = 0 - uint64_t{size_mode != 0};
            size = (value & coded) | (size & ~coded);
        }
        cs.size = size;
        e.size = size;

        const uint64_t stack_code = col.next(kStack);
        if (stack_code > limits.stack_count) [[unlikely]] {
            error = "event refers to an unknown stack";
            break;
        }
        const uint32_t previous_stack = cs.stack;
        const uint32_t stack =
            stack_code == 0 ? previous_stack : static_cast<uint32_t>(stack_code - 1);
        cs.stack = stack;
        e.stack = StackId(stack);

        // Unsigned so that a hostile delta wraps instead of overflowing; a
        // negative phase becomes huge and fails the same check.
        uint64_t& phase = ls.phase;
        phase += static_cast<uint64_t>(unzigzag(col.next(kPhase)));
        if (phase > limits.phase_count) [[unlikely]] {
            error = "event refers to an unknown phase";
            break;
        }
        e.phase = PhaseId(static_cast<uint32_t>(phase));

        if constexpr (kByRecent) {
            // Every event is written at head, which only an alloc moves past:
            // the slot at head is beyond the reach of any reference.
            ls.recent[ls.head % kRecentRing] = {address, size};
            ls.head += entry.is_alloc;
        }
        if (bad_address | bad_size) [[unlikely]] {
            error = bad_size ? "bad size code" : "bad address code";
            break;
        }
    }
    st.prev_time = prev_time;
    return error;
}

// The whole chunk: blocks of events that cannot run past any column's end
// are read without bound checks, the last few events of the chunk with them.
template <EventCoding kCoding>
const char* decodeColumns(ColumnReader (&col)[kColumnCount], std::vector<PaletteEntry>& palette,
                          const ContextMap& contexts, uint64_t unit, const EventLimits& limits,
                          std::span<Event> out) {
    DecodeState st(contexts, palette);
    size_t done = 0;
    for (;;) {
        size_t block = out.size() - done;
        for (int c = 0; c < kColumnCount; ++c) {
            const auto left = static_cast<size_t>(col[c].end - col[c].p);
            block = std::min(block, left < 9 ? 0 : (left - 9) / size_t(kMaxEventBytes[c]));
        }
        if (block < 16) break;  // the tail, checked
        UncheckedColumns fast;
        for (int c = 0; c < kColumnCount; ++c) fast.p[c] = col[c].p;
        const char* error =
            decodeRange<kCoding>(fast, palette, unit, limits, st, out.data(), done, done + block);
        for (int c = 0; c < kColumnCount; ++c) col[c].p = fast.p[c];
        if (error) return error;
        done += block;
    }
    CheckedColumns checked{col};
    return decodeRange<kCoding>(checked, palette, unit, limits, st, out.data(), done, out.size());
}

}  // namespace

std::string decodeEvents(std::span<const unsigned char> payload, uint32_t count,
                         uint64_t first_index, const EventLimits& limits, EventCoding coding,
                         std::span<Event> out) {
    if (out.size() != count) return "event buffer does not match the count";
    ByteReader r(payload.data(), payload.data() + payload.size());
    const uint64_t first = r.varint();
    const uint64_t n = r.varint();
    const uint64_t unit = r.varint();
    if (r.failed()) return "events header cut short";
    if (first != first_index)
        return "events chunk starts at event " + std::to_string(first) + ", expected " +
               std::to_string(first_index);
    if (n != count) return "event count differs from the chunk header";
    if (n > kMaxEventsPerChunk) return "too many events in one chunk";
    if (unit == 0) return "zero time unit";

    const uint64_t palette_size = r.varintAtMost(n);
    if (r.failed()) return "bad event palette size";
    std::vector<PaletteEntry> palette;
    palette.reserve(palette_size);
    ContextMap contexts;
    for (uint64_t i = 0; i < palette_size; ++i) {
        const uint8_t kind = r.byte();
        const uint8_t category = r.byte();
        const int64_t device = r.svarint();
        const uint64_t stream = r.varint();
        if (r.failed()) return "event palette cut short";
        if (kind >= kEventKindCount) return "unknown event kind " + std::to_string(kind);
        if (category >= kCategoryCount) return "unknown category " + std::to_string(category);
        // -1 is the host; nothing below it exists, and consumers index by device.
        if (device < -1 || device > INT16_MAX) return "device out of range";
        if (stream >= limits.stream_count) return "event refers to an unknown stream";
        const auto event_kind = static_cast<EventKind>(kind);
        contexts.add(event_kind, static_cast<int16_t>(device));
        palette.push_back({event_kind, static_cast<Category>(category),
                           static_cast<int16_t>(device), static_cast<uint32_t>(stream),
                           contexts.ctx(i), contexts.lane(i),
                           event_kind == EventKind::Alloc ? 1u : 0u});
    }

    ColumnReader col[kColumnCount];
    for (auto& c : col) {
        ByteReader sub = r.sub(r.varint());
        c.p = sub.position();
        c.end = c.p + sub.remaining();
    }
    if (r.failed()) return "event columns cut short";
    // Bytes after the last column are allowed: a later minor version may add columns.

    const char* error =
        coding == EventCoding::RecentAllocs
            ? decodeColumns<EventCoding::RecentAllocs>(col, palette, contexts, unit, limits, out)
            : decodeColumns<EventCoding::Deltas>(col, palette, contexts, unit, limits, out);
    if (!error) {
        for (const auto& c : col) {
            if (!c.ok)
                error = "event column cut short";
            else if (c.p != c.end)
                error = "event column has trailing bytes";
        }
    }
    if (error) return error;
    return {};
}

}  // namespace memscope::native
