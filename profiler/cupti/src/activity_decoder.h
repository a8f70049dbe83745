#pragma once
// Turns one completed CUPTI activity buffer into memscope Events. Walks the
// buffer with the real cuptiActivityGetNextRecord (works without a driver), so
// the tests exercise exactly the path the tracer uses.

#include <cstddef>
#include <cstdint>

#include "allocation_book.h"
#include "event_sink.h"

namespace memscope::cupti {

struct DecoderOptions {
    // false: a CUDA allocation is a segment (what a caching allocator reserves);
    // true: it is also a live allocation (PYTORCH_NO_CUDA_MEMORY_CACHING=1).
    // cudaMallocAsync allocations are live allocations either way: the
    // reserved memory behind them is their pool's.
    bool tensor_level = false;
    // Sizes remembered across buffers (the tracer's, for the whole run); null:
    // a book for this buffer alone (tests of one buffer).
    AllocationBook* book = nullptr;
};

struct DecodeStats {
    uint64_t records = 0;            // records walked
    uint64_t memory_records = 0;     // Memory4 decoded
    uint64_t pool_records = 0;       // MemoryPool3 decoded
    uint64_t other_records = 0;      // known to CUPTI, not ours: skipped
    uint64_t events = 0;             // events appended
    uint64_t undecodable_bytes = 0;  // after an invalid record or a truncated tail
    uint64_t async_records = 0;      // stream-ordered (cudaMallocAsync) Memory4
    uint64_t unknown_releases = 0;   // releases of an address never seen allocated
    int64_t last_time = 0;           // newest timestamp seen (0 = none)
};

// `valid_size` is the completion callback's validSize. Never reads past it.
// When the walk stops early (unknown kind, truncated record) the bytes left
// are counted and a Marker event with attribute "undecodable_bytes" is
// appended, so the loss shows in the trace.
DecodeStats decodeActivityBuffer(uint8_t* buffer, size_t valid_size, EventSink& sink,
                                 const DecoderOptions& options = {});

// A Marker with attribute "dropped_records" = count: a visible gap where CUPTI
// had no buffer space. Returns the marker's event index.
uint64_t appendDroppedMarker(EventSink& sink, int64_t time, uint64_t dropped);

}  // namespace memscope::cupti
