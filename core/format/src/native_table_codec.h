#pragma once
// Payloads of every chunk type except events (docs/FORMAT.md lists them).
// Encoders split long tables into chunks of about kTargetChunkBytes; decoders
// check every id against what was read before and apply nothing on failure
// (except interned strings, frames and stacks, which cannot be taken back: the
// reader stops at such a chunk anyway, so they are never referenced).

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "memscope/model/trace.h"
#include "native_layout.h"
#include "native_tables.h"

namespace memscope::native {

// Receives one finished chunk payload: its type, item count and raw bytes.
using ChunkEmitter =
    std::function<void(ChunkType type, uint32_t count, std::vector<unsigned char>& payload)>;

// Emits, in this order, the chunks for new strings, frames, stacks, streams and
// phases: what events may refer to.
void encodeDefinitions(const PendingTables& pending, const ChunkEmitter& emit);
// Emits phase ends, annotations, attributes, metadata and allocator state: what
// may refer to events, and what replaces earlier values.
void encodeUpdates(const PendingTables& pending, const ChunkEmitter& emit);

// Applies one chunk's raw payload to `trace`; `event_count` is the number of
// events before this chunk (attributes may refer only to those; the events
// themselves may still be decoding elsewhere). Returns the reason on failure,
// an empty string on success. Unknown chunk types are not passed here.
std::string decodeTableChunk(ChunkType type, uint32_t count, std::span<const unsigned char> payload,
                             uint64_t event_count, Trace& trace);

}  // namespace memscope::native
