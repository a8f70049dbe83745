// The native trace format: round trips, the recovery rule on every prefix and
// on corrupt bytes, hostile lengths, the background writer under threads and
// fork, and the plugin. The CRC32C here is an independent bitwise version, so
// files crafted by these tests also check docs/FORMAT.md against the code.
#include "memscope/format/native_format.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "memscope/builtin_plugins.h"
#include "memscope/open/plugin_registry.h"

using namespace memscope;
namespace fs = std::filesystem;

namespace {

using Bytes = std::vector<std::byte>;

uint32_t referenceCrc32c(const void* data, size_t n, uint32_t crc = 0) {
    const auto* p = static_cast<const unsigned char*>(data);
    crc = ~crc;
    for (size_t i = 0; i < n; ++i) {
        crc ^= p[i];
        for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    }
    return ~crc;
}

void putLE32(Bytes& b, size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + i] = std::byte(v >> (8 * i));
}
uint32_t getLE32(const Bytes& b, size_t at) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t(std::to_integer<uint8_t>(b[at + i])) << (8 * i);
    return v;
}

// A temporary folder per test, removed afterwards.
class TempDir {
public:
    TempDir() {
        path_ = fs::temp_directory_path() / ("memscope_native_" + std::to_string(::getpid()) + "_" +
                                             std::to_string(counter_++));
        fs::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    std::string file(const std::string& name) const { return (path_ / name).string(); }

private:
    static inline int counter_ = 0;
    fs::path path_;
};

Bytes readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Bytes b(chars.size());
    std::memcpy(b.data(), chars.data(), chars.size());
    return b;
}

void writeFile(const std::string& path, const Bytes& b) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

Event makeEvent(int64_t time, EventKind kind, uint64_t address, uint64_t size, StackId stack,
                PhaseId phase, uint32_t stream, int16_t device, Category category) {
    Event e;
    e.time = time;
    e.kind = kind;
    e.address = address;
    e.size = size;
    e.stack = stack;
    e.phase = phase;
    e.stream = stream;
    e.device = device;
    e.category = category;
    return e;
}

// A trace that uses every field, with edge values where the encoding has cases.
Trace sampleTrace(int event_count = 300) {
    Trace t;
    t.metadata.source_format = "pytorch-snapshot";
    t.metadata.name = "policy-block";
    t.metadata.time_base = TimeBase::Nanoseconds;
    t.metadata.pid = 4242;
    t.metadata.rank = 3;
    t.metadata.setProperty("model", "gpt2-small");
    t.metadata.setProperty("policy", "block");
    t.metadata.setProperty("empty", "");

    std::vector<FrameId> frames;
    for (int i = 0; i < 12; ++i) {
        const Frame f{t.internString("fn_" + std::to_string(i)),
                      t.internString("file_" + std::to_string(i % 3) + ".py"), uint32_t(i * 7)};
        frames.push_back(t.internFrame(f));
    }
    frames.push_back(
        t.internFrame(Frame{t.internString(std::string(300, 'x')), StringId(), 0xffffffffu}));
    std::vector<StackId> stacks{StackId()};
    for (int i = 0; i < 6; ++i) {
        std::vector<FrameId> s(frames.begin() + i, frames.begin() + i + 3 + i);
        stacks.push_back(t.internStack(s));
    }
    const uint32_t s1 = t.internStream(0x7f00deadbeefull);
    const uint32_t s2 = t.internStream(~0ull);

    Phase step;
    step.name = t.internString("step 0");
    step.kind = PhaseKind::Step;
    step.step = 0;
    step.start = 1000;
    step.end = 900000;
    const PhaseId step_id = t.addPhase(step);
    Phase fwd;
    fwd.name = t.internString("forward");
    fwd.kind = PhaseKind::Forward;
    fwd.parent = step_id;
    fwd.step = 0;
    fwd.block = 5;
    fwd.device = 1;
    fwd.start = 2000;
    fwd.end = 2000;  // still open
    const PhaseId fwd_id = t.addPhase(fwd);
    Phase odd;
    odd.name = t.internString("odd times");
    odd.start = INT64_MIN;
    odd.end = INT64_MAX;
    t.addPhase(odd);

    const EventKind kinds[] = {EventKind::Alloc,         EventKind::FreeRequested,
                               EventKind::FreeCompleted, EventKind::SegmentAlloc,
                               EventKind::SegmentFree,   EventKind::SegmentMap,
                               EventKind::SegmentUnmap,  EventKind::Oom,
                               EventKind::Snapshot,      EventKind::Marker};
    const uint64_t sizes[] = {0, 512, 1000, 4u << 20, (1ull << 63) + 1, ~0ull, 3 * 512};
    std::mt19937_64 rng(7);
    int64_t time = 1700000000000000000;
    for (int i = 0; i < event_count; ++i) {
        time += int64_t(rng() % 100000) - 1000;  // sometimes backwards
        const EventKind kind = kinds[rng() % 10];
        const uint64_t address =
            (i % 17 == 0) ? ~0ull - rng() % 3 : 0x7f0000000000ull + (rng() % 4096) * 512;
        const uint64_t size = sizes[rng() % 7];
        const PhaseId phase((rng() % 4 == 0) ? 0 : uint32_t(1 + rng() % 3));
        const uint32_t stream = (rng() % 3 == 0) ? s1 : (rng() % 2 ? s2 : 0);
        const auto device = int16_t(int(rng() % 5) - 1);
        t.events.push_back(makeEvent(time, kind, address, size, stacks[rng() % stacks.size()],
                                     phase, stream, device,
                                     kAllCategories[rng() % kCategoryCount]));
    }
    t.events.push_back(makeEvent(INT64_MIN, EventKind::Alloc, 0, 1, StackId(), PhaseId(), 0, -1,
                                 Category::Parameter));  // -1 (the host): the lowest device
    t.events.push_back(makeEvent(INT64_MAX, EventKind::FreeCompleted, ~0ull, ~0ull, stacks[2],
                                 fwd_id, 0, INT16_MAX, Category::Gradient));

    t.annotations.push_back(
        {1500, t.internString("record_function: fwd"), 0, AnnotationStage::Start});
    t.annotations.push_back({-5, t.internString("mark"), -1, AnnotationStage::Instant});
    t.annotations.push_back(
        {INT64_MAX, t.internString("record_function: fwd"), 0, AnnotationStage::End});
    t.attributes.push_back({0, t.internString("compile_context"), t.internString("torch.compile")});
    t.attributes.push_back({5, t.internString("user_metadata"), t.internString("{\"a\": 1}")});
    t.attributes.push_back({5, t.internString("device_free"), t.internString("123456")});

    // Modules and their scopes, with extreme times and every kind.
    ModuleInterner modules(t);
    const ModuleId attn = modules.intern("GPT", "h.0.attn", "CausalSelfAttention");
    const ModuleId other = modules.intern("Discriminator", "main.1");
    t.modules.source = ModuleSource::Recorded;
    t.modules.scopes.push_back({1000, 2000, attn, ModuleScopeKind::Forward});
    t.modules.scopes.push_back({INT64_MIN, INT64_MAX, other, ModuleScopeKind::Backward});
    t.modules.scopes.push_back({-7, -3, modules.intern("GPT", ""), ModuleScopeKind::Recompute});

    AllocatorState state;
    for (int s = 0; s < 3; ++s) {
        Segment seg;
        seg.address = 0x7f0000000000ull + uint64_t(s) * (64u << 20);
        seg.total_size = 20u << 20;
        seg.stream = s == 2 ? 0x7f00deadbeefull : 0;
        seg.pool_id_first = s;
        seg.pool_id_second = s * 2;
        seg.stack = stacks[s + 1];
        seg.first_block = uint32_t(s * 2);
        seg.block_count = 2;
        seg.device = int16_t(s);
        seg.expandable = s == 1;
        seg.large = s != 2;
        state.segments.push_back(seg);
        for (int b = 0; b < 2; ++b) {
            Block blk;
            blk.address = seg.address + uint64_t(b) * (10u << 20);
            blk.size = 10u << 20;
            blk.requested_size = (10u << 20) - 17;
            blk.stack = stacks[b];
            blk.state = static_cast<BlockState>((s + b) % 3);
            state.blocks.push_back(blk);
        }
    }
    t.allocator_state = state;
    return t;
}

