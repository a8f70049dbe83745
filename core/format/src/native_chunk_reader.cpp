// The chunk reader. Events chunks are about 95% of a file's bytes and of its
// decoding time, and they are independent of each other (every chunk restarts
// its deltas), so they are decoded in parallel: a pass over the chunks checks
// every chunk's bounds and sizes and the table chunks' checksums, applies the
// small table chunks in order and hands each events chunk, with where its
// events go, to worker threads that meanwhile check its checksum, decompress
// it and decode it straight into its place. An events chunk that fails there
// (a damaged file, or a buggy or hostile writer) sends the whole read down
// the chunk-by-chunk path, which stops at exactly that chunk, as the recovery
// rule says.
#include "native_chunk_reader.h"

#include <zstd.h>

#ifdef __linux__
#include <sys/mman.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
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

// A waiting thread's turn: a yield while the wait is short, then short sleeps,
// so that a thread that waits long (on a machine with fewer cores than
// threads) does not take the time of the thread it waits for.
void backOff(unsigned& spins) {
    if (++spins < 256)
        std::this_thread::yield();
    else
        std::this_thread::sleep_for(std::chrono::microseconds(50));
}

// The events chunks the scan has reached, handed to the decoding threads as
// it goes: a slot per events chunk the pre-pass saw (the scan walks the same
// chain and sees no more), written once, then published by the count.
class JobBoard {
public:
    explicit JobBoard(size_t capacity) : jobs_(capacity) {}

    // The scan's side. False when the board is full (not for a chain the
    // pre-pass walked).
    bool publish(const EventJob& job) {
        const size_t n = published_.load(std::memory_order_relaxed);
        if (n == jobs_.size()) return false;
        jobs_[n] = job;
        published_.store(n + 1, std::memory_order_release);
        return true;
    }
    void close() { closed_.store(true, std::memory_order_release); }

    // The decoders' side: job i once published; null once the scan has
    // closed the board without reaching it, or while `give_up` says so.
    template <class GiveUp>
    const EventJob* wait(size_t i, GiveUp give_up) const {
        for (unsigned spins = 0;;) {
            const bool closed = closed_.load(std::memory_order_acquire);
            if (i < published_.load(std::memory_order_acquire)) return &jobs_[i];
            if (closed || give_up()) return nullptr;
            backOff(spins);
        }
    }
    size_t capacity() const { return jobs_.size(); }

private:
    std::vector<EventJob> jobs_;
    std::atomic<size_t> published_{0};
    std::atomic<bool> closed_{false};
};

// The pass over the chunks (and, without a board, the whole read).
class ChunkScan {
public:
    // With a board, events chunks are left to the decoding threads: the
    // scan checks their headers and publishes them there.
    ChunkScan(const unsigned char* data, size_t size, const TaskContext& ctx,
              NativeReadReport& report, JobBoard* board, bool tolerate_partial_tail)
        : data_(data),
          size_(size),
          ctx_(ctx),
          report_(report),
          board_(board),
          tolerate_partial_tail_(tolerate_partial_tail) {}

    ReadOutcome run(Trace& trace) {
        size_t offset = kFileHeaderSize;
        uint64_t next_progress = kProgressBytes;
        while (offset < size_) {
            if (ctx_.cancelled()) return ReadOutcome::Cancelled;
            if (!board_ && offset >= next_progress) {
                ctx_.report(offset, size_);
                next_progress = offset + kProgressBytes;
            }
            const std::string problem = readChunk(offset, trace);
            if (!problem.empty() && cut_short_ && tolerate_partial_tail_) {
                // A chunk the writer has not finished: waited for, not damage.
                report_.bytes_pending = size_ - offset;
                report_.bytes_lost = 0;
                return ReadOutcome::Done;
            }
            if (!problem.empty()) {
                report_.problem = "chunk " + std::to_string(report_.chunks_read) + " at offset " +
                                  hex(offset) + ": " + problem;
                break;
            }
        }
        report_.bytes_lost = size_ - offset;
        return ReadOutcome::Done;
    }

