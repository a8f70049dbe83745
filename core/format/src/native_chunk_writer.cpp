#include "native_chunk_writer.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "memscope/format/native_format.h"
#include "native_crc32c.h"
#include "native_table_codec.h"

namespace memscope::native {
namespace {

// zstd level 1: the columns are already small, and higher levels cost write
// speed (the tracer's background thread) for a few percent of file size.
constexpr int kZstdLevel = 1;
// A negative level leaves literals as they are, without entropy (Huffman)
// coding, which is most of zstd's decoding time: an events column whose bytes
// entropy coding would shrink by less than kMinEntropyGain is compressed at
// this level. On the benchmark's trace the time and address columns are:
// zstd's decoding of them fell from 50 to 10 ms per 10 M events, for 3% more
// bytes in all (docs/FORMAT.md, "Figures").
constexpr int kZstdPlainLevel = -1;
constexpr double kMinEntropyGain = 0.2;

// Whether zstd's entropy coding of these bytes' literals would save at least
// kMinEntropyGain of them, by their order-0 entropy (of every other byte:
// half the cost, the same answer on columns of thousands of bytes).
bool worthEntropyCoding(std::span<const unsigned char> bytes) {
    uint32_t counts[256] = {};
    for (size_t i = 0; i < bytes.size(); i += 2) ++counts[bytes[i]];
    const size_t sampled = (bytes.size() + 1) / 2;
    const double n = static_cast<double>(sampled);
    double bits = 0;
    for (uint32_t c : counts)
        if (c) bits -= c * std::log2(c / n);
    return bits / 8 <= (1 - kMinEntropyGain) * n;
}
// Below this a zstd frame's own header eats the gain.
constexpr size_t kMinCompressBytes = 128;
// Chunks are handed to the OS in writes of about this size.
constexpr size_t kWriteBytes = 4u << 20;

}  // namespace

struct ChunkWriter::Compressor {
    ZSTD_CCtx* ctx = ZSTD_createCCtx();
    ~Compressor() { ZSTD_freeCCtx(ctx); }
};

Result<std::unique_ptr<ChunkWriter>> ChunkWriter::open(const std::string& path,
                                                       uint32_t events_per_chunk) {
    // O_NOFOLLOW: a symlink planted where the trace goes is an error, not a
    // way to write over the file it points at.
    const int fd =
        ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) return makeError(path + ": cannot create: " + std::strerror(errno));
    events_per_chunk = std::clamp<uint32_t>(events_per_chunk, 1, kMaxEventsPerChunk);
    std::unique_ptr<ChunkWriter> w(new ChunkWriter(fd, path, events_per_chunk));

    unsigned char header[kFileHeaderSize];
    std::memcpy(header, kNativeMagic.data(), kNativeMagic.size());
    storeLE16(header + 8, kVersionMajor);
    storeLE16(header + 10, kVersionMinor);
    storeLE32(header + 12, crc32c(header, 12));
    w->buffer_.assign(header, header + sizeof header);
    if (auto r = w->flush(); !r) return r.error();
    return w;
}

ChunkWriter::ChunkWriter(int fd, std::string path, uint32_t events_per_chunk)
    : fd_(fd),
      path_(std::move(path)),
      events_per_chunk_(events_per_chunk),
      compressor_(std::make_unique<Compressor>()) {}

ChunkWriter::~ChunkWriter() {
    (void)close();
}

void ChunkWriter::write(const PendingTables& pending, std::span<const Event> events,
                        uint64_t first_event) {
    const ChunkEmitter emit_fn = [this](ChunkType type, uint32_t count,
                                        std::vector<unsigned char>& raw) {
        emit(type, count, raw);
    };
    encodeDefinitions(pending, emit_fn);
    for (size_t i = 0; i < events.size(); i += events_per_chunk_) {
        const size_t n = std::min<size_t>(events_per_chunk_, events.size() - i);
        raw_.clear();
        encoder_.encode(events.subspan(i, n), first_event + i, raw_);
        emit(ChunkType::Events, static_cast<uint32_t>(n), raw_, kFlagRecentAllocs,
             encoder_.columnStarts());
        if (yield_between_chunks_) sched_yield();
    }
    encodeUpdates(pending, emit_fn);
}