void expectSameEvents(const std::vector<Event>& a, const std::vector<Event>& b, size_t n) {
    ASSERT_GE(a.size(), n);
    ASSERT_GE(b.size(), n);
    for (size_t i = 0; i < n; ++i) {
        SCOPED_TRACE("event " + std::to_string(i));
        EXPECT_EQ(a[i].time, b[i].time);
        EXPECT_EQ(a[i].address, b[i].address);
        EXPECT_EQ(a[i].size, b[i].size);
        EXPECT_EQ(a[i].stack, b[i].stack);
        EXPECT_EQ(a[i].phase, b[i].phase);
        EXPECT_EQ(a[i].stream, b[i].stream);
        EXPECT_EQ(a[i].device, b[i].device);
        EXPECT_EQ(a[i].kind, b[i].kind);
        EXPECT_EQ(a[i].category, b[i].category);
        if (::testing::Test::HasFailure()) return;
    }
}

void expectSameTrace(const Trace& a, const Trace& b) {
    EXPECT_EQ(a.metadata.source_format, b.metadata.source_format);
    EXPECT_EQ(a.metadata.name, b.metadata.name);
    EXPECT_EQ(a.metadata.time_base, b.metadata.time_base);
    EXPECT_EQ(a.metadata.pid, b.metadata.pid);
    EXPECT_EQ(a.metadata.rank, b.metadata.rank);
    EXPECT_EQ(a.metadata.properties, b.metadata.properties);

    ASSERT_EQ(a.strings.size(), b.strings.size());
    for (uint32_t i = 0; i < a.strings.size(); ++i)
        EXPECT_EQ(a.string(StringId(i)), b.string(StringId(i)));
    EXPECT_EQ(a.frames(), b.frames());
    ASSERT_EQ(a.stackCount(), b.stackCount());
    for (uint32_t i = 0; i < a.stackCount(); ++i) {
        const auto sa = a.stack(StackId(i));
        const auto sb = b.stack(StackId(i));
        EXPECT_TRUE(std::equal(sa.begin(), sa.end(), sb.begin(), sb.end())) << "stack " << i;
    }
    EXPECT_EQ(a.streams, b.streams);
    ASSERT_EQ(a.phases.size(), b.phases.size());
    for (size_t i = 0; i < a.phases.size(); ++i) {
        const Phase& x = a.phases[i];
        const Phase& y = b.phases[i];
        EXPECT_EQ(x.name, y.name);
        EXPECT_EQ(x.kind, y.kind);
        EXPECT_EQ(x.parent, y.parent);
        EXPECT_EQ(x.step, y.step);
        EXPECT_EQ(x.block, y.block);
        EXPECT_EQ(x.device, y.device);
        EXPECT_EQ(x.start, y.start);
        EXPECT_EQ(x.end, y.end);
    }
    EXPECT_EQ(a.modules.source, b.modules.source);
    ASSERT_EQ(a.modules.modules.size(), b.modules.modules.size());
    for (size_t i = 0; i < a.modules.modules.size(); ++i) {
        const Module& x = a.modules.modules[i];
        const Module& y = b.modules.modules[i];
        EXPECT_EQ(x.path, y.path);
        EXPECT_EQ(x.root, y.root);
        EXPECT_EQ(x.type, y.type);
        EXPECT_EQ(x.parent, y.parent);
        EXPECT_EQ(x.depth, y.depth);
    }
    ASSERT_EQ(a.modules.scopes.size(), b.modules.scopes.size());
    for (size_t i = 0; i < a.modules.scopes.size(); ++i) {
        EXPECT_EQ(a.modules.scopes[i].start, b.modules.scopes[i].start);
        EXPECT_EQ(a.modules.scopes[i].end, b.modules.scopes[i].end);
        EXPECT_EQ(a.modules.scopes[i].module, b.modules.scopes[i].module);
        EXPECT_EQ(a.modules.scopes[i].kind, b.modules.scopes[i].kind);
    }
    ASSERT_EQ(a.annotations.size(), b.annotations.size());
    for (size_t i = 0; i < a.annotations.size(); ++i) {
        EXPECT_EQ(a.annotations[i].time, b.annotations[i].time);
        EXPECT_EQ(a.annotations[i].name, b.annotations[i].name);
        EXPECT_EQ(a.annotations[i].device, b.annotations[i].device);
        EXPECT_EQ(a.annotations[i].stage, b.annotations[i].stage);
    }
    ASSERT_EQ(a.attributes.size(), b.attributes.size());
    for (size_t i = 0; i < a.attributes.size(); ++i) {
        EXPECT_EQ(a.attributes[i].event, b.attributes[i].event);
        EXPECT_EQ(a.attributes[i].key, b.attributes[i].key);
        EXPECT_EQ(a.attributes[i].value, b.attributes[i].value);
    }
    ASSERT_EQ(a.allocator_state.has_value(), b.allocator_state.has_value());
    if (a.allocator_state) {
        const AllocatorState& x = *a.allocator_state;
        const AllocatorState& y = *b.allocator_state;
        ASSERT_EQ(x.segments.size(), y.segments.size());
        for (size_t i = 0; i < x.segments.size(); ++i) {
            const Segment& s = x.segments[i];
            const Segment& r = y.segments[i];
            EXPECT_EQ(s.address, r.address);
            EXPECT_EQ(s.total_size, r.total_size);
            EXPECT_EQ(s.stream, r.stream);
            EXPECT_EQ(s.pool_id_first, r.pool_id_first);
            EXPECT_EQ(s.pool_id_second, r.pool_id_second);
            EXPECT_EQ(s.stack, r.stack);
            EXPECT_EQ(s.first_block, r.first_block);
            EXPECT_EQ(s.block_count, r.block_count);
            EXPECT_EQ(s.device, r.device);
            EXPECT_EQ(s.expandable, r.expandable);
            EXPECT_EQ(s.large, r.large);
        }
        ASSERT_EQ(x.blocks.size(), y.blocks.size());
        for (size_t i = 0; i < x.blocks.size(); ++i) {
            EXPECT_EQ(x.blocks[i].address, y.blocks[i].address);
            EXPECT_EQ(x.blocks[i].size, y.blocks[i].size);
            EXPECT_EQ(x.blocks[i].requested_size, y.blocks[i].requested_size);
            EXPECT_EQ(x.blocks[i].stack, y.blocks[i].stack);
            EXPECT_EQ(x.blocks[i].state, y.blocks[i].state);
        }
    }
    ASSERT_EQ(a.events.size(), b.events.size());
    expectSameEvents(a.events, b.events, a.events.size());
}

Result<Trace> readBytes(const Bytes& b, size_t n, NativeReadReport* report) {
    return readNativeTrace(std::span<const std::byte>(b.data(), n), {}, report);
}

struct ChunkInfo {
    size_t offset;
    size_t end;
    uint8_t type;
    uint32_t count;
};

// Walks the chunk headers as docs/FORMAT.md describes them.
std::vector<ChunkInfo> chunksOf(const Bytes& b) {
    std::vector<ChunkInfo> chunks;
    size_t at = 16;
    while (at + 20 <= b.size()) {
        const uint32_t stored = getLE32(b, at + 8);
        chunks.push_back(
            {at, at + 20 + stored, std::to_integer<uint8_t>(b[at]), getLE32(b, at + 4)});
        at += 20 + stored;
    }
    EXPECT_EQ(at, b.size());
    return chunks;
}

