// Hand-built CUPTI activity buffers, walked by the real cuptiActivityGetNextRecord
// (no driver needed) through the decoder the tracer uses.
#include "activity_decoder.h"

#include <cupti.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace memscope::cupti {
namespace {

struct Attribute {
    uint64_t event;
    std::string key;
    std::string value;
};

class CollectingSink : public EventSink {
public:
    std::vector<Event> events;
    std::vector<Attribute> attributes;
    std::vector<uint64_t> streams{0};
    std::map<uint32_t, StackId> stacks;  // correlation id -> stack
    std::vector<uint32_t> stack_requests;

    uint32_t stream(uint64_t raw) override {
        for (size_t i = 0; i < streams.size(); ++i)
            if (streams[i] == raw) return uint32_t(i);
        streams.push_back(raw);
        return uint32_t(streams.size() - 1);
    }
    StackId stackFor(uint32_t correlation) override {
        stack_requests.push_back(correlation);
        auto it = stacks.find(correlation);
        return it == stacks.end() ? StackId{} : it->second;
    }
    PhaseId phaseAt(int64_t time) override { return time >= 1000 ? PhaseId{7} : PhaseId{}; }
    uint64_t append(const Event& e) override {
        events.push_back(e);
        return events.size() - 1;
    }
    void attribute(uint64_t event, std::string_view key, std::string_view value) override {
        attributes.push_back({event, std::string(key), std::string(value)});
    }
    std::string attributeOf(uint64_t event, std::string_view key) const {
        for (const Attribute& a : attributes)
            if (a.event == event && a.key == key) return a.value;
        return "<none>";
    }
};

// A buffer built the way CUPTI fills one: records back to back, 8-aligned.
class Buffer {
public:
    Buffer() : bytes_(64 * 1024, 0) {}

    size_t memory(CUpti_ActivityMemoryOperationType op, uint64_t address, uint64_t size,
                  uint64_t time, uint32_t device = 0, uint32_t stream = 0, uint32_t correlation = 0,
                  CUpti_ActivityMemoryKind kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) {
        return put(memoryRecord(op, address, size, time, device, stream, correlation, kind));
    }
    // A cudaMallocAsync record: a tensor from the pool at `pool`, whose size
    // is then `pool_size`.
    size_t async(CUpti_ActivityMemoryOperationType op, uint64_t address, uint64_t size,
                 uint64_t time, uint64_t pool, uint64_t pool_size, uint32_t stream = 5) {
        CUpti_ActivityMemory4 r =
            memoryRecord(op, address, size, time, 0, stream, 0, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
        r.isAsync = 1;
        r.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
        r.memoryPoolConfig.address = pool;
        r.memoryPoolConfig.pool.size = pool_size;
        return put(r);
    }
    static CUpti_ActivityMemory4 memoryRecord(CUpti_ActivityMemoryOperationType op,
                                              uint64_t address, uint64_t size, uint64_t time,
                                              uint32_t device, uint32_t stream,
                                              uint32_t correlation, CUpti_ActivityMemoryKind kind) {
        CUpti_ActivityMemory4 r{};
        r.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
        r.memoryOperationType = op;
        r.memoryKind = kind;
        r.address = address;
        r.bytes = size;
        r.timestamp = time;
        r.deviceId = device;
        r.streamId = stream;
        r.correlationId = correlation;
        return r;
    }
    size_t put(const CUpti_ActivityMemory4& r) { return put(&r, sizeof(r)); }
    size_t pool(CUpti_ActivityMemoryPoolOperationType op, uint64_t address, uint64_t size,
                uint64_t time, uint32_t device) {
        CUpti_ActivityMemoryPool3 r{};
        r.kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL;
        r.memoryPoolOperationType = op;
        r.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
        r.address = address;
        r.size = size;
        r.utilizedSize = size / 2;
        r.releaseThreshold = 4096;
        r.timestamp = time;
        r.deviceId = device;
        return put(&r, sizeof(r));
    }
    size_t name(uint32_t id) {  // a kind CUPTI knows and we do not decode
        CUpti_ActivityName r{};
        r.kind = CUPTI_ACTIVITY_KIND_NAME;
        r.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
        r.objectId.pt.threadId = id;
        return put(&r, sizeof(r));
    }
    size_t unknownKind(size_t size) {
        std::vector<uint8_t> junk(size, 0xAB);
        const uint32_t kind = 0x7ffffff0;  // no such CUpti_ActivityKind
        std::memcpy(junk.data(), &kind, sizeof(kind));
        return put(junk.data(), junk.size());
    }

    uint8_t* data() { return bytes_.data(); }
    size_t size() const { return used_; }

private:
    size_t put(const void* record, size_t size) {
        std::memcpy(bytes_.data() + used_, record, size);
        used_ += (size + 7) & ~size_t(7);
        return used_;
    }
    std::vector<uint8_t> bytes_;
    size_t used_ = 0;
};

TEST(ActivityDecoder, AllocationsAndReleasesAreSegmentsByDefault) {
    Buffer b;
    b.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x7f0000000000, 2 << 20, 500, 1, 13,
             41);
    b.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 0x7f0000000000, 2 << 20, 1500, 1, 13,
             42);
    CollectingSink sink;
    const DecodeStats stats = decodeActivityBuffer(b.data(), b.size(), sink);

