#include "native_test_util.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <random>

namespace memscope::native_test {

uint32_t referenceCrc32c(const void* data, size_t n, uint32_t crc) {
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

// A trace that uses every field, with edge values where the encoding has cases.
Trace sampleTrace(int event_count) {
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
        t.events.push_back(
            makeEvent(time, kind, address, size, kAllCategories[rng() % kCategoryCount])
                .stack(stacks[rng() % stacks.size()])
                .phase(phase)
                .stream(stream)
                .device(device));
    }
    t.events.push_back(makeEvent(INT64_MIN, EventKind::Alloc, 0, 1, Category::Parameter)
                           .device(-1));  // -1 (the host): the lowest device
    t.events.push_back(
        makeEvent(INT64_MAX, EventKind::FreeCompleted, ~0ull, ~0ull, Category::Gradient)
            .stack(stacks[2])
            .phase(fwd_id)
            .device(INT16_MAX));

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
    // Recorded ops, nested, with extreme times and the deepest depth kept.
    t.ops.source = OpSource::Recorded;
    t.ops.scopes.push_back({1000, 1900, t.strings.intern("aten::linear"), 0});
    t.ops.scopes.push_back({1100, 1800, t.strings.intern("aten::addmm"), 1});
    t.ops.scopes.push_back({INT64_MIN, INT64_MAX, t.strings.intern("aten::_softmax"), kMaxOpDepth});

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
    EXPECT_EQ(a.ops.source, b.ops.source);
    ASSERT_EQ(a.ops.scopes.size(), b.ops.scopes.size());
    for (size_t i = 0; i < a.ops.scopes.size(); ++i) {
        EXPECT_EQ(a.ops.scopes[i].start, b.ops.scopes[i].start);
        EXPECT_EQ(a.ops.scopes[i].end, b.ops.scopes[i].end);
        EXPECT_EQ(a.strings.get(a.ops.scopes[i].name), b.strings.get(b.ops.scopes[i].name));
        EXPECT_EQ(a.ops.scopes[i].depth, b.ops.scopes[i].depth);
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
    EXPECT_EQ(a.prediction, b.prediction);
    EXPECT_EQ(a.digest, b.digest);
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

Bytes fileHeader(uint16_t major, uint16_t minor) {
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
                 uint8_t flags, uint32_t raw_size) {
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

}  // namespace memscope::native_test