// A prefix varint, written independently of core (docs/FORMAT.md, "Varints").
std::vector<uint8_t> pv(uint64_t v) {
    int n = 1;
    while (n < 9 && (v >> (7 * n)) != 0) ++n;
    std::vector<uint8_t> out;
    if (n == 9) {
        out.push_back(0);
        for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i)));
        return out;
    }
    const uint64_t word = v << n | uint64_t(1) << (n - 1);
    for (int i = 0; i < n; ++i) out.push_back(uint8_t(word >> (8 * i)));
    return out;
}

std::vector<uint8_t> cat(std::initializer_list<std::vector<uint8_t>> parts) {
    std::vector<uint8_t> out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

Bytes fileHeader(uint16_t major = 1, uint16_t minor = 0) {
    Bytes b(16);
    std::memcpy(b.data(), "MEMSCOPE", 8);
    b[8] = std::byte(major & 0xff);
    b[9] = std::byte(major >> 8);
    b[10] = std::byte(minor & 0xff);
    b[11] = std::byte(minor >> 8);
    putLE32(b, 12, referenceCrc32c(b.data(), 12));
    return b;
}

// Appends an uncompressed chunk with a correct checksum.
void appendChunk(Bytes& file, uint8_t type, uint32_t count, const std::vector<uint8_t>& payload,
                 uint8_t flags = 0, uint32_t raw_size = UINT32_MAX) {
    const size_t at = file.size();
    file.resize(at + 20 + payload.size());
    file[at] = std::byte(type);
    file[at + 1] = std::byte(flags);
    putLE32(file, at + 4, count);
    putLE32(file, at + 8, uint32_t(payload.size()));
    putLE32(file, at + 12, raw_size == UINT32_MAX ? uint32_t(payload.size()) : raw_size);
    if (!payload.empty()) std::memcpy(file.data() + at + 20, payload.data(), payload.size());
    uint32_t crc = referenceCrc32c(file.data() + at, 16);
    crc = referenceCrc32c(payload.data(), payload.size(), crc);
    putLE32(file, at + 16, crc);
}

}  // namespace