    EXPECT_EQ(stats.records, 2u);
    EXPECT_EQ(stats.memory_records, 2u);
    EXPECT_EQ(stats.undecodable_bytes, 0u);
    EXPECT_EQ(stats.last_time, 1500);
    ASSERT_EQ(sink.events.size(), 2u);
    const Event& a = sink.events[0];
    EXPECT_EQ(a.kind, EventKind::SegmentAlloc);
    EXPECT_EQ(a.time, 500);
    EXPECT_EQ(a.address, 0x7f0000000000u);
    EXPECT_EQ(a.size, uint64_t(2 << 20));
    EXPECT_EQ(a.device, 1);
    EXPECT_EQ(sink.streams[a.stream], 13u);
    EXPECT_TRUE(a.phase.isNull());  // before the phase the sink knows
    const Event& f = sink.events[1];
    EXPECT_EQ(f.kind, EventKind::SegmentFree);
    EXPECT_EQ(f.time, 1500);
    EXPECT_EQ(f.phase, PhaseId{7});
    // Only the allocation asks for a stack.
    EXPECT_EQ(sink.stack_requests, std::vector<uint32_t>{41});
    EXPECT_TRUE(sink.attributes.empty());  // device memory: no memory_kind
}

TEST(ActivityDecoder, TensorLevelAlsoEmitsLiveAllocations) {
    Buffer b;
    b.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x1000, 512, 10, 0, 0, 5);
    b.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 0x1000, 512, 20);
    CollectingSink sink;
    sink.stacks[5] = StackId{3};
    DecoderOptions options;
    options.tensor_level = true;
    decodeActivityBuffer(b.data(), b.size(), sink, options);

    ASSERT_EQ(sink.events.size(), 4u);
    EXPECT_EQ(sink.events[0].kind, EventKind::SegmentAlloc);
    EXPECT_EQ(sink.events[1].kind, EventKind::Alloc);
    EXPECT_EQ(sink.events[1].stack, StackId{3});
    EXPECT_EQ(sink.events[1].address, 0x1000u);
    EXPECT_EQ(sink.events[2].kind, EventKind::SegmentFree);
    EXPECT_EQ(sink.events[3].kind, EventKind::FreeCompleted);
    EXPECT_EQ(sink.events[3].size, 512u);
}

TEST(ActivityDecoder, HostMemoryIsDeviceMinusOneWithItsKind) {
    Buffer b;
    b.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x2000, 4096, 10, 0, 0, 0,
             CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
    CollectingSink sink;
    decodeActivityBuffer(b.data(), b.size(), sink);
    ASSERT_EQ(sink.events.size(), 1u);
    EXPECT_EQ(sink.events[0].device, -1);
    EXPECT_EQ(sink.attributeOf(0, "memory_kind"), "pinned");
}