    uint64_t event_count = 0;  // events in the chunks read so far

private:
    // Handles the chunk at `offset` and advances past it, or returns why not.
    std::string readChunk(size_t& offset, Trace& trace) {
        const size_t left = size_ - offset;
        cut_short_ = true;
        if (left < kChunkHeaderSize) return "chunk header cut short (file truncated)";
        const ChunkHeader h = unpackChunkHeader(data_ + offset);
        const size_t body_left = left - kChunkHeaderSize;
        if (h.stored_size > body_left)
            return "chunk declares " + std::to_string(h.stored_size) + " bytes, " +
                   std::to_string(body_left) + " left (file truncated)";
        cut_short_ = false;
        const unsigned char* stored = data_ + offset + kChunkHeaderSize;
        // An events chunk decoded in parallel is checked by its worker (the
        // checksum is a pass over 95% of the file's bytes): one that fails
        // there sends the whole read down the chunk-by-chunk path, which
        // stops at it.
        if (!(board_ && h.type == ChunkType::Events) && !checksumMatches(data_ + offset, h))
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
        } else if (h.type >= ChunkType::Metadata && h.type <= ChunkType::OpScopes) {
            std::span<const unsigned char> payload;
            problem = decompressor_.open(h, stored, payload);
            if (problem.empty())
                problem = decodeTableChunk(h.type, h.count, payload, event_count, trace);
        }
        // Other types come from a later minor version: skipped, as FORMAT.md promises.
        if (!problem.empty()) {
            // A digest whose figures cannot be read is no trace of any kind:
            // the reader refuses the file rather than take it for a full trace.
            if (h.type == ChunkType::Digest) report_.digest_problem = problem;
            return std::string(chunkTypeName(h.type)) + ": " + problem;
        }
        offset += kChunkHeaderSize + h.stored_size;
        ++report_.chunks_read;
        return {};
    }

    std::string readEvents(const ChunkHeader& h, const unsigned char* stored, Trace& trace) {
        EventLimits limits;
        limits.stack_count = trace.stackCount();
        limits.phase_count = trace.phases.size();
        limits.stream_count = trace.streams.size();
        if (board_) {
            // Checked again by the decoder; here so that the events vector's
            // size stays bounded by what the chunks can hold.
            if (h.count > kMaxEventsPerChunk) return "too many events in one chunk";
            if (!board_->publish({h, stored, event_count, limits}))
                return "more events chunks than the file's chunk headers declare";
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
    JobBoard* board_;  // null: events chunks decoded here, in order
    const bool tolerate_partial_tail_;
    bool cut_short_ = false;  // the last problem was a chunk cut short by the file's end
    Decompressor decompressor_;
    uint64_t raw_total_ = 0, items_total_ = 0;
    const uint64_t raw_budget_ = scaled(kRawFloor, kRawPerFileByte, size_);
    const uint64_t item_budget_ = scaled(kItemFloor, kItemsPerFileByte, size_);
};

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

// The parallel read. This thread scans the chunks: it applies the table
// chunks in order and publishes each events chunk, with the limits that the
// tables before it set, to the board. Helper threads decode the published
// chunks meanwhile, and this thread joins them when the scan is done. The
// first helper first value-initializes the events vector in slices (its page
// faults are a fifth of the read); a chunk is decoded once its slice is.
class ParallelRead {
public:
    ParallelRead(const unsigned char* data, size_t size, const TaskContext& ctx,
                 NativeReadReport& report, size_t events_chunks, uint64_t declared,
                 bool tolerate_partial_tail)
        : data_(data),
          size_(size),
          ctx_(ctx),
          report_(report),
          board_(events_chunks),
          declared_(declared),
          tolerate_partial_tail_(tolerate_partial_tail) {}

    // Done, Cancelled, or Failed when an events chunk does not decode (the
    // caller then reads chunk by chunk, which stops at it). Throws what the
    // scan or the allocation threw (bad_alloc), after joining the helpers.
    enum class Outcome { Done, Cancelled, Failed };
    Outcome run(Trace& trace) {
        reserveInHugePages(events_, declared_);
        base_ = events_.data();
        const size_t wanted =
            std::min<size_t>({hardwareThreads(), kMaxThreads, board_.capacity()}) - 1;
        std::vector<std::thread> helpers;
        // Joins the helpers on the way out by an exception (a throwing scan).
        struct Joiner {
            ParallelRead& read;
            std::vector<std::thread>& threads;
            ~Joiner() {
                read.board_.close();
                read.give_up_.store(true);
                for (auto& t : threads) t.join();
            }
        };
        try {
            for (size_t t = 0; t < wanted; ++t) helpers.emplace_back([this, t] { helper(t == 0); });
        } catch (const std::system_error&) {
            // Fewer threads than wished: the ones running (and this one) do it all.
        }
        if (helpers.empty()) allocate();
        ReadOutcome scanned;
        uint64_t event_count;
        {
            Joiner joiner{*this, helpers};
            ChunkScan scan(data_, size_, ctx_, report_, &board_, tolerate_partial_tail_);
            try {
                scanned = scan.run(trace);
            } catch (...) {
                give_up_.store(true);  // the helpers stop at their next chunk
                throw;
            }
            event_count = scan.event_count;
            board_.close();
            decode(true);
            // The helpers finish the chunks they hold; the joiner, which
            // would make them give up, is left nothing to join.
            for (auto& t : helpers) t.join();
            helpers.clear();
        }
        if (allocation_failure_) std::rethrow_exception(allocation_failure_);
        if (scanned == ReadOutcome::Cancelled || ctx_.cancelled() || stop_.load())
            return Outcome::Cancelled;
        if (failed_.load()) return Outcome::Failed;
        events_.resize(event_count);  // the scan stops where the pre-pass did, or sooner
        trace.events = std::move(events_);
        return Outcome::Done;
    }

private:
    void helper(bool allocates) {
        if (allocates) allocate();
        decode(false);
    }

    // Value-initializes the events in slices, publishing how far it got.
    void allocate() {
        try {
            constexpr size_t kSlice = size_t{1} << 16;
            while (events_.size() < declared_ && !ctx_.cancelled() && !give_up_.load()) {
                events_.resize(std::min<size_t>(events_.size() + kSlice, declared_));
                ready_.store(events_.size(), std::memory_order_release);
            }
        } catch (...) {
            allocation_failure_ = std::current_exception();
            give_up_.store(true);
        }
        allocated_.store(true, std::memory_order_release);
    }

    // Whether events [0, end) are initialized; waits while the allocation
    // goes on. False when it stopped short (cancelled, failed).
    bool waitReady(uint64_t end) const {
        for (unsigned spins = 0;;) {
            const bool finished = allocated_.load(std::memory_order_acquire);
            if (ready_.load(std::memory_order_acquire) >= end) return true;
            if (finished || give_up_.load()) return false;
            backOff(spins);
        }
    }

    // Decodes published jobs until there are none left. Only this thread
    // (reports) calls the progress callback.
    void decode(bool reports) {
        Decompressor decompressor;
        uint64_t next_progress = kProgressBytes;
        const auto give_up = [this] {
            if (ctx_.cancelled()) stop_.store(true);
            return give_up_.load() || failed_.load() || stop_.load();
        };
        for (;;) {
            const EventJob* job = board_.wait(next_.fetch_add(1), give_up);
            if (!job || give_up()) return;
            if (!waitReady(job->first + job->header.count)) return;
            // An exception must not leave a thread (std::terminate): a job that
            // throws (bad_alloc) fails, and the chunk-by-chunk pass reports it.
            try {
                std::string problem;
                if (!checksumMatches(job->stored - kChunkHeaderSize, job->header))
                    problem = "checksum mismatch";
                std::span<const unsigned char> payload;
                if (problem.empty()) problem = decompressor.open(job->header, job->stored, payload);
                if (problem.empty())
                    problem = decodeEvents(payload, job->header.count, job->first, job->limits,
                                           codingOf(job->header),
                                           std::span<Event>(base_ + job->first, job->header.count));
                if (!problem.empty()) failed_.store(true);
            } catch (...) {
                failed_.store(true);
            }
            const uint64_t done =
                done_bytes_.fetch_add(job->header.stored_size) + job->header.stored_size;
            if (reports && done >= next_progress) {
                ctx_.report(done, size_);
                next_progress = done + kProgressBytes;
            }
        }
    }

    const unsigned char* data_;
    size_t size_;
    const TaskContext& ctx_;
    NativeReadReport& report_;
    JobBoard board_;
    uint64_t declared_;
    bool tolerate_partial_tail_;
    std::vector<Event> events_;
    Event* base_ = nullptr;  // events_.data(), fixed by the reservation
    std::atomic<uint64_t> ready_{0};
    std::atomic<bool> allocated_{false};
    std::exception_ptr allocation_failure_;
    std::atomic<size_t> next_{0};
    std::atomic<bool> failed_{false};
    std::atomic<bool> stop_{false};     // cancelled
    std::atomic<bool> give_up_{false};  // the scan threw, or the allocation failed
    std::atomic<uint64_t> done_bytes_{0};
};

}  // namespace