TEST(NativeFormat, ReferenceChecksumAndVarintsMatchTheDocument) {
    EXPECT_EQ(referenceCrc32c("123456789", 9), 0xE3069283u);
    EXPECT_EQ(pv(0), (std::vector<uint8_t>{0x01}));
    EXPECT_EQ(pv(127), (std::vector<uint8_t>{0xff}));
    EXPECT_EQ(pv(300), (std::vector<uint8_t>{0xb2, 0x04}));
    EXPECT_EQ(pv(~0ull), (std::vector<uint8_t>{0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
}

TEST(NativeFormat, HandWrittenFileDecodesAsDocumented) {
    // An events chunk written from docs/FORMAT.md alone: pins the encoding, so
    // that files written today still load after the encoder changes.
    const auto column = [](std::initializer_list<std::vector<uint8_t>> values) {
        const std::vector<uint8_t> bytes = cat(values);
        return cat({pv(bytes.size()), bytes});
    };
    const std::vector<uint8_t> payload = cat({
        pv(0),
        pv(4),
        pv(1000),  // first index, count, time unit
        pv(2),     // palette: alloc/activation/device 1, free_completed/activation/device 1
        {0, 4},
        pv(2),
        pv(0),
        {2, 4},
        pv(2),
        pv(0),
        column({pv(0), pv(0), pv(1), pv(0)}),            // tag
        column({pv(10), pv(4), pv(1), pv(0)}),           // time: +5, +2, -1, +0 units
        column({pv(32), pv(5), pv(32), pv(1), pv(1)}),   // address: +8*512, +1, +8*512, escape -1
        column({pv(9), pv(4002), pv(9), pv(3), pv(7)}),  // size: 2*512, 1000, 2*512, escape 7
        column({pv(0), pv(0), pv(0), pv(0)}),            // stack: none
        column({pv(0), pv(0), pv(0), pv(0)}),            // phase: none
    });
    Bytes file = fileHeader();
    appendChunk(file, 10, 4, payload);
    NativeReadReport report;
    auto t = readBytes(file, file.size(), &report);
    ASSERT_TRUE(t) << t.message();
    EXPECT_EQ(report.problem, "");
    ASSERT_EQ(t->events.size(), 4u);
    const Event want[] = {
        makeEvent(5000, EventKind::Alloc, 0x1000, 1024, {}, {}, 0, 1, Category::Activation),
        makeEvent(7000, EventKind::Alloc, 0x1001, 1000, {}, {}, 0, 1, Category::Activation),
        makeEvent(6000, EventKind::FreeCompleted, 0x1000, 1024, {}, {}, 0, 1, Category::Activation),
        makeEvent(6000, EventKind::Alloc, 0x1000, 7, {}, {}, 0, 1, Category::Activation),
    };
    expectSameEvents(std::vector<Event>(std::begin(want), std::end(want)), t->events, 4);
}

TEST(NativeFormat, HandWrittenRecentAllocsChunkDecodesAsDocumented) {
    // Flag 2 (1.4): a free names one of its device's latest allocations, and
    // takes its size as the previous size.
    const auto column = [](std::initializer_list<std::vector<uint8_t>> values) {
        const std::vector<uint8_t> bytes = cat(values);
        return cat({pv(bytes.size()), bytes});
    };
    const auto payload = [&](uint64_t second_free_code) {
        return cat({
            cat({pv(0), pv(6), pv(1)}),  // first index, count, time unit
            // palette: alloc, free_requested, free_completed; parameters on device 0
            cat({pv(3), {0, 0}, pv(0), pv(0), {1, 0}, pv(0), pv(0), {2, 0}, pv(0), pv(0)}),
            column({pv(0), pv(0), pv(0), pv(1), pv(1), pv(2)}),  // tag
            column({pv(2), pv(2), pv(2), pv(2), pv(2), pv(2)}),  // time: +1 each
            // address: +16*512, +32*512, +8*512, then the newest alloc (k 0),
            // the second newest (k 1 or as given), and a repeat of the free (delta 0)
            column({pv(16 << 3), pv(32 << 3), pv(8 << 3), pv(0 << 2 | 2), pv(second_free_code),
                    pv(0)}),
            // size: 2*512, 3*512, 1*512, then the named allocation's size, 100,
            // and the previous size
            column(
                {pv(2 << 2 | 1), pv(3 << 2 | 1), pv(1 << 2 | 1), pv(0), pv(100 << 2 | 2), pv(0)}),
            column({pv(0), pv(0), pv(0), pv(0), pv(0), pv(0)}),  // stack
            column({pv(0), pv(0), pv(0), pv(0), pv(0), pv(0)}),  // phase
        });
    };
    const uint64_t a = 16 * 512, b = a + 32 * 512, c = b + 8 * 512;
    Bytes file = fileHeader(1, 4);
    appendChunk(file, 10, 6, payload(1 << 2 | 2), /*flags=*/2);
    NativeReadReport report;
    auto t = readBytes(file, file.size(), &report);
    ASSERT_TRUE(t) << t.message();
    EXPECT_EQ(report.problem, "");
    const Event want[] = {
        makeEvent(1, EventKind::Alloc, a, 1024, {}, {}, 0, 0, Category::Parameter),
        makeEvent(2, EventKind::Alloc, b, 1536, {}, {}, 0, 0, Category::Parameter),
        makeEvent(3, EventKind::Alloc, c, 512, {}, {}, 0, 0, Category::Parameter),
        makeEvent(4, EventKind::FreeRequested, c, 512, {}, {}, 0, 0, Category::Parameter),
        makeEvent(5, EventKind::FreeRequested, b, 100, {}, {}, 0, 0, Category::Parameter),
        makeEvent(6, EventKind::FreeCompleted, b, 100, {}, {}, 0, 0, Category::Parameter),
    };
    ASSERT_EQ(t->events.size(), 6u);
    expectSameEvents(std::vector<Event>(std::begin(want), std::end(want)), t->events, 6);

    // Without the flag the same bytes are deltas: 2 is +1*512, no reference.
    Bytes plain = fileHeader(1, 4);
    appendChunk(plain, 10, 6, payload(1 << 2 | 2));
    auto deltas = readBytes(plain, plain.size(), &report);
    ASSERT_TRUE(deltas) << deltas.message();
    ASSERT_EQ(deltas->events.size(), 6u);
    EXPECT_NE(deltas->events[3].address, c);

    // A reference past the window, a reserved mode, or the flag on a table
    // chunk stop the read at that chunk.
    for (const uint64_t bad : {uint64_t{16} << 2 | 2, uint64_t{3}}) {
        Bytes broken = fileHeader(1, 4);
        appendChunk(broken, 10, 6, payload(bad), /*flags=*/2);
        auto r = readBytes(broken, broken.size(), &report);
        ASSERT_TRUE(r) << r.message();
        EXPECT_TRUE(r->events.empty());
        EXPECT_NE(report.problem.find("bad address code"), std::string::npos) << report.problem;
    }
    Bytes flagged = fileHeader(1, 4);
    appendChunk(flagged, 2, 1, cat({pv(1), {'x'}}), /*flags=*/2);
    auto r = readBytes(flagged, flagged.size(), &report);
    ASSERT_TRUE(r) << r.message();
    EXPECT_NE(report.problem.find("unknown chunk flags 2"), std::string::npos) << report.problem;
}

TEST(NativeFormat, FreesOfRecentAllocationsAreNamedNotDeltaCoded) {
    // The writer's side of flag 2. Two traces of the same allocations, about
    // 64 live at a time: in one each free takes one of the 4 newest (a
    // temporary), in the other the oldest, which no 16-allocation window
    // reaches. Both round-trip; the named frees make the first far smaller.
    const auto build = [](bool newest) {
        Trace t;
        std::mt19937_64 rng(7);
        std::vector<std::pair<uint64_t, uint64_t>> live;
        int64_t time = 0;
        uint64_t next = 0x7f0000000000ull;
        for (int i = 0; i < 60000; ++i) {
            if (live.size() < 64 || rng() % 2) {
                const uint64_t size = 512 * (1 + rng() % 4096);
                live.emplace_back(next, size);
                t.events.push_back(makeEvent(time += 1000, EventKind::Alloc, next, size, {}, {}, 0,
                                             0, Category::Temporary));
                next += size + 512 * (rng() % 64);
            } else {
                const size_t k = newest ? live.size() - 1 - rng() % 4 : 0;
                const auto [address, size] = live[k];
                live.erase(live.begin() + std::ptrdiff_t(k));
                for (EventKind kind : {EventKind::FreeRequested, EventKind::FreeCompleted})
                    t.events.push_back(makeEvent(time += 1000, kind, address, size, {}, {}, 0, 0,
                                                 Category::Temporary));
            }
        }
        return t;
    };
    TempDir dir;
    uintmax_t newest_bytes = 0, oldest_bytes = 0;
    for (const bool newest : {true, false}) {
        const Trace original = build(newest);
        const std::string path = dir.file(newest ? "newest" : "oldest");
        ASSERT_TRUE(writeNativeTrace(original, path));
        auto loaded = readNativeTrace(path);
        ASSERT_TRUE(loaded) << loaded.message();
        expectSameEvents(original.events, loaded->events, original.events.size());
        (newest ? newest_bytes : oldest_bytes) = fs::file_size(path);
    }
    EXPECT_LT(double(newest_bytes), 0.85 * double(oldest_bytes))
        << newest_bytes << " vs " << oldest_bytes;
}

TEST(NativeFormat, RoundTripsEveryField) {
    TempDir dir;
    const Trace original = sampleTrace();
    const std::string path = dir.file("t.memscope");
    ASSERT_TRUE(writeNativeTrace(original, path));
    NativeReadReport report;
    auto loaded = readNativeTrace(path, {}, &report);
    ASSERT_TRUE(loaded) << loaded.message();
    EXPECT_EQ(report.problem, "");
    EXPECT_EQ(report.bytes_lost, 0u);
    EXPECT_EQ(report.bytes_total, fs::file_size(path));
    EXPECT_GT(report.chunks_read, 5u);
    expectSameTrace(original, *loaded);
}

TEST(NativeFormat, RoundTripsWithTinyChunksAndEmptyTrace) {
    TempDir dir;
    const Trace original = sampleTrace(1000);
    NativeWriterOptions options;
    options.events_per_chunk = 7;
    ASSERT_TRUE(writeNativeTrace(original, dir.file("a"), options));
    auto loaded = readNativeTrace(dir.file("a"));
    ASSERT_TRUE(loaded) << loaded.message();
    expectSameTrace(original, *loaded);

    Trace empty;
    ASSERT_TRUE(writeNativeTrace(empty, dir.file("b")));
    auto loaded_empty = readNativeTrace(dir.file("b"));
    ASSERT_TRUE(loaded_empty) << loaded_empty.message();
    expectSameTrace(empty, *loaded_empty);
}

TEST(NativeFormat, ModuleChunksDecodeAsDocumentedAndBadOnesStopTheRead) {
    // Strings "", "h.0", "GPT"; modules: root (""), then "h.0" under it; two scopes.
    const auto strings = cat({pv(1), pv(3), {'h', '.', '0'}, pv(3), {'G', 'P', 'T'}});
    const auto modules = cat({pv(1), {1}, pv(0), pv(2), pv(0), pv(0), pv(1), pv(2), pv(0), pv(1)});
    const auto zz = [](int64_t v) { return pv(uint64_t(v << 1) ^ uint64_t(v >> 63)); };
    const auto scopes = cat({zz(100), zz(50), pv(2), {1}, zz(-60), zz(200), pv(1), {0}});
    Bytes file = fileHeader(1, 2);
    appendChunk(file, 2, 2, strings);
    appendChunk(file, 13, 2, modules);
    appendChunk(file, 14, 2, scopes);
    NativeReadReport report;
    auto t = readBytes(file, file.size(), &report);
    ASSERT_TRUE(t) << t.message();
    EXPECT_EQ(report.problem, "");
    EXPECT_EQ(t->modules.source, ModuleSource::Recorded);
    ASSERT_EQ(t->modules.modules.size(), 2u);
    EXPECT_EQ(t->modules.modules[1].depth, 1);
    EXPECT_EQ(modulePath(*t, ModuleId(2)), "h.0");
    EXPECT_EQ(modulePath(*t, ModuleId(1)), "GPT");
    ASSERT_EQ(t->modules.scopes.size(), 2u);
    EXPECT_EQ(t->modules.scopes[0].start, 100);
    EXPECT_EQ(t->modules.scopes[0].end, 150);
    EXPECT_EQ(t->modules.scopes[0].kind, ModuleScopeKind::Recompute);
    EXPECT_EQ(t->modules.scopes[1].start, 40);
    EXPECT_EQ(t->modules.scopes[1].end, 240);
    EXPECT_EQ(t->modules.scopes[1].module, ModuleId(1));

    // A scope naming a module not read, a parent not earlier, an unknown
    // kind, an unknown source: each stops the read at that chunk.
    const std::vector<std::pair<uint8_t, std::vector<uint8_t>>> bad = {
        {14, cat({zz(0), zz(1), pv(3), {0}})},
        {14, cat({zz(0), zz(1), pv(1), {7}})},
        {13, cat({pv(3), {1}, pv(0), pv(2), pv(0), pv(4)})},
        {13, cat({pv(3), {9}, pv(0), pv(2), pv(0), pv(0)})},
    };
    for (const auto& [type, payload] : bad) {
        Bytes f = file;
        appendChunk(f, type, 1, payload);
        NativeReadReport r;
        auto loaded = readBytes(f, f.size(), &r);
        ASSERT_TRUE(loaded) << loaded.message();
        EXPECT_NE(r.problem, "") << int(type);
        EXPECT_EQ(loaded->modules.scopes.size(), 2u);
        EXPECT_EQ(loaded->modules.modules.size(), 2u);
    }
}

TEST(NativeFormat, StreamingWriterIdsAreTheReadersIds) {
    TempDir dir;
    TraceMetadata meta;
    meta.name = "stream";
    meta.time_base = TimeBase::EventIndex;
    auto created = NativeTraceWriter::create(dir.file("s"), meta, {.events_per_chunk = 5});
    ASSERT_TRUE(created) << created.message();
    NativeTraceWriter& w = **created;

    EXPECT_EQ(w.internString(""), StringId(0));
    const StringId fn = w.internString("matmul");
    const StringId file = w.internString("model.py");
    EXPECT_EQ(w.internString("matmul"), fn);
    const FrameId f1 = w.internFrame({fn, file, 3});
    const FrameId f2 = w.internFrame({file, fn, 4});
    EXPECT_EQ(f1, FrameId(1));
    EXPECT_EQ(w.internFrame({fn, file, 3}), f1);
    const std::vector<FrameId> st{f2, f1};
    const StackId stack = w.internStack(st);
    EXPECT_EQ(w.internStack({}), StackId(0));
    EXPECT_EQ(w.internStack(st), stack);
    const uint32_t stream = w.internStream(99);
    EXPECT_EQ(w.internStream(0), 0u);
    Phase p;
    p.name = w.internString("step 1");
    p.start = 10;
    p.end = 10;
    const PhaseId phase = w.addPhase(p);
    EXPECT_EQ(phase, PhaseId(1));
    w.setProperty("policy", "full");
    w.setProperty("policy", "selective");  // last value wins
    for (int i = 0; i < 23; ++i) {
        const uint64_t index = w.append(makeEvent(i, EventKind::Alloc, 4096 * i, 512, stack, phase,
                                                  stream, 0, Category::Activation));
        EXPECT_EQ(index, uint64_t(i));
        if (i == 11) {
            ASSERT_TRUE(w.flush());
        }
    }
    w.endPhase(phase, 22);
    w.addAttribute(20, w.internString("k"), w.internString("v"));
    w.addAttribute(3, w.internString("k"), w.internString("earlier"));
    w.addAttribute(1000, w.internString("k"), w.internString("no such event"));  // dropped
    AllocatorState first;
    first.segments.push_back(Segment{});
    w.setAllocatorState(first);
    w.setAllocatorState(AllocatorState{});  // the last one wins
    EXPECT_EQ(w.eventCount(), 23u);
    ASSERT_TRUE(w.close());
    ASSERT_TRUE(w.close());  // idempotent

    auto t = readNativeTrace(dir.file("s"));
    ASSERT_TRUE(t) << t.message();
    EXPECT_EQ(t->metadata.name, "stream");
    EXPECT_EQ(t->metadata.time_base, TimeBase::EventIndex);
    ASSERT_NE(t->metadata.property("policy"), nullptr);
    EXPECT_EQ(*t->metadata.property("policy"), "selective");
    EXPECT_EQ(t->string(fn), "matmul");
    EXPECT_EQ(t->frame(f2).function, file);
    ASSERT_EQ(t->stack(stack).size(), 2u);
    EXPECT_EQ(t->stack(stack)[0], f2);
    EXPECT_EQ(t->streams[stream], 99u);
    ASSERT_NE(t->phase(phase), nullptr);
    EXPECT_EQ(t->phase(phase)->end, 22);
    ASSERT_EQ(t->events.size(), 23u);
    EXPECT_EQ(t->events[22].address, 4096u * 22);
    EXPECT_EQ(t->events[22].stack, stack);
    ASSERT_EQ(t->attributes.size(), 2u);
    EXPECT_EQ(t->attributes[0].event, 3u);  // sorted by event
    EXPECT_EQ(t->string(t->attributes[1].value), "v");
    ASSERT_TRUE(t->allocator_state.has_value());
    EXPECT_TRUE(t->allocator_state->segments.empty());
}

TEST(NativeFormat, WriterStoresUnknownIdsAsNone) {
    TempDir dir;
    auto w = NativeTraceWriter::create(dir.file("u"), {});
    ASSERT_TRUE(w);
    (*w)->append(makeEvent(1, static_cast<EventKind>(200), 1, 1, StackId(77), PhaseId(9), 5, 0,
                           static_cast<Category>(99)));
    ASSERT_TRUE((*w)->close());
    auto t = readNativeTrace(dir.file("u"));
    ASSERT_TRUE(t) << t.message();
    ASSERT_EQ(t->events.size(), 1u);
    EXPECT_EQ(t->events[0].stack, StackId());
    EXPECT_EQ(t->events[0].phase, PhaseId());
    EXPECT_EQ(t->events[0].stream, 0u);
    EXPECT_EQ(t->events[0].kind, EventKind::Marker);
    EXPECT_EQ(t->events[0].category, Category::Unknown);
}

TEST(NativeFormat, EveryPrefixLoadsOrFailsCleanly) {
    TempDir dir;
    const Trace original = sampleTrace(120);
    ASSERT_TRUE(writeNativeTrace(original, dir.file("p"), {.events_per_chunk = 16}));
    const Bytes file = readFile(dir.file("p"));
    const std::vector<ChunkInfo> chunks = chunksOf(file);
    ASSERT_GT(chunks.size(), 10u);

    for (size_t n = 0; n <= file.size(); ++n) {
        SCOPED_TRACE("prefix of " + std::to_string(n) + " bytes");
        NativeReadReport report;
        auto t = readBytes(file, n, &report);
        if (n < 16) {
            ASSERT_FALSE(t);
            EXPECT_FALSE(t.message().empty());
            continue;
        }
        ASSERT_TRUE(t) << t.message();
        // The chunks that end within the prefix are exactly the ones kept.
        size_t whole = 0, events = 0, good_end = 16;
        for (const ChunkInfo& c : chunks) {
            if (c.end > n) break;
            ++whole;
            good_end = c.end;
            if (c.type == 10) events += c.count;
        }
        EXPECT_EQ(report.chunks_read, whole);
        EXPECT_EQ(report.bytes_lost, n - good_end);
        EXPECT_EQ(report.problem.empty(), n == good_end);
        ASSERT_EQ(t->events.size(), events);
        expectSameEvents(original.events, t->events, events);
        if (n == file.size()) expectSameTrace(original, *t);
        if (HasFailure()) return;
    }
}

TEST(NativeFormat, RandomByteFlipsLoadOrFailCleanly) {
    TempDir dir;
    const Trace original = sampleTrace(200);
    ASSERT_TRUE(writeNativeTrace(original, dir.file("f"), {.events_per_chunk = 32}));
    const Bytes file = readFile(dir.file("f"));
    std::mt19937 rng(1234);
    for (int iteration = 0; iteration < 3000; ++iteration) {
        Bytes damaged = file;
        const int flips = 1 + int(rng() % 3);
        size_t first = damaged.size();
        for (int k = 0; k < flips; ++k) {
            const size_t at = rng() % damaged.size();
            first = std::min(first, at);
            damaged[at] ^= std::byte(1 + rng() % 255);
        }
        NativeReadReport report;
        auto t = readBytes(damaged, damaged.size(), &report);
        if (first < 16) continue;  // a damaged header may fail; it must just not crash
        ASSERT_TRUE(t) << t.message();
        EXPECT_FALSE(report.problem.empty());
        EXPECT_GT(report.bytes_lost, 0u);
        ASSERT_LE(t->events.size(), original.events.size());
        expectSameEvents(original.events, t->events, t->events.size());
        if (HasFailure()) return;
    }
}

TEST(NativeFormat, BadHeadersAreErrors) {
    Bytes garbage{std::byte('P'), std::byte('K'), std::byte(3), std::byte(4)};
    auto a = readBytes(garbage, garbage.size(), nullptr);
    ASSERT_FALSE(a);
    EXPECT_NE(a.message().find("magic"), std::string::npos) << a.message();

    Bytes v2 = fileHeader(2, 0);
    auto b = readBytes(v2, v2.size(), nullptr);
    ASSERT_FALSE(b);
    EXPECT_NE(b.message().find("version 2.0"), std::string::npos) << b.message();

    Bytes damaged = fileHeader();
    damaged[9] = std::byte(1);
    auto c = readBytes(damaged, damaged.size(), nullptr);
    ASSERT_FALSE(c);
    EXPECT_NE(c.message().find("damaged"), std::string::npos) << c.message();

    Bytes newer_minor = fileHeader(1, 9);
    appendChunk(newer_minor, 200, 1, {1, 2, 3});  // a chunk type from the future: skipped
    NativeReadReport report;
    auto d = readBytes(newer_minor, newer_minor.size(), &report);
    ASSERT_TRUE(d) << d.message();
    EXPECT_EQ(report.chunks_read, 1u);
    EXPECT_EQ(report.problem, "");

    TempDir dir;
    auto missing = readNativeTrace(dir.file("nope"));
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.message().find("nope"), std::string::npos);
    writeFile(dir.file("empty"), {});
    EXPECT_FALSE(readNativeTrace(dir.file("empty")));
}

TEST(NativeFormat, HostileDeclaredLengthsAreBounded) {
    // A huge stored size: more than the file holds.
    Bytes a = fileHeader();
    appendChunk(a, 2, 1, cat({pv(1), pv(1), {'x'}}));  // strings: id 1 = "x"
    const size_t good = a.size();
    appendChunk(a, 10, 0xffffffffu, {0, 0});
    putLE32(a, good + 8, 0xfffffff0u);
    NativeReadReport report;
    auto t = readBytes(a, a.size(), &report);
    ASSERT_TRUE(t) << t.message();
    EXPECT_EQ(report.chunks_read, 1u);
    EXPECT_EQ(report.bytes_lost, a.size() - good);
    EXPECT_NE(report.problem.find("declares"), std::string::npos) << report.problem;

    // A huge raw size behind a valid checksum: refused before any allocation.
    Bytes b = fileHeader();
    appendChunk(b, 10, 0xffffffffu, {0x28, 0xb5, 0x2f, 0xfd}, /*flags=*/1, 0xfffffff0u);
    auto u = readBytes(b, b.size(), &report);
    ASSERT_TRUE(u);
    EXPECT_NE(report.problem.find("too large"), std::string::npos) << report.problem;

    // Counts and lengths inside valid chunks that lie.
    const std::vector<std::vector<uint8_t>> lies = {
        cat({pv(1), pv(0xffffffffu)}),          // strings: one of 4 GiB
        cat({pv(1), {0x80, 0xff}}),             // a varint longer than the payload
        cat({pv(0), pv(65535), pv(1), pv(1)}),  // events: 65535 from a few bytes
    };
    for (uint8_t type : {2, 3, 4, 5, 6, 7, 8, 9, 1, 10, 11}) {
        for (const auto& payload : lies) {
            for (uint32_t count : {1u, 65535u, 0xffffffffu}) {
                Bytes c = fileHeader();
                appendChunk(c, type, count, payload);
                auto r = readBytes(c, c.size(), &report);
                ASSERT_TRUE(r);
                // The one true statement here: stream 1 is 0xffffffff.
                if (type == 5 && count == 1 && payload == lies[0]) continue;
                EXPECT_FALSE(report.problem.empty()) << int(type);
                EXPECT_EQ(report.chunks_read, 0u);
            }
        }
    }
}

TEST(NativeFormat, RandomPayloadsWithValidChecksumsFailCleanly) {
    // Corruption the checksum cannot see (a buggy or hostile writer): every
    // decoder must reject it without reading out of bounds.
    TempDir dir;
    ASSERT_TRUE(writeNativeTrace(sampleTrace(50), dir.file("base")));
    const Bytes base = readFile(dir.file("base"));
    std::mt19937 rng(99);
    for (int iteration = 0; iteration < 4000; ++iteration) {
        Bytes file = base;
        std::vector<uint8_t> payload(rng() % 64);
        for (auto& byte : payload) byte = uint8_t(rng() % 4 == 0 ? rng() % 3 : rng());
        const auto type = uint8_t(1 + rng() % 11);
        // Events chunks in both codings.
        const uint8_t flags = type == 10 && rng() % 2 ? 2 : 0;
        appendChunk(file, type, rng() % 4 == 0 ? uint32_t(rng()) : uint32_t(rng() % 8), payload,
                    flags);
        NativeReadReport report;
        auto t = readBytes(file, file.size(), &report);
        ASSERT_TRUE(t) << t.message();
        EXPECT_GE(t->events.size(), 52u);
    }
}

TEST(NativeFormat, MutatedPayloadsWithValidChecksumsLoadOrStopCleanly) {
    // Real chunks, mutated behind a recomputed checksum: this reaches deep into
    // every decoder. Tiny chunks stay uncompressed (under 128 bytes), so the
    // mutations hit the encodings themselves.
    TempDir dir;
    ASSERT_TRUE(writeNativeTrace(sampleTrace(60), dir.file("m"), {.events_per_chunk = 3}));
    const Bytes base = readFile(dir.file("m"));
    std::vector<ChunkInfo> plain;
    for (const ChunkInfo& c : chunksOf(base))
        if ((std::to_integer<uint8_t>(base[c.offset + 1]) & 1) == 0 && c.end > c.offset + 20)
            plain.push_back(c);
    ASSERT_GT(plain.size(), 20u);
    std::mt19937 rng(5);
    for (int iteration = 0; iteration < 6000; ++iteration) {
        Bytes file = base;
        const ChunkInfo& c = plain[rng() % plain.size()];
        const size_t stored = c.end - c.offset - 20;
        for (int k = 0, flips = 1 + int(rng() % 3); k < flips; ++k)
            file[c.offset + 20 + rng() % stored] ^= std::byte(1 << (rng() % 8));
        uint32_t crc = referenceCrc32c(file.data() + c.offset, 16);
        crc = referenceCrc32c(file.data() + c.offset + 20, stored, crc);
        putLE32(file, c.offset + 16, crc);
        NativeReadReport report;
        auto t = readBytes(file, file.size(), &report);
        ASSERT_TRUE(t) << t.message();
        // Whatever loaded is consistent: every id an event holds exists.
        for (const Event& e : t->events) {
            ASSERT_LT(e.stack.value, t->stackCount());
            ASSERT_LE(e.phase.value, t->phases.size());
            ASSERT_LT(e.stream, t->streams.size());
        }
        for (const EventAttribute& a : t->attributes) ASSERT_LT(a.event, t->events.size());
    }
}

TEST(NativeFormat, LargeFilesDecodeInParallelAndStillStopAtABadChunk) {
    // Enough events for the parallel path (docs/FORMAT.md, "Reading").
    Trace big;
    const StackId stack = big.internStack(std::vector<FrameId>{
        big.internFrame({big.internString("f"), big.internString("x.py"), 1})});
    for (uint64_t i = 0; i < 300000; ++i)
        big.events.push_back(makeEvent(
            int64_t(i) * 1000, i % 3 ? EventKind::Alloc : EventKind::FreeCompleted,
            0x7f0000000000ull + (i % 977) * 512, 512 * (1 + i % 5), i % 2 ? stack : StackId(),
            PhaseId(), 0, int16_t(i % 2), Category::Activation));
    big.attributes.push_back({299999, big.internString("k"), big.internString("v")});
    TempDir dir;
    ASSERT_TRUE(writeNativeTrace(big, dir.file("big"), {.events_per_chunk = 4096}));
    Bytes file = readFile(dir.file("big"));
    NativeReadReport report;
    auto whole = readBytes(file, file.size(), &report);
    ASSERT_TRUE(whole) << whole.message();
    EXPECT_EQ(report.problem, "");
    expectSameTrace(big, *whole);

    // Chunk 7 of the events damaged (its checksum no longer matches): the
    // workers check events checksums, and the read still stops exactly there.
    {
        Bytes damaged = file;
        size_t nth = 0;
        for (const ChunkInfo& c : chunksOf(damaged)) {
            if (c.type != 10 || ++nth != 7) continue;
            damaged[c.offset + 20 + 5] ^= std::byte(0x5a);
            auto cut = readBytes(damaged, damaged.size(), &report);
            ASSERT_TRUE(cut) << cut.message();
            EXPECT_EQ(cut->events.size(), 6u * 4096);
            EXPECT_NE(report.problem.find("checksum mismatch"), std::string::npos)
                << report.problem;
            EXPECT_EQ(report.bytes_lost, damaged.size() - c.offset);
            EXPECT_TRUE(cut->attributes.empty());
            expectSameEvents(big.events, cut->events, cut->events.size());
            break;
        }
        EXPECT_EQ(nth, 7u);
    }

    // Chunk 10 of the events: valid checksum, undecodable payload.
    size_t seen = 0;
    for (const ChunkInfo& c : chunksOf(file)) {
        if (c.type != 10 || ++seen != 10) continue;
        const uint32_t stored = getLE32(file, c.offset + 8);
        for (size_t k = 0; k < stored; ++k) file[c.offset + 20 + k] = std::byte(0xee);
        file[c.offset + 1] = std::byte(0);     // not compressed
        putLE32(file, c.offset + 12, stored);  // raw size = stored size
        uint32_t crc = referenceCrc32c(file.data() + c.offset, 16);
        crc = referenceCrc32c(file.data() + c.offset + 20, stored, crc);
        putLE32(file, c.offset + 16, crc);
        auto cut = readBytes(file, file.size(), &report);
        ASSERT_TRUE(cut) << cut.message();
        EXPECT_EQ(cut->events.size(), 9u * 4096);
        EXPECT_NE(report.problem.find("events"), std::string::npos) << report.problem;
        EXPECT_EQ(report.bytes_lost, file.size() - c.offset);
        EXPECT_TRUE(cut->attributes.empty());
        expectSameEvents(big.events, cut->events, cut->events.size());
        break;
    }
    EXPECT_EQ(seen, 10u);
}

TEST(NativeFormat, ProgressAndCancel) {
    TempDir dir;
    ASSERT_TRUE(writeNativeTrace(sampleTrace(), dir.file("c")));
    std::atomic<bool> cancel{true};
    TaskContext ctx;
    ctx.cancel = &cancel;
    auto t = readNativeTrace(dir.file("c"), ctx);
    ASSERT_FALSE(t);
    EXPECT_NE(t.message().find("cancelled"), std::string::npos);

    uint64_t last_done = 0, last_total = 0;
    TaskContext progress;
    progress.progress = [&](uint64_t done, uint64_t total) {
        EXPECT_GE(done, last_done);
        last_done = done;
        last_total = total;
    };
    ASSERT_TRUE(readNativeTrace(dir.file("c"), progress));
    EXPECT_EQ(last_total, fs::file_size(dir.file("c")));
    EXPECT_EQ(last_done, last_total);
}

TEST(BackgroundTraceWriter, ManyThreads) {
    TempDir dir;
    TraceMetadata meta;
    meta.name = "threads";
    auto created = BackgroundTraceWriter::create(dir.file("bg"), meta, {.events_per_chunk = 1000},
                                                 std::chrono::milliseconds(5));
    ASSERT_TRUE(created) << created.message();
    BackgroundTraceWriter& w = **created;
    constexpr int kThreads = 4;
    constexpr int kEvents = 20000;
    std::vector<std::vector<StackId>> stacks(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kEvents; ++i) {
                if (i % 1000 == 0) {
                    // Shared and per-thread names, interned concurrently.
                    const StringId file = w.internString("shared.py");
                    const StringId fn =
                        w.internString("t" + std::to_string(t) + "_" + std::to_string(i));
                    const FrameId frame = w.internFrame({fn, file, uint32_t(i)});
                    const FrameId shared = w.internFrame({file, file, 1});
                    const std::vector<FrameId> s{frame, shared};
                    stacks[t].push_back(w.internStack(s));
                    w.internStream(uint64_t(t + 1));
                }
                if (i % 5000 == 4999) {
                    ASSERT_TRUE(w.flush());
                }
                // Address: thread and sequence, to check order per thread.
                w.append(makeEvent(i, EventKind::Alloc, uint64_t(t) << 32 | uint64_t(i), 512,
                                   stacks[t].back(), PhaseId(), 0, int16_t(t),
                                   Category::Temporary));
            }
        });
    }
    for (auto& th : threads) th.join();
    w.setProperty("done", "yes");
    ASSERT_TRUE(w.close());
    ASSERT_TRUE(w.close());

    auto trace = readNativeTrace(dir.file("bg"));
    ASSERT_TRUE(trace) << trace.message();
    ASSERT_EQ(trace->events.size(), size_t(kThreads * kEvents));
    std::vector<uint64_t> next(kThreads, 0);
    for (const Event& e : trace->events) {
        const auto t = size_t(e.address >> 32);
        ASSERT_LT(t, size_t(kThreads));
        ASSERT_EQ(e.address & 0xffffffff, next[t]);
        const StackId expected = stacks[t][next[t] / 1000];
        ASSERT_EQ(e.stack, expected);
        ++next[t];
    }
    // Ids handed out while other threads interned resolve to what was interned.
    const auto frames = trace->stack(stacks[2][7]);
    ASSERT_EQ(frames.size(), 2u);
    EXPECT_EQ(trace->string(trace->frame(frames[0]).function), "t2_7000");
    EXPECT_EQ(trace->streams.size(), size_t(kThreads + 1));
    ASSERT_NE(trace->metadata.property("done"), nullptr);
}

