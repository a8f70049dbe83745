#include "activity_decoder.h"

#include <cupti.h>

#include <charconv>
#include <cstring>
#include <string>

namespace memscope::cupti {
namespace {

std::string_view memoryKindName(CUpti_ActivityMemoryKind kind) {
    switch (kind) {
        case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE:
            return "pageable";
        case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
            return "pinned";
        case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
            return "device";
        case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
            return "array";
        case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
            return "managed";
        case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
            return "device_static";
        case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
            return "managed_static";
        default:
            return "unknown";
    }
}

bool isHostMemory(CUpti_ActivityMemoryKind kind) {
    return kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE || kind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
}

std::string_view poolOperationName(CUpti_ActivityMemoryPoolOperationType op) {
    switch (op) {
        case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED:
            return "created";
        case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED:
            return "destroyed";
        case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED:
            return "trimmed";
        default:
            return "unknown";
    }
}

std::string decimal(uint64_t value) {
    char text[24];
    auto [end, ec] = std::to_chars(text, text + sizeof(text), value);
    return std::string(text, end);
}

int16_t deviceOrdinal(uint32_t device_id) {
    return device_id > 0x7fff ? int16_t(-1) : static_cast<int16_t>(device_id);
}

// CUPTI's "no stream" (a synchronous allocation) is not a stream: index 0.
uint32_t streamIndex(EventSink& sink, uint32_t raw_stream) {
    return raw_stream == CUPTI_INVALID_STREAM_ID ? 0u : sink.stream(raw_stream);
}

class Decoder {
public:
    Decoder(EventSink& sink, const DecoderOptions& options, AllocationBook& book,
            DecodeStats& stats)
        : sink_(sink), options_(options), book_(book), stats_(stats) {}

    void memory(const CUpti_ActivityMemory4& r) {
        ++stats_.memory_records;
        const bool alloc = r.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
        if (!alloc && r.memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) return;

        Event e;
        e.time = static_cast<int64_t>(r.timestamp);
        e.address = r.address;
        e.size = r.bytes;
        e.device = isHostMemory(r.memoryKind) ? int16_t(-1) : deviceOrdinal(r.deviceId);
        e.stream = streamIndex(sink_, r.streamId);
        e.phase = sink_.phaseAt(e.time);
        // Stacks are captured at the API call and joined here by correlation id;
        // only allocations carry one (a free's stack says little).
        if (alloc) e.stack = sink_.stackFor(r.correlationId);
        noteTime(e.time);
        // A release gives back what was allocated at its address: its own byte
        // count is not trusted for the reserved curve. An address never seen
        // (allocated before recording began) keeps the record's count.
        if (alloc) {
            book_.allocated(e.device, e.address, e.size);
        } else if (const auto bytes = book_.released(e.device, e.address)) {
            e.size = *bytes;
        } else {
            ++stats_.unknown_releases;
        }
        if (r.isAsync) {
            streamOrdered(r, e, alloc);
            return;
        }

        // A CUDA allocation is reserved memory (a segment) in allocator terms;
        // without a caching allocator in between it is also the tensor itself.
        e.kind = alloc ? EventKind::SegmentAlloc : EventKind::SegmentFree;
        const uint64_t index = append(e);
        if (r.memoryKind != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE)
            sink_.attribute(index, "memory_kind", memoryKindName(r.memoryKind));
        if (options_.tensor_level) {
            e.kind = alloc ? EventKind::Alloc : EventKind::FreeCompleted;
            append(e);
        }
    }

    void pool(const CUpti_ActivityMemoryPool3& r) {
        ++stats_.pool_records;
        Event e;
        e.kind = EventKind::Marker;
        e.time = static_cast<int64_t>(r.timestamp);
        e.address = r.address;
        e.size = r.size;
        e.device = deviceOrdinal(r.deviceId);
        e.phase = sink_.phaseAt(e.time);
        noteTime(e.time);
        // A local pool's size is memory this process holds: its changes are
        // reserved bytes. An imported pool's memory is another process's.
        int64_t change = 0;
        const bool destroyed =
            r.memoryPoolOperationType == CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED;
        if (r.memoryPoolType == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL) {
            change = book_.poolResized(r.address, destroyed ? 0 : r.size);
            if (destroyed) book_.poolDestroyed(r.address);
        }
        if (change != 0) {
            e.kind = change > 0 ? EventKind::SegmentAlloc : EventKind::SegmentFree;
            e.size = magnitude(change);
        }
        const uint64_t index = append(e);
        sink_.attribute(index, "pool_operation", poolOperationName(r.memoryPoolOperationType));
        sink_.attribute(index, "pool_size_bytes", decimal(destroyed ? 0 : r.size));
        sink_.attribute(index, "pool_utilized_bytes", decimal(r.utilizedSize));
        sink_.attribute(index, "pool_release_threshold", decimal(r.releaseThreshold));
        if (r.isManagedPool) sink_.attribute(index, "pool_managed", "1");
    }

    void undecodable(uint64_t bytes) {
        stats_.undecodable_bytes += bytes;
        Event e;
        e.kind = EventKind::Marker;
        e.time = stats_.last_time;
        e.phase = sink_.phaseAt(e.time);
        const uint64_t index = append(e);
        sink_.attribute(index, "undecodable_bytes", decimal(bytes));
    }

private:
    static uint64_t magnitude(int64_t change) {
        return change < 0 ? uint64_t(0) - uint64_t(change) : uint64_t(change);
    }

