// The chunk reader. Events chunks are about 95% of a file's bytes and of its
// decoding time, and they are independent of each other (every chunk restarts
// its deltas), so they are decoded in parallel: a first pass checks every
// chunk's bounds and sizes, the table chunks' checksums, applies the small
// table chunks in order and notes where each events chunk's events go;
// worker threads then check each events chunk's checksum, decompress and
// decode it straight into its place. An events chunk that fails there (a
// damaged file, or a buggy or hostile writer) sends the whole read down the
// chunk-by-chunk path, which stops at exactly that chunk, as the recovery
// rule says.
#include "native_chunk_reader.h"

#include <zstd.h>

#ifdef __linux__
#include <sys/mman.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <memory>
#include <system_error>
#include <thread>
#include <vector>

#include "memscope/base/parallel_for.h"
#include "native_crc32c.h"
#include "native_event_codec.h"
#include "native_layout.h"
#include "native_table_codec.h"

namespace memscope::native {
namespace {

constexpr uint64_t kProgressBytes = 4u << 20;
// Below this many events threads cost more than they save.
constexpr uint64_t kParallelMinEvents = 256 * 1024;
constexpr unsigned kMaxThreads = 8;

// Whole-file limits: a file may not expand past what its own size makes
// plausible, however each chunk looks alone. zstd packs a chunk of zeros a
// thousandfold, so per-chunk limits let a 10 KB file claim gigabytes. Real
// traces compress tables and events less than tenfold and hold well under one
// item (event, string, property, ...) per byte of file.
constexpr uint64_t kRawFloor = 64ull << 20;  // decompressed bytes any file may have
constexpr uint64_t kRawPerFileByte = 64;
constexpr uint64_t kItemFloor = 4ull << 20;  // items any file may have
constexpr uint64_t kItemsPerFileByte = 16;

uint64_t scaled(uint64_t floor, uint64_t per_byte, uint64_t size) {
    uint64_t v;
    if (__builtin_mul_overflow(per_byte, size, &v)) return UINT64_MAX;
    return std::max(floor, v);
}

std::string hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

// Whether the chunk at `chunk` (header, then payload) has the checksum its
// header declares: over the header's first 16 bytes and the stored payload.
bool checksumMatches(const unsigned char* chunk, const ChunkHeader& h) {
    return crc32c(chunk + kChunkHeaderSize, h.stored_size, crc32c(chunk, 16)) == h.crc;
}

EventCoding codingOf(const ChunkHeader& h) {
    return (h.flags & kFlagRecentAllocs) ? EventCoding::RecentAllocs : EventCoding::Deltas;
}

// Gives a chunk's raw payload, decompressing into its own buffer when needed.
class Decompressor {
public:
    Decompressor() : ctx_(ZSTD_createDCtx()) {}
    ~Decompressor() { ZSTD_freeDCtx(ctx_); }
    Decompressor(const Decompressor&) = delete;
    Decompressor& operator=(const Decompressor&) = delete;

    // Empty string and `payload` set, or the reason.
    std::string open(const ChunkHeader& h, const unsigned char* stored,
                     std::span<const unsigned char>& payload) {
        if (!(h.flags & kFlagZstd)) {
            if (h.raw_size != h.stored_size)
                return "raw size differs from stored size in an uncompressed chunk";
            payload = std::span<const unsigned char>(stored, h.stored_size);
            return {};
        }
        if (!ctx_) return "cannot allocate a zstd decompressor";
        if (raw_.size() < h.raw_size) raw_.resize(h.raw_size);
        const size_t n = ZSTD_decompressDCtx(ctx_, raw_.data(), h.raw_size, stored, h.stored_size);
        if (ZSTD_isError(n) || n != h.raw_size) return "bad compressed payload";
        payload = std::span<const unsigned char>(raw_.data(), h.raw_size);
        return {};
    }

private:
    ZSTD_DCtx* ctx_;
    std::vector<unsigned char> raw_;
};

struct EventJob {
    ChunkHeader header;
    const unsigned char* stored;
    uint64_t first;  // index of the chunk's first event
    EventLimits limits;
};

// The first pass (and, with defer_events false, the whole read).
class ChunkScan {
public:
    ChunkScan(const unsigned char* data, size_t size, const TaskContext& ctx,
              NativeReadReport& report, bool defer_events)
        : data_(data), size_(size), ctx_(ctx), report_(report), defer_(defer_events) {}

    ReadOutcome run(Trace& trace) {
        size_t offset = kFileHeaderSize;
        uint64_t next_progress = kProgressBytes;
        while (offset < size_) {
            if (ctx_.cancelled()) return ReadOutcome::Cancelled;
            if (!defer_ && offset >= next_progress) {
                ctx_.report(offset, size_);
                next_progress = offset + kProgressBytes;
            }
            const std::string problem = readChunk(offset, trace);
            if (!problem.empty()) {
                report_.problem = "chunk " + std::to_string(report_.chunks_read) + " at offset " +
                                  hex(offset) + ": " + problem;
                break;
            }
        }
        report_.bytes_lost = size_ - offset;
        return ReadOutcome::Done;
    }