// A producer that numbers its phases itself hands them over in batches: ids,
// names, parents and ends come out as if added one by one; a batch whose first
// id is not the writer's next (someone else added phases) is refused whole.
TEST(BackgroundTraceWriter, PhaseBatchesKeepTheProducersIds) {
    TempDir dir;
    auto created = BackgroundTraceWriter::create(dir.file("phases"), TraceMetadata{});
    ASSERT_TRUE(created) << created.message();
    BackgroundTraceWriter& w = **created;
    const PhaseId first = w.nextPhaseId();
    ASSERT_EQ(first.value, 1u);
    Phase step;
    step.kind = PhaseKind::Step;
    step.step = 0;
    step.start = 10;
    step.end = 10;
    Phase forward = step;
    forward.kind = PhaseKind::Forward;
    forward.parent = first;
    forward.start = 11;
    forward.end = 15;
    const std::vector<Phase> batch{step, forward};
    const std::vector<std::string> names{"step 0", "step 0 / forward"};
    EXPECT_FALSE(w.addPhases(PhaseId(2), batch, names));                 // not the next id
    EXPECT_FALSE(w.addPhases(first, batch, std::span(names).first(1)));  // lengths differ
    ASSERT_TRUE(w.addPhases(first, batch, names));
    EXPECT_EQ(w.nextPhaseId().value, 3u);
    const std::vector<std::pair<PhaseId, int64_t>> ends{{first, 20}};
    w.endPhases(ends);
    EXPECT_FALSE(w.addPhases(first, batch, names));  // taken now
    ASSERT_TRUE(w.close());

    auto trace = readNativeTrace(dir.file("phases"));
    ASSERT_TRUE(trace) << trace.message();
    ASSERT_EQ(trace->phases.size(), 2u);
    EXPECT_EQ(trace->string(trace->phases[0].name), "step 0");
    EXPECT_EQ(trace->phases[0].end, 20);
    EXPECT_EQ(trace->string(trace->phases[1].name), "step 0 / forward");
    EXPECT_EQ(trace->phases[1].parent, first);
    EXPECT_EQ(trace->phases[1].kind, PhaseKind::Forward);
    EXPECT_EQ(trace->phases[1].end, 15);
}