TEST(ActivityDecoder, PoolSizeChangesAreSegmentsWithTheirFigures) {
    Buffer b;
    b.pool(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED, 0x9000, 1 << 30, 1200, 2);
    b.pool(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED, 0x9000, 1 << 20, 1300, 2);
    b.pool(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED, 0x9000, 1 << 20, 1350, 2);
    b.pool(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED, 0x9000, 1 << 20, 1400, 2);
    CollectingSink sink;
    const DecodeStats stats = decodeActivityBuffer(b.data(), b.size(), sink);
    EXPECT_EQ(stats.pool_records, 4u);
    ASSERT_EQ(sink.events.size(), 4u);
    // Created at 1 GiB: 1 GiB reserved.
    EXPECT_EQ(sink.events[0].kind, EventKind::SegmentAlloc);
    EXPECT_EQ(sink.events[0].address, 0x9000u);
    EXPECT_EQ(sink.events[0].device, 2);
    EXPECT_EQ(sink.events[0].size, uint64_t(1) << 30);
    EXPECT_EQ(sink.events[0].phase, PhaseId{7});
    EXPECT_EQ(sink.attributeOf(0, "pool_operation"), "created");
    EXPECT_EQ(sink.attributeOf(0, "pool_utilized_bytes"), std::to_string((1 << 30) / 2));
    EXPECT_EQ(sink.attributeOf(0, "pool_release_threshold"), "4096");
    // Trimmed to 1 MiB: the difference is given back.
    EXPECT_EQ(sink.events[1].kind, EventKind::SegmentFree);
    EXPECT_EQ(sink.events[1].size, uint64_t(1 << 30) - (1 << 20));
    EXPECT_EQ(sink.attributeOf(1, "pool_operation"), "trimmed");
    EXPECT_EQ(sink.attributeOf(1, "pool_size_bytes"), std::to_string(1 << 20));
    // No change: a marker that keeps the figures.
    EXPECT_EQ(sink.events[2].kind, EventKind::Marker);
    // Destroyed: the rest goes.
    EXPECT_EQ(sink.events[3].kind, EventKind::SegmentFree);
    EXPECT_EQ(sink.events[3].size, uint64_t(1) << 20);
    int64_t reserved = 0;
    for (const Event& e : sink.events)
        reserved += e.kind == EventKind::SegmentAlloc  ? int64_t(e.size)
                    : e.kind == EventKind::SegmentFree ? -int64_t(e.size)
                                                       : 0;
    EXPECT_EQ(reserved, 0);
}

TEST(ActivityDecoder, StreamOrderedAllocationsAreTensorsAndTheirPoolIsReserved) {
    Buffer b;
    // Two tensors from a pool that grows to 32 MiB for the first, stays for
    // the second, and shrinks to 0 after both are freed.
    b.async(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0xA000, 1 << 20, 1100, 0x5000,
            32 << 20);
    b.async(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0xB000, 2 << 20, 1200, 0x5000,
            32 << 20);
    b.async(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 0xA000, 0, 1300, 0x5000, 32 << 20);
    b.async(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 0xB000, 2 << 20, 1400, 0x5000, 0);
    CollectingSink sink;
    AllocationBook book;
    DecoderOptions options;
    options.book = &book;
    const DecodeStats stats = decodeActivityBuffer(b.data(), b.size(), sink, options);
    EXPECT_EQ(stats.async_records, 4u);

    std::vector<EventKind> kinds;
    for (const Event& e : sink.events) kinds.push_back(e.kind);
    const std::vector<EventKind> expected = {EventKind::SegmentAlloc,  EventKind::Alloc,
                                             EventKind::Alloc,         EventKind::FreeCompleted,
                                             EventKind::FreeCompleted, EventKind::SegmentFree};
    ASSERT_EQ(kinds, expected);
    EXPECT_EQ(sink.events[0].address, 0x5000u);  // the pool
    EXPECT_EQ(sink.events[0].size, uint64_t(32) << 20);
    EXPECT_EQ(sink.events[1].address, 0xA000u);
    EXPECT_EQ(sink.events[1].size, uint64_t(1) << 20);
    EXPECT_EQ(sink.streams[sink.events[1].stream], 5u);
    EXPECT_EQ(sink.attributeOf(1, "stream_ordered"), "1");
    EXPECT_EQ(sink.attributeOf(3, "stream_ordered"), "1");
    EXPECT_EQ(sink.events[3].size, uint64_t(1) << 20);  // the allocation's, not the record's 0
    EXPECT_EQ(sink.events[5].size, uint64_t(32) << 20);
    EXPECT_EQ(book.poolSize(0x5000), std::optional<uint64_t>(0));
    // Not segments even without tensor_level, and no duplicate when it is on.
    options.tensor_level = true;
    CollectingSink again;
    AllocationBook other;
    options.book = &other;
    decodeActivityBuffer(b.data(), b.size(), again, options);
    EXPECT_EQ(again.events.size(), 6u);
}