    std::vector<EventJob> jobs;
    uint64_t event_count = 0;  // events in the chunks read so far

private:
    // Handles the chunk at `offset` and advances past it, or returns why not.
    std::string readChunk(size_t& offset, Trace& trace) {
        const size_t left = size_ - offset;
        if (left < kChunkHeaderSize) return "chunk header cut short (file truncated)";
        const ChunkHeader h = unpackChunkHeader(data_ + offset);
        const size_t body_left = left - kChunkHeaderSize;
        if (h.stored_size > body_left)
            return "chunk declares " + std::to_string(h.stored_size) + " bytes, " +
                   std::to_string(body_left) + " left (file truncated)";
        const unsigned char* stored = data_ + offset + kChunkHeaderSize;
        // An events chunk decoded in parallel is checked by its worker (the
        // checksum is a pass over 95% of the file's bytes): one that fails
        // there sends the whole read down the chunk-by-chunk path, which
        // stops at it.
        if (!(defer_ && h.type == ChunkType::Events) && !checksumMatches(data_ + offset, h))
            return "checksum mismatch (corrupt data)";
        const uint8_t known =
            h.type == ChunkType::Events ? kFlagZstd | kFlagRecentAllocs : kFlagZstd;
        if (h.flags & ~known) return "unknown chunk flags " + std::to_string(h.flags);
        if (h.raw_size > kMaxRawChunkBytes) return "chunk too large";
        // Charged before anything is decompressed or reserved.
        raw_total_ += h.raw_size;
        items_total_ += h.count;
        if (raw_total_ > raw_budget_)
            return "the chunks expand to more than " + std::to_string(raw_budget_) +
                   " bytes, far more than a " + std::to_string(size_) +
                   "-byte trace holds (a hostile or broken writer)";
        if (items_total_ > item_budget_)
            return "the chunks declare more than " + std::to_string(item_budget_) +
                   " items, far more than a " + std::to_string(size_) +
                   "-byte trace holds (a hostile or broken writer)";

        std::string problem;
        if (h.type == ChunkType::Events) {
            problem = readEvents(h, stored, trace);
        } else if (h.type >= ChunkType::Metadata && h.type <= ChunkType::Prediction) {
            std::span<const unsigned char> payload;
            problem = decompressor_.open(h, stored, payload);
            if (problem.empty())
                problem = decodeTableChunk(h.type, h.count, payload, event_count, trace);
        }
        // Other types come from a later minor version: skipped, as FORMAT.md promises.
        if (!problem.empty()) return std::string(chunkTypeName(h.type)) + ": " + problem;
        offset += kChunkHeaderSize + h.stored_size;
        ++report_.chunks_read;
        return {};
    }

    std::string readEvents(const ChunkHeader& h, const unsigned char* stored, Trace& trace) {
        EventLimits limits;
        limits.stack_count = trace.stackCount();
        limits.phase_count = trace.phases.size();
        limits.stream_count = trace.streams.size();
        if (defer_) {
            // Checked again by the decoder; here so that the events vector's
            // size stays bounded by what the chunks can hold.
            if (h.count > kMaxEventsPerChunk) return "too many events in one chunk";
            jobs.push_back({h, stored, event_count, limits});
            event_count += h.count;
            return {};
        }
        std::span<const unsigned char> payload;
        std::string problem = decompressor_.open(h, stored, payload);
        if (problem.empty())
            problem =
                decodeEvents(payload, h.count, event_count, limits, codingOf(h), trace.events);
        if (problem.empty()) event_count += h.count;
        return problem;
    }