namespace {

Event forkEvent(uint64_t i) {
    return makeEvent(int64_t(i) * 10, i % 2 ? EventKind::FreeCompleted : EventKind::Alloc,
                     0x1000 + (i / 2) * 512, 512 * (1 + i % 7), StackId(), PhaseId(), 0, 0,
                     Category::Activation);
}

// Waits up to `seconds` for `pid`; kills it and returns false if it hangs.
bool waitForChild(pid_t pid, int seconds, int* status) {
    for (int i = 0; i < seconds * 100; ++i) {
        if (::waitpid(pid, status, WNOHANG) == pid) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, status, 0);
    return false;
}

}  // namespace

TEST(BackgroundTraceWriter, ChildKilledMidRunLeavesALoadableFile) {
    TempDir dir;
    const std::string path = dir.file("killed.memscope");
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        ::close(fds[0]);
        auto w = BackgroundTraceWriter::create(path, TraceMetadata{}, {.events_per_chunk = 4096},
                                               std::chrono::milliseconds(20));
        if (!w) ::_exit(3);
        for (uint64_t i = 0;; ++i) {
            (*w)->append(forkEvent(i));
            if (i % 20000 == 19999) {
                if (!(*w)->flush()) ::_exit(4);
                const uint64_t flushed = i + 1;
                if (::write(fds[1], &flushed, sizeof flushed) != sizeof flushed) ::_exit(5);
            }
        }
    }
    ::close(fds[1]);
    uint64_t flushed = 0;
    for (int reports = 0; reports < 5; ++reports)
        ASSERT_EQ(::read(fds[0], &flushed, sizeof flushed), ssize_t(sizeof flushed));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(fds[0]);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;

    NativeReadReport report;
    auto trace = readNativeTrace(path, {}, &report);
    ASSERT_TRUE(trace) << trace.message();
    ASSERT_GE(trace->events.size(), flushed);
    for (size_t i = 0; i < trace->events.size(); ++i) {
        const Event want = forkEvent(i);
        ASSERT_EQ(trace->events[i].address, want.address) << i;
        ASSERT_EQ(trace->events[i].size, want.size) << i;
        ASSERT_EQ(trace->events[i].time, want.time) << i;
    }
}