TEST(ActivityDecoder, PoolRecordsAndAsyncRecordsShareThePoolsSize) {
    // Sizes are remembered across buffers: created in one, grown in the next.
    AllocationBook book;
    DecoderOptions options;
    options.book = &book;
    Buffer first;
    first.pool(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED, 0x5000, 0, 1000, 0);
    Buffer second;
    second.async(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0xA000, 4096, 1100, 0x5000,
                 2 << 20);
    Buffer third;
    third.pool(CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED, 0x5000, 1 << 20, 1200, 0);
    CollectingSink sink;
    decodeActivityBuffer(first.data(), first.size(), sink, options);
    decodeActivityBuffer(second.data(), second.size(), sink, options);
    decodeActivityBuffer(third.data(), third.size(), sink, options);
    ASSERT_EQ(sink.events.size(), 4u);
    EXPECT_EQ(sink.events[0].kind, EventKind::Marker);  // created empty
    EXPECT_EQ(sink.events[1].kind, EventKind::SegmentAlloc);
    EXPECT_EQ(sink.events[1].size, uint64_t(2) << 20);
    EXPECT_EQ(sink.events[2].kind, EventKind::Alloc);
    EXPECT_EQ(sink.events[3].kind, EventKind::SegmentFree);
    EXPECT_EQ(sink.events[3].size, uint64_t(1) << 20);
}

TEST(ActivityDecoder, ReleaseSizeComesFromTheAllocationNotTheRecord) {
    AllocationBook book;
    DecoderOptions options;
    options.book = &book;
    options.tensor_level = true;
    Buffer allocs;
    allocs.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x1000, 8 << 20, 10, 0);
    allocs.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x1000, 4 << 20, 11, 1);
    Buffer releases;  // a later buffer, with byte counts that disagree
    releases.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 0x1000, 0, 20, 0);
    releases.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 0x1000, 123, 21, 1);
    releases.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 0x1000, 777, 22, 0);
    CollectingSink sink;
    decodeActivityBuffer(allocs.data(), allocs.size(), sink, options);
    const DecodeStats stats = decodeActivityBuffer(releases.data(), releases.size(), sink, options);
    ASSERT_EQ(sink.events.size(), 10u);
    EXPECT_EQ(sink.events[4].kind, EventKind::SegmentFree);
    EXPECT_EQ(sink.events[4].size, uint64_t(8) << 20);  // device 0's allocation
    EXPECT_EQ(sink.events[5].kind, EventKind::FreeCompleted);
    EXPECT_EQ(sink.events[5].size, uint64_t(8) << 20);
    EXPECT_EQ(sink.events[6].size, uint64_t(4) << 20);  // device 1's, same address
    // Released twice: the second is unknown, keeps its bytes, and is counted.
    EXPECT_EQ(sink.events[8].size, 777u);
    EXPECT_EQ(stats.unknown_releases, 1u);
    EXPECT_EQ(book.unknownReleases(), 1u);
    EXPECT_EQ(book.liveAllocations(), 0u);
}

TEST(ActivityDecoder, InvalidStreamIdIsNoStream) {
    Buffer b;
    b.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x1000, 64, 10, 0,
             CUPTI_INVALID_STREAM_ID);
    b.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x2000, 64, 11, 0, 9);
    CollectingSink sink;
    decodeActivityBuffer(b.data(), b.size(), sink);
    ASSERT_EQ(sink.events.size(), 2u);
    EXPECT_EQ(sink.events[0].stream, 0u);
    EXPECT_EQ(sink.streams, (std::vector<uint64_t>{0, 9}));  // never interned
    EXPECT_EQ(sink.events[1].stream, 1u);
}

TEST(ActivityDecoder, OtherKindsAreSkippedNotLost) {
    Buffer b;
    b.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x1000, 64, 10);
    b.name(99);
    b.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 0x1000, 64, 20);
    CollectingSink sink;
    const DecodeStats stats = decodeActivityBuffer(b.data(), b.size(), sink);
    EXPECT_EQ(stats.records, 3u);
    EXPECT_EQ(stats.other_records, 1u);
    EXPECT_EQ(stats.undecodable_bytes, 0u);
    ASSERT_EQ(sink.events.size(), 2u);
    EXPECT_EQ(sink.events[1].kind, EventKind::SegmentFree);
}

