#pragma once
// What the native format's tests share: an independent CRC32C and prefix
// varint (docs/FORMAT.md, written apart from core, so that files crafted with
// them check the document against the code), hand-built files and chunks, a
// trace that uses every field, and comparisons.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "memscope/format/native_format.h"
#include "memscope_test/event_builder.h"

namespace memscope::native_test {

namespace fs = std::filesystem;
using Bytes = std::vector<std::byte>;

uint32_t referenceCrc32c(const void* data, size_t n, uint32_t crc = 0);
void putLE32(Bytes& b, size_t at, uint32_t v);
uint32_t getLE32(const Bytes& b, size_t at);

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

Bytes readFile(const std::string& path);
void writeFile(const std::string& path, const Bytes& b);

using testsupport::makeEvent;  // tests/support's event builder

// A trace that uses every field, with edge values where the encoding has cases.
Trace sampleTrace(int event_count = 300);

void expectSameEvents(const std::vector<Event>& a, const std::vector<Event>& b, size_t n);
void expectSameTrace(const Trace& a, const Trace& b);

Result<Trace> readBytes(const Bytes& b, size_t n, NativeReadReport* report);

struct ChunkInfo {
    size_t offset;
    size_t end;
    uint8_t type;
    uint32_t count;
};
// Walks the chunk headers as docs/FORMAT.md describes them.
std::vector<ChunkInfo> chunksOf(const Bytes& b);

// A prefix varint (docs/FORMAT.md, "Varints").
std::vector<uint8_t> pv(uint64_t v);
std::vector<uint8_t> cat(std::initializer_list<std::vector<uint8_t>> parts);

Bytes fileHeader(uint16_t major = 1, uint16_t minor = 0);
// Appends an uncompressed chunk with a correct checksum.
void appendChunk(Bytes& file, uint8_t type, uint32_t count, const std::vector<uint8_t>& payload,
                 uint8_t flags = 0, uint32_t raw_size = UINT32_MAX);

}  // namespace memscope::native_test