ReadOutcome readChunks(const unsigned char* data, size_t size, const TaskContext& ctx, Trace& trace,
                       NativeReadReport& report, bool tolerate_partial_tail) {
    // The events the chunk headers declare, unchecked: enough to choose the
    // parallel path, which is only taken while that number is plausible for
    // the file's size (so lying headers cannot make it allocate much).
    uint64_t declared = 0;
    uint64_t declared_phases = 0;
    size_t events_chunks = 0;
    for (size_t offset = kFileHeaderSize; size - offset >= kChunkHeaderSize;) {
        const ChunkHeader h = unpackChunkHeader(data + offset);
        if (h.stored_size > size - offset - kChunkHeaderSize) break;
        if (h.type == ChunkType::Events) {
            declared += h.count;
            ++events_chunks;
        }
        if (h.type == ChunkType::Phases) declared_phases += h.count;
        offset += kChunkHeaderSize + h.stored_size;
    }
    // Phases in one vector of their final size: growing it chunk by chunk
    // faulted in every abandoned copy. A phase takes at least 8 raw bytes.
    if (declared_phases <= size / 8) trace.phases.reserve(declared_phases);
    const bool plausible =
        declared <= size / 2 && declared <= scaled(kItemFloor, kItemsPerFileByte, size);

    if (plausible && declared >= kParallelMinEvents && hardwareThreads() > 1) {
        ParallelRead read(data, size, ctx, report, events_chunks, declared, tolerate_partial_tail);
        switch (read.run(trace)) {
            case ParallelRead::Outcome::Done:
                ctx.report(size, size);
                return ReadOutcome::Done;
            case ParallelRead::Outcome::Cancelled:
                return ReadOutcome::Cancelled;
            case ParallelRead::Outcome::Failed:
                break;
        }
        trace = Trace();  // a chunk that does not decode: start over, one by one
        report.chunks_read = 0;
        report.problem.clear();
        report.bytes_pending = 0;
    }
    if (plausible) trace.events.reserve(declared);
    ChunkScan scan(data, size, ctx, report, /*board=*/nullptr, tolerate_partial_tail);
    const ReadOutcome outcome = scan.run(trace);
    if (outcome == ReadOutcome::Done) ctx.report(size, size);
    return outcome;
}

}  // namespace memscope::native