TEST(BackgroundTraceWriter, ForkWhileWritingDoesNotDeadlockTheChild) {
    TempDir dir;
    auto created =
        BackgroundTraceWriter::create(dir.file("parent"), TraceMetadata{},
                                      {.events_per_chunk = 256}, std::chrono::milliseconds(1));
    ASSERT_TRUE(created);
    BackgroundTraceWriter* w = created->get();
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> appended{0};
    std::thread producer([&] {
        // Bursts with pauses: a producer at full speed would make every fork
        // copy a large, fast-growing process.
        for (uint64_t i = 0; !stop; ++i) {
            w->append(forkEvent(i));
            w->internString("s" + std::to_string(i % 1000));
            appended = i + 1;
            if (i % 64 == 63) std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
    });
    for (int round = 0; round < 20; ++round) {
        const pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            // The child's copy: usable, writes nothing, and goes away quietly.
            w->internString("child");
            w->append(forkEvent(0));
            const bool flush_refused = !w->flush();
            created->reset();
            ::_exit(flush_refused ? 0 : 7);
        }
        int status = 0;
        ASSERT_TRUE(waitForChild(pid, 20, &status)) << "the forked child hung";
        ASSERT_TRUE(WIFEXITED(status)) << status;
        ASSERT_EQ(WEXITSTATUS(status), 0);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    stop = true;
    producer.join();
    ASSERT_TRUE(w->close());
    auto trace = readNativeTrace(dir.file("parent"));
    ASSERT_TRUE(trace) << trace.message();
    EXPECT_EQ(trace->events.size(), appended.load());
}

TEST(NativeFormat, DevicesBelowTheHostStopTheRead) {
    TempDir dir;
    auto w = NativeTraceWriter::create(dir.file("d"), {});
    ASSERT_TRUE(w);
    (*w)->append(
        makeEvent(1, EventKind::Alloc, 0x10, 8, StackId(), PhaseId(), 0, -5, Category::Unknown));
    ASSERT_TRUE((*w)->close());
    NativeReadReport report;
    auto t = readNativeTrace(dir.file("d"), {}, &report);
    ASSERT_TRUE(t) << t.message();  // the metadata chunk before it is good
    EXPECT_TRUE(t->events.empty());
    EXPECT_NE(report.problem.find("device out of range"), std::string::npos) << report.problem;
}

TEST(NativePlugin, FoundByProbingAndReportsLoss) {
    TempDir dir;
    PluginRegistry registry;
    registerBuiltinPlugins(registry);
    ASSERT_NE(registry.importer("native"), nullptr);
    ASSERT_NE(registry.exporter("native"), nullptr);

    const Trace original = sampleTrace(100);
    auto exporter = registry.exporterForPath(dir.file("out.memscope"));
    ASSERT_TRUE(exporter) << exporter.message();
    EXPECT_EQ((*exporter)->id(), "native");
    // Any name: the magic decides.
    const std::string path = dir.file("no_extension.bin");
    ASSERT_TRUE((*exporter)->exportTrace(original, path, {}));

    auto importer = registry.importerFor(path);
    ASSERT_TRUE(importer) << importer.message();
    EXPECT_EQ((*importer)->id(), "native");
    std::vector<LoadWarning> warnings;
    TaskContext ctx;
    ctx.warnings = &warnings;
    auto loaded = registry.load(path, ctx);
    ASSERT_TRUE(loaded) << loaded.message();
    expectSameTrace(original, *loaded);
    EXPECT_TRUE(warnings.empty());

    // A damaged tail loads, and says so as a typed warning beside the trace,
    // never as text inside it (a converter would write that out).
    Bytes cut = readFile(path);
    cut.resize(cut.size() - 3);
    writeFile(dir.file("cut.memscope"), cut);
    auto partial = registry.load(dir.file("cut.memscope"), ctx);
    ASSERT_TRUE(partial) << partial.message();
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_EQ(warnings[0].kind, WarningKind::DamagedTail);
    EXPECT_NE(warnings[0].message.find("truncated"), std::string::npos) << warnings[0].message;
    EXPECT_GT(warnings[0].count, 0u);
    EXPECT_EQ(partial->metadata.properties, original.metadata.properties);

    Bytes bad = fileHeader(7, 0);
    writeFile(dir.file("v7.memscope"), bad);
    auto refused = registry.load(dir.file("v7.memscope"));
    ASSERT_FALSE(refused);
    // Named once, by the registry.
    const std::string name = dir.file("v7.memscope");
    EXPECT_EQ(refused.message().find(name), 0u) << refused.message();
    EXPECT_EQ(refused.message().find(name, 1), std::string::npos) << refused.message();
}
