#pragma once
// On-disk constants of the native format (docs/FORMAT.md is the prose version:
// change both together). Private to core.

#include <cstddef>
#include <cstdint>

namespace memscope::native {

// File header: "MEMSCOPE", u16 major, u16 minor, u32 CRC32C of the 12 bytes before.
inline constexpr size_t kFileHeaderSize = 16;
// A reader refuses another major version; a higher minor only adds chunk types
// or trailing fields that older readers skip.
inline constexpr uint16_t kVersionMajor = 1;
// Minor versions: 1 run metrics; 2 modules, module scopes; 3 prediction;
// 4 events chunks with recent-allocation references; 5 digest; 6 op scopes.
inline constexpr uint16_t kVersionMinor = 6;

// Chunk header: u8 type, u8 flags, u16 reserved (0), u32 count, u32 stored size,
// u32 raw size, u32 CRC32C over the first 16 header bytes and the stored payload.
inline constexpr size_t kChunkHeaderSize = 20;

// Values are stored on disk: append only, never reorder.
enum class ChunkType : uint8_t {
    Metadata = 1,
    Strings = 2,
    Frames = 3,
    Stacks = 4,
    Streams = 5,
    Phases = 6,
    PhaseEnds = 7,
    Annotations = 8,
    Attributes = 9,
    Events = 10,
    AllocatorState = 11,
    RunMetrics = 12,
    Modules = 13,
    ModuleScopes = 14,
    Prediction = 15,
    Digest = 16,
    OpScopes = 17,
};

inline constexpr uint8_t kFlagZstd = 1;  // payload is one zstd frame of raw size bytes
// Events chunks only: a free's address may name one of its device's last 16
// allocations (FORMAT.md, "10 events"). A flag rather than a new chunk type,
// so that a 1.3 reader refuses such a chunk instead of skipping its events.
inline constexpr uint8_t kFlagRecentAllocs = 2;

// Bounds every allocation a declared size can cause. The writer stays far below
// them (tables are split at kTargetChunkBytes, events at kMaxEventsPerChunk).
inline constexpr uint32_t kMaxRawChunkBytes = 256u << 20;
inline constexpr size_t kTargetChunkBytes = 1u << 20;
inline constexpr uint32_t kMaxEventsPerChunk = 1u << 20;

struct ChunkHeader {
    ChunkType type{};
    uint8_t flags = 0;
    uint32_t count = 0;        // items in the chunk (events, strings, ...)
    uint32_t stored_size = 0;  // payload bytes in the file after the header
    uint32_t raw_size = 0;     // payload bytes after decompression
    uint32_t crc = 0;
};

inline void storeLE16(unsigned char* p, uint16_t v) {
    p[0] = static_cast<unsigned char>(v);
    p[1] = static_cast<unsigned char>(v >> 8);
}
inline void storeLE32(unsigned char* p, uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline uint16_t loadLE16(const unsigned char* p) {
    return static_cast<uint16_t>(p[0] | (p[1] << 8));
}
inline uint32_t loadLE32(const unsigned char* p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
    return v;
}

// Everything but the CRC; the CRC is computed over these 16 bytes + payload.
inline void packChunkHeader(const ChunkHeader& h, unsigned char* out) {
    out[0] = static_cast<unsigned char>(h.type);
    out[1] = h.flags;
    storeLE16(out + 2, 0);
    storeLE32(out + 4, h.count);
    storeLE32(out + 8, h.stored_size);
    storeLE32(out + 12, h.raw_size);
    storeLE32(out + 16, h.crc);
}
inline ChunkHeader unpackChunkHeader(const unsigned char* in) {
    ChunkHeader h;
    h.type = static_cast<ChunkType>(in[0]);
    h.flags = in[1];
    h.count = loadLE32(in + 4);
    h.stored_size = loadLE32(in + 8);
    h.raw_size = loadLE32(in + 12);
    h.crc = loadLE32(in + 16);
    return h;
}

inline const char* chunkTypeName(ChunkType type) {
    switch (type) {
        case ChunkType::Metadata:
            return "metadata";
        case ChunkType::Strings:
            return "strings";
        case ChunkType::Frames:
            return "frames";
        case ChunkType::Stacks:
            return "stacks";
        case ChunkType::Streams:
            return "streams";
        case ChunkType::Phases:
            return "phases";
        case ChunkType::PhaseEnds:
            return "phase ends";
        case ChunkType::Annotations:
            return "annotations";
        case ChunkType::Attributes:
            return "attributes";
        case ChunkType::Events:
            return "events";
        case ChunkType::AllocatorState:
            return "allocator state";
        case ChunkType::RunMetrics:
            return "run metrics";
        case ChunkType::Modules:
            return "modules";
        case ChunkType::ModuleScopes:
            return "module scopes";
        case ChunkType::Prediction:
            return "prediction";
        case ChunkType::OpScopes:
            return "op scopes";
        case ChunkType::Digest:
            return "digest";
    }
    return "unknown";
}

}  // namespace memscope::native
