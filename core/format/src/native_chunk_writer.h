#pragma once
// Turns pending tables and events into checksummed (and, where it pays,
// zstd-compressed) chunks appended to a file. Used by one thread at a time.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "memscope/base/result.h"
#include "memscope/model/event.h"
#include "native_event_codec.h"
#include "native_layout.h"
#include "native_tables.h"

namespace memscope::native {

class ChunkWriter {
public:
    // Creates (or truncates) the file and writes the file header.
    static Result<std::unique_ptr<ChunkWriter>> open(const std::string& path,
                                                     uint32_t events_per_chunk);
    ~ChunkWriter();  // closes the file without reporting errors
    ChunkWriter(const ChunkWriter&) = delete;
    ChunkWriter& operator=(const ChunkWriter&) = delete;

    // Definitions, then the events (in chunks of events_per_chunk, the first
    // being event `first_event`), then updates: so that every chunk refers only
    // to what came before it.
    void write(const PendingTables& pending, std::span<const Event> events, uint64_t first_event);

    // Hands the buffered chunks to the OS (write(2)); the first error sticks.
    Result<void> flush();
    Result<void> close();
    // For a forked child: forget buffered bytes and the descriptor without
    // writing, so that the parent's file is left alone.
    void abandon();

    uint32_t eventsPerChunk() const { return events_per_chunk_; }
    // After each events chunk, sched_yield(): for a writer on a background
    // thread, so that it holds a busy core for one chunk's work at most.
    void yieldBetweenChunks(bool on) { yield_between_chunks_ = on; }

private:
    ChunkWriter(int fd, std::string path, uint32_t events_per_chunk);
    // `flags` are the payload's own (the coding); emit adds kFlagZstd.
    void emit(ChunkType type, uint32_t count, std::vector<unsigned char>& raw, uint8_t flags = 0,
              std::span<const size_t> sections = {});
    size_t compressSections(std::span<const unsigned char> raw, std::span<const size_t> sections);
    Result<void> writeOut();

    int fd_ = -1;
    std::string path_;
    uint32_t events_per_chunk_;
    bool yield_between_chunks_ = false;
    std::vector<unsigned char> buffer_;  // complete chunks not yet written
    std::vector<unsigned char> raw_;     // scratch: one chunk's raw payload
    std::vector<unsigned char> packed_;  // scratch: its compressed form
    EventEncoder encoder_;
    struct Compressor;
    std::unique_ptr<Compressor> compressor_;
    std::string error_;
};

}  // namespace memscope::native