    const unsigned char* data_;
    size_t size_;
    const TaskContext& ctx_;
    NativeReadReport& report_;
    bool defer_;
    Decompressor decompressor_;
    uint64_t raw_total_ = 0, items_total_ = 0;
    const uint64_t raw_budget_ = scaled(kRawFloor, kRawPerFileByte, size_);
    const uint64_t item_budget_ = scaled(kItemFloor, kItemsPerFileByte, size_);
};

// Decodes the jobs into `events` on up to kMaxThreads threads (this one
// included, which alone reports progress). False if a job failed.
bool decodeJobs(const std::vector<EventJob>& jobs, std::span<Event> events, const TaskContext& ctx,
                size_t file_size, bool& cancelled) {
    std::atomic<size_t> next{0};
    std::atomic<bool> failed{false};
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> done_bytes{0};
    const auto work = [&](bool reports) {
        Decompressor decompressor;
        uint64_t next_progress = kProgressBytes;
        while (!failed.load(std::memory_order_relaxed) && !stop.load(std::memory_order_relaxed)) {
            const size_t i = next.fetch_add(1);
            if (i >= jobs.size()) break;
            if (ctx.cancelled()) {
                stop = true;
                break;
            }
            const EventJob& job = jobs[i];
            // An exception must not leave a thread (std::terminate): a job that
            // throws (bad_alloc) fails, and the chunk-by-chunk pass reports it.
            try {
                if (!checksumMatches(job.stored - kChunkHeaderSize, job.header)) {
                    failed = true;
                    break;
                }
                std::span<const unsigned char> payload;
                std::string problem = decompressor.open(job.header, job.stored, payload);
                if (problem.empty())
                    problem = decodeEvents(payload, job.header.count, job.first, job.limits,
                                           codingOf(job.header),
                                           events.subspan(job.first, job.header.count));
                if (!problem.empty()) failed = true;
            } catch (...) {
                failed = true;
            }
            const uint64_t done =
                done_bytes.fetch_add(job.header.stored_size) + job.header.stored_size;
            if (reports && done >= next_progress) {
                ctx.report(done, file_size);
                next_progress = done + kProgressBytes;
            }
        }
    };
    const unsigned hardware = hardwareThreads();
    const size_t helpers = std::min<size_t>({hardware, kMaxThreads, jobs.size()}) - 1;
    std::vector<std::thread> threads;
    try {
        for (size_t t = 0; t < helpers; ++t) threads.emplace_back(work, false);
    } catch (const std::system_error&) {
        // Fewer threads than wished: the ones running (and this one) do it all.
    }
    work(true);
    for (auto& t : threads) t.join();
    cancelled = stop.load();
    return !failed.load();
}

// Reserves the events and asks for transparent huge pages on them: a 10 M
// event trace is 400 MB, a hundred thousand 4 KiB page faults when resize
// first writes it, which was a third of the read; in 2 MiB pages, 200.
void reserveInHugePages(std::vector<Event>& events, size_t count) {
    events.reserve(count);
#ifdef __linux__
    constexpr uintptr_t kHuge = 2u << 20;
    const auto begin = reinterpret_cast<uintptr_t>(events.data());
    const uintptr_t end = begin + count * sizeof(Event);
    const uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
    if (end > first + kHuge)
        madvise(reinterpret_cast<void*>(first), (end - first) & ~(kHuge - 1), MADV_HUGEPAGE);
#endif
}

}  // namespace

ReadOutcome readChunks(const unsigned char* data, size_t size, const TaskContext& ctx, Trace& trace,
                       NativeReadReport& report) {
    // The events the chunk headers declare, unchecked: enough to choose the
    // parallel path, which is only taken while that number is plausible for
    // the file's size (so lying headers cannot make it allocate much).
    uint64_t declared = 0;
    for (size_t offset = kFileHeaderSize; size - offset >= kChunkHeaderSize;) {
        const ChunkHeader h = unpackChunkHeader(data + offset);
        if (h.stored_size > size - offset - kChunkHeaderSize) break;
        if (h.type == ChunkType::Events) declared += h.count;
        offset += kChunkHeaderSize + h.stored_size;
    }
    const bool plausible =
        declared <= size / 2 && declared <= scaled(kItemFloor, kItemsPerFileByte, size);

    if (plausible && declared >= kParallelMinEvents && hardwareThreads() > 1) {
        // The events vector is allocated and zero-filled (page faults, a
        // fifth of the read) on another thread while this one scans, which
        // never touches it: sized as declared, cut to what the scan accepted.
        std::vector<Event> events;
        std::exception_ptr allocation_failure;  // bad_alloc, rethrown here as before
        const auto allocate = [&] {
            try {
                reserveInHugePages(events, declared);
                // In slices, so that a cancel is not kept waiting on the page faults.
                constexpr size_t kSlice = size_t{1} << 16;
                while (events.size() < declared && !ctx.cancelled())
                    events.resize(std::min<size_t>(events.size() + kSlice, declared));
            } catch (...) {
                allocation_failure = std::current_exception();
            }
        };
        std::jthread allocator;  // joins on the way out if the scan throws
        try {
            allocator = std::jthread(allocate);
        } catch (const std::system_error&) {
            allocate();
        }
        ChunkScan scan(data, size, ctx, report, /*defer_events=*/true);
        const ReadOutcome scanned = scan.run(trace);
        if (allocator.joinable()) allocator.join();
        if (allocation_failure) std::rethrow_exception(allocation_failure);
        if (scanned == ReadOutcome::Cancelled || ctx.cancelled()) return ReadOutcome::Cancelled;
        events.resize(scan.event_count);  // the scan stops where the pre-pass did, or sooner
        trace.events = std::move(events);
        bool cancelled = false;
        const bool ok = decodeJobs(scan.jobs, trace.events, ctx, size, cancelled);
        if (cancelled) return ReadOutcome::Cancelled;
        if (ok) {
            ctx.report(size, size);
            return ReadOutcome::Done;
        }
        trace = Trace();  // a chunk that does not decode: start over, one by one
        report.chunks_read = 0;
        report.problem.clear();
    }
    if (plausible) trace.events.reserve(declared);
    ChunkScan scan(data, size, ctx, report, /*defer_events=*/false);
    const ReadOutcome outcome = scan.run(trace);
    if (outcome == ReadOutcome::Done) ctx.report(size, size);
    return outcome;
}

}  // namespace memscope::native