    // cudaMallocAsync and friends: each record is one tensor-sized allocation
    // carved from a memory pool, so it is a live allocation, never a segment.
    // What the process reserves is the pool's size, which the record carries:
    // its changes (the pool grew to serve this allocation, or shrank after
    // this free) are the segment events. CUPTI has no record of its own for a
    // pool growing, and the device's default pool has no "created" record.
    void streamOrdered(const CUpti_ActivityMemory4& r, Event e, bool alloc) {
        ++stats_.async_records;
        const auto& pool = r.memoryPoolConfig;
        const bool local_pool =
            pool.memoryPoolType == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL && pool.address != 0;
        auto poolChange = [&] {
            if (!local_pool) return;
            const int64_t change = book_.poolResized(pool.address, pool.pool.size);
            if (change == 0) return;
            Event s = e;
            s.kind = change > 0 ? EventKind::SegmentAlloc : EventKind::SegmentFree;
            s.address = pool.address;
            s.size = magnitude(change);
            s.stack = StackId{};
            const uint64_t index = append(s);
            sink_.attribute(index, "pool_size_bytes", decimal(pool.pool.size));
        };
        if (alloc) poolChange();
        e.kind = alloc ? EventKind::Alloc : EventKind::FreeCompleted;
        const uint64_t index = append(e);
        sink_.attribute(index, "stream_ordered", "1");
        if (r.memoryKind != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE)
            sink_.attribute(index, "memory_kind", memoryKindName(r.memoryKind));
        if (!alloc) poolChange();
    }

    uint64_t append(const Event& e) {
        ++stats_.events;
        return sink_.append(e);
    }
    void noteTime(int64_t t) {
        if (t > stats_.last_time) stats_.last_time = t;
    }

    EventSink& sink_;
    const DecoderOptions& options_;
    AllocationBook& book_;
    DecodeStats& stats_;
};

// Size of the records we decode, as laid out by the headers we compiled
// against; 0 for kinds we only skip (CUPTI knows their size, we need not).
size_t knownRecordSize(CUpti_ActivityKind kind) {
    switch (kind) {
        case CUPTI_ACTIVITY_KIND_MEMORY2:
            return sizeof(CUpti_ActivityMemory4);
        case CUPTI_ACTIVITY_KIND_MEMORY_POOL:
            return sizeof(CUpti_ActivityMemoryPool3);
        default:
            return 0;
    }
}

// A newer libcupti may append fields to a record; then the compiled sizes do
// not tell where the last record ends and the tail check is skipped.
bool recordSizesTrusted() {
    static const bool trusted = [] {
        uint32_t version = 0;
        return cuptiGetVersion(&version) == CUPTI_SUCCESS && version == CUPTI_API_VERSION;
    }();
    return trusted;
}

}  // namespace

DecodeStats decodeActivityBuffer(uint8_t* buffer, size_t valid_size, EventSink& sink,
                                 const DecoderOptions& options) {
    DecodeStats stats;
    if (!buffer || valid_size == 0) return stats;
    AllocationBook this_buffer_only;
    Decoder decoder(sink, options, options.book ? *options.book : this_buffer_only, stats);

    size_t decoded_end = 0;  // end of the last record whose size we know
    bool end_known = true;   // false after a record of a kind we only skip
    CUpti_Activity* record = nullptr;
    CUptiResult status = CUPTI_SUCCESS;
    while ((status = cuptiActivityGetNextRecord(buffer, valid_size, &record)) == CUPTI_SUCCESS) {
        ++stats.records;
        const auto* start = reinterpret_cast<const uint8_t*>(record);
        const size_t offset = static_cast<size_t>(start - buffer);
        const size_t size = knownRecordSize(record->kind);
        if (size == 0) {
            ++stats.other_records;
            decoded_end = offset;
            end_known = false;
            continue;
        }
        if (offset + size > valid_size) break;  // never read past the valid bytes
        decoded_end = offset + size;
        end_known = true;
        // memcpy: records are packed in a byte buffer; no aliasing assumptions.
        if (record->kind == CUPTI_ACTIVITY_KIND_MEMORY2) {
            CUpti_ActivityMemory4 r;
            std::memcpy(&r, start, sizeof(r));
            decoder.memory(r);
        } else {
            CUpti_ActivityMemoryPool3 r;
            std::memcpy(&r, start, sizeof(r));
            decoder.pool(r);
        }
    }

    // The walk ends with MAX_LIMIT_REACHED at the end of the buffer, also when
    // the last record is cut off; INVALID_KIND means a record CUPTI does not
    // know, after which nothing can be decoded.
    uint64_t lost = 0;
    if (status == CUPTI_ERROR_INVALID_KIND) {
        lost = valid_size - decoded_end;
    } else if (end_known && decoded_end < valid_size &&
               (stats.records == 0 || recordSizesTrusted())) {
        lost = valid_size - decoded_end;
    }
    if (lost > 0) decoder.undecodable(lost);
    return stats;
}

uint64_t appendDroppedMarker(EventSink& sink, int64_t time, uint64_t dropped) {
    Event e;
    e.kind = EventKind::Marker;
    e.time = time;
    e.phase = sink.phaseAt(time);
    const uint64_t index = sink.append(e);
    sink.attribute(index, "dropped_records", decimal(dropped));
    return index;
}

}  // namespace memscope::cupti