TEST(ActivityDecoder, TruncatedLastRecordIsAVisibleGap) {
    Buffer b;
    b.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x1000, 64, 10);
    const size_t first_end =
        b.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x2000, 64, 30);
    b.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x3000, 64, 50);
    const size_t cut = first_end + sizeof(CUpti_ActivityMemory4) / 2;  // half of the third record
    CollectingSink sink;
    const DecodeStats stats = decodeActivityBuffer(b.data(), cut, sink);

    EXPECT_EQ(stats.memory_records, 2u);
    EXPECT_EQ(stats.undecodable_bytes, cut - first_end);
    ASSERT_EQ(sink.events.size(), 3u);
    const Event& gap = sink.events[2];
    EXPECT_EQ(gap.kind, EventKind::Marker);
    EXPECT_EQ(gap.time, 30);  // placed after the last record decoded
    EXPECT_EQ(sink.attributeOf(2, "undecodable_bytes"), std::to_string(cut - first_end));
}

TEST(ActivityDecoder, BufferShorterThanOneRecordIsAllGap) {
    Buffer b;
    b.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x1000, 64, 10);
    CollectingSink sink;
    const DecodeStats stats = decodeActivityBuffer(b.data(), 40, sink);
    EXPECT_EQ(stats.records, 0u);
    EXPECT_EQ(stats.undecodable_bytes, 40u);
    ASSERT_EQ(sink.events.size(), 1u);
    EXPECT_EQ(sink.attributeOf(0, "undecodable_bytes"), "40");
}

TEST(ActivityDecoder, UnknownKindStopsTheWalkAndIsReported) {
    Buffer b;
    const size_t good_end =
        b.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x1000, 64, 10);
    b.unknownKind(96);
    b.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 0x1000, 64, 20);
    CollectingSink sink;
    const DecodeStats stats = decodeActivityBuffer(b.data(), b.size(), sink);

    EXPECT_EQ(stats.memory_records, 1u);
    EXPECT_EQ(stats.undecodable_bytes, b.size() - good_end);
    ASSERT_EQ(sink.events.size(), 2u);
    EXPECT_EQ(sink.events[0].kind, EventKind::SegmentAlloc);
    EXPECT_EQ(sink.events[1].kind, EventKind::Marker);
    EXPECT_EQ(sink.attributeOf(1, "undecodable_bytes"), std::to_string(b.size() - good_end));
}

TEST(ActivityDecoder, EmptyOrNullBufferDecodesNothing) {
    CollectingSink sink;
    Buffer b;
    EXPECT_EQ(decodeActivityBuffer(nullptr, 100, sink).records, 0u);
    EXPECT_EQ(decodeActivityBuffer(b.data(), 0, sink).records, 0u);
    EXPECT_TRUE(sink.events.empty());
}

TEST(ActivityDecoder, DroppedRecordsBecomeAMarkedGap) {
    CollectingSink sink;
    const uint64_t index = appendDroppedMarker(sink, 2500, 17);
    ASSERT_EQ(sink.events.size(), 1u);
    EXPECT_EQ(index, 0u);
    EXPECT_EQ(sink.events[0].kind, EventKind::Marker);
    EXPECT_EQ(sink.events[0].time, 2500);
    EXPECT_EQ(sink.events[0].phase, PhaseId{7});
    EXPECT_EQ(sink.attributeOf(0, "dropped_records"), "17");
}

TEST(ActivityDecoder, ManyRecordsFillingABuffer) {
    Buffer b;
    uint64_t expected_bytes = 0;
    for (int i = 0; i < 400; ++i) {
        b.memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x100000 + i * 0x1000, 256 + i,
                 100 + i);
        expected_bytes += 256 + i;
    }
    CollectingSink sink;
    const DecodeStats stats = decodeActivityBuffer(b.data(), b.size(), sink);
    EXPECT_EQ(stats.memory_records, 400u);
    EXPECT_EQ(stats.undecodable_bytes, 0u);
    uint64_t bytes = 0;
    for (const Event& e : sink.events) bytes += e.size;
    EXPECT_EQ(bytes, expected_bytes);
}

}  // namespace
}  // namespace memscope::cupti