// Compresses raw into packed_ as one zstd frame per section (sections[i] is
// where section i starts; the first starts at 0), which a zstd decoder reads
// as one payload. Returns the compressed size, or 0 when zstd fails.
size_t ChunkWriter::compressSections(std::span<const unsigned char> raw,
                                     std::span<const size_t> sections) {
    size_t done = 0;
    for (size_t i = 0; i < sections.size(); ++i) {
        const size_t begin = i == 0 ? 0 : sections[i];
        const size_t end = i + 1 < sections.size() ? sections[i + 1] : raw.size();
        const auto part = raw.subspan(begin, end - begin);
        const int level = worthEntropyCoding(part) ? kZstdLevel : kZstdPlainLevel;
        const size_t n = ZSTD_compressCCtx(compressor_->ctx, packed_.data() + done,
                                           packed_.size() - done, part.data(), part.size(), level);
        if (ZSTD_isError(n)) return 0;
        done += n;
    }
    return done;
}

void ChunkWriter::emit(ChunkType type, uint32_t count, std::vector<unsigned char>& raw,
                       uint8_t flags, std::span<const size_t> sections) {
    if (!error_.empty() || fd_ < 0) return;
    std::span<const unsigned char> stored(raw);
    if (raw.size() >= kMinCompressBytes && compressor_->ctx) {
        // Only grows: resizing a vector up zero-fills, on every chunk. Room
        // for a frame per section.
        const size_t bound = ZSTD_compressBound(raw.size()) + sections.size() * 64;
        if (packed_.size() < bound) packed_.resize(bound);
        const size_t n = sections.empty()
                             ? ZSTD_compressCCtx(compressor_->ctx, packed_.data(), bound,
                                                 raw.data(), raw.size(), kZstdLevel)
                             : compressSections(raw, sections);
        if (n != 0 && !ZSTD_isError(n) && n < raw.size()) {
            stored = std::span<const unsigned char>(packed_.data(), n);
            flags |= kFlagZstd;
        }
    }
    ChunkHeader h;
    h.type = type;
    h.flags = flags;
    h.count = count;
    h.stored_size = static_cast<uint32_t>(stored.size());
    h.raw_size = static_cast<uint32_t>(raw.size());
    unsigned char header[kChunkHeaderSize];
    packChunkHeader(h, header);
    const uint32_t crc = crc32c(stored.data(), stored.size(), crc32c(header, 16));
    storeLE32(header + 16, crc);
    buffer_.insert(buffer_.end(), header, header + kChunkHeaderSize);
    buffer_.insert(buffer_.end(), stored.begin(), stored.end());
    if (buffer_.size() >= kWriteBytes) (void)writeOut();
}

Result<void> ChunkWriter::writeOut() {
    if (!error_.empty()) return makeError(error_);
    size_t done = 0;
    while (done < buffer_.size()) {
        const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            error_ = path_ + ": write failed: " + std::strerror(errno);
            break;
        }
        done += static_cast<size_t>(n);
    }
    buffer_.clear();
    if (!error_.empty()) return makeError(error_);
    return {};
}

Result<void> ChunkWriter::flush() {
    if (fd_ < 0) return error_.empty() ? Result<void>() : Result<void>(makeError(error_));
    return writeOut();
}

Result<void> ChunkWriter::close() {
    if (fd_ < 0) return error_.empty() ? Result<void>() : Result<void>(makeError(error_));
    Result<void> r = writeOut();
    if (::close(fd_) != 0 && r.ok()) {
        error_ = path_ + ": close failed: " + std::strerror(errno);
        r = makeError(error_);
    }
    fd_ = -1;
    return r;
}

void ChunkWriter::abandon() {
    buffer_.clear();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

}  // namespace memscope::native
