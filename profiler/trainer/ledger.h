#pragma once
// The allocation ledger: turns the allocator's raw (pointer, size) reports into
// trace events carrying ground-truth categories and phases.
//
// How categories are decided (the trainer knows which tensors are which):
//  - parameter, gradient, optimizer_state, input: the trainer tags the storage
//    of those tensors as soon as it has them (parameters after init, gradients
//    when backward has accumulated them or inside the in-backward hook, Adam's
//    moments when created, the batch when generated);
//  - activation: memory allocated during a forward pass (or during the
//    recomputation of a checkpointed region in backward) and still alive when
//    that pass ends, i.e. what autograd saved for backward plus the outputs;
//  - temporary: everything else (intermediates freed within the pass, autograd's
//    intermediate gradients, optimizer scratch).
// Because "activation" and "gradient" are only known in hindsight, events are
// held back until commit() (once per step) and written then; an allocation that
// outlives a commit keeps the category it had at that commit.
//
// Two threads share the work, so that the training thread pays only for the
// hot path:
//  - the hot path (onAlloc, onFree: called by the allocator hook for every
//    tensor) takes no lock, allocates nothing and touches no string: it
//    claims a slot of a preallocated log, fills in 40 bytes and publishes
//    them; on the training thread without any atomic read-modify-write (see
//    Log below). tag, classifyLiveSince, phases and commit are log records
//    too, written the same way by the training thread;
//  - the ledger's own thread reads the logs in order: it matches frees to
//    allocations, applies tags and categories, and at each commit record hands
//    the step's events to the writer and allocates the log's chunks ahead for
//    the next step (twice the busiest step so far), so only a step that
//    outgrows them allocates in the hook. It reads every 10 ms while there is
//    work (see readerLoop), so a long step does not pile up the log either.
//    It also names the phases and hands them to the writer.
// The training thread allocates nothing here that outlives a call: memory it
// allocated and the writer kept (a phase's name, say) would sit among the
// step's tensors in its malloc arena, and tensors freed around it could not
// be reused whole. Measured: the traced run's heap grew by about 100 KiB per
// step, every step, and the tensors ran onto fresh pages (page faults).
// Reading in log order gives the same result as reading at each call: a tag
// written after an allocation's record is read after it. counts() and
// finish() read whatever is left on the caller's thread and return when all of
// it is with the writer.

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <vector>

#include "address_table.h"
#include "clock.h"
#include "memscope/base/cpu_set.h"
#include "memscope/format/native_format.h"
#include "memscope/model/types.h"

namespace memscope::trainer {

class AllocationLedger {
public:
    // The calling thread becomes the owner (see Log). Starts the ledger's
    // thread: std::system_error when the system has none to give.
    explicit AllocationLedger(BackgroundTraceWriter& writer);
    ~AllocationLedger();
    AllocationLedger(const AllocationLedger&) = delete;
    AllocationLedger& operator=(const AllocationLedger&) = delete;

    // From the allocator hook; may be called on autograd's worker threads.
    // Lock-free and allocation-free (see above). A free of size 0 takes the
    // size of the allocation it matches (a deleter does not know it).
    // The time is EpochClock nanoseconds.
    void onAlloc(uint64_t ptr, uint64_t size, int16_t device, int64_t time) {
        append(RecordKind::Alloc, ptr, size, device, time);
    }
    void onFree(uint64_t ptr, uint64_t size, int16_t device, int64_t time) {
        append(RecordKind::Free, ptr, size, device, time);
    }
    // The same at this moment, read from TickClock (the hook's variant: the
    // reading side turns the ticks into nanoseconds).
    void onAllocNow(uint64_t ptr, uint64_t size, int16_t device) {
        append(RecordKind::Alloc, ptr, size, device, static_cast<int64_t>(TickClock::now()),
               kInTicks);
    }
    void onFreeNow(uint64_t ptr, uint64_t size, int16_t device) {
        append(RecordKind::Free, ptr, size, device, static_cast<int64_t>(TickClock::now()),
               kInTicks);
    }

    // The same from the owner's thread, for a caller that knows it is on it
    // (the CPU allocator wrapper's route, capture.cpp): no thread check.
    void onAllocOwnedNow(uint64_t ptr, uint64_t size, int16_t device) {
        appendOwned(RecordKind::Alloc, ptr, size, device, static_cast<int64_t>(TickClock::now()),
                    kInTicks, owner_log_.phase.load(std::memory_order_relaxed));
    }
    void onFreeOwnedNow(uint64_t ptr, uint64_t size, int16_t device) {
        appendOwned(RecordKind::Free, ptr, size, device, static_cast<int64_t>(TickClock::now()),
                    kInTicks, owner_log_.phase.load(std::memory_order_relaxed));
    }
    bool ownedByCallingThread() const { return onOwnerThread(); }

    // The phase later events belong to (read by the hook, atomically).
    void setPhase(PhaseId phase) { owner_log_.phase.store(phase.value, std::memory_order_release); }

    // The training thread's records (lock-free, like the hot path).
    // Ground truth for a live allocation (by the storage's base pointer).
    void tag(uint64_t ptr, Category category) {
        append(RecordKind::Tag, ptr, static_cast<uint64_t>(category), 0, 0);
    }
    // A position in the allocation sequence; see classifyLiveSince. (The
    // training thread's: the ledger's owner.)
    uint64_t mark() const { return owner_log_.write.load(std::memory_order_acquire); }
    // Untagged allocations made since `mark` and still alive become `category`.
    void classifyLiveSince(uint64_t mark, Category category) {
        append(RecordKind::Classify, mark, static_cast<uint64_t>(category), 0, 0);
    }
    // Phases, from one thread at a time (the owner's, or autograd's worker
    // while the owner waits in backward), strictly nested: numbered here from
    // the writer's next id, which must have no other source of phases, and
    // named on the ledger's thread, "parent / leaf". Each leaf's text is kept
    // for the ledger's life, so leaves should come from a small set: a Step
    // phase is named by its leaf and its step, e.g. leaf "step", step 3:
    // "step 3". Events reported after begin carry the phase's id.
    PhaseId beginPhase(PhaseKind kind, std::string_view leaf, int step, int block, int64_t time);
    // Ends the innermost open phase, `id`; later events carry `parent`'s.
    void endPhase(PhaseId id, PhaseId parent, int64_t time);
    // Hands the step's phases and then its events to the writer (on the
    // ledger's thread, within about 10 ms): untagged allocations become
    // temporary.
    void commit();
    // Returns when every record so far has been read and its events handed to
    // the writer (before the writer is closed).
    void finish();

    // Keeps the ledger's thread on these CPUs (see memscope/cpu_set.h): off
    // the training thread's core. False when the system refuses, and the
    // thread runs where it did. Wherever it runs, it yields its core every
    // kYieldRecords records it reads, so that a thread waiting for that core
    // (OpenBLAS's worker, say, with a matrix product to do) gets it within a
    // few microseconds rather than after the whole batch.
    bool keepThreadOn(const CpuSet& cpus);

    struct Counts {
        uint64_t allocs = 0;
        uint64_t frees = 0;
        uint64_t unmatched_frees = 0;   // frees of memory allocated before recording
        uint64_t late_tags = 0;         // tags that came after the allocation was committed
        uint64_t hook_allocations = 0;  // log chunks the hook had to allocate itself
        // Phase batches the writer refused: phases from another source than
        // this ledger took the ids. A bug in the producer, not in the data.
        uint64_t refused_phase_batches = 0;
    };
    Counts counts();  // reads what is left first, as finish() does

private:
    enum class RecordKind : uint8_t {
        Alloc,     // ptr, size
        Free,      // ptr, size (0: the allocation's)
        Tag,       // ptr, size = the Category
        Classify,  // ptr = the mark, size = the Category
        Commit,
        PhaseBegin,  // phase = its id, ptr = the leaf (a std::string in leaves_),
                     // size = step << 32 | block (as uint32), device = the PhaseKind
        PhaseEnd,    // phase = its id
    };
    // One log record, as the hot path writes it.
    struct Record {
        uint64_t ptr;
        uint64_t size;
        int64_t time;
        // The other log's write position when this record was written: what
        // the reader must have read there first (see drain()).
        uint64_t other;
        uint32_t phase;
        int16_t device;
        uint8_t kind;                // a RecordKind, | kInTicks when `time` is TickClock's
        std::atomic<uint8_t> ready;  // shared log: set last (release), cleared once read
    };
    static constexpr uint8_t kInTicks = 0x80;
    static_assert(sizeof(Record) == 40);
    static constexpr uint64_t kChunkRecords = 4096;
    static constexpr uint64_t kPrefetchRecords = 8;        // 320 bytes: 5 lines ahead
    static constexpr size_t kMaxChunks = size_t{1} << 18;  // 2^30 records per run and log
    static constexpr size_t kMaxSpareChunks = 64;          // 10 MiB kept for reuse
    struct Chunk {
        std::array<Record, kChunkRecords> records;
    };
    // Two logs. The owner's (the thread that made the ledger: the training
    // thread, which reports nearly everything) has one writer, so claiming a
    // slot is a plain increment and publishing it a plain store: no locked
    // instruction, which would wait for every store before it to reach the
    // cache. Other threads (autograd's workers, deleters run elsewhere) share
    // the second log and claim slots with an atomic increment.
    //
    // The logs' memory comes from mmap, not malloc: glibc raises its mmap and
    // trim thresholds to the size of any mapped block freed, and blocks of
    // this size would retune the heap of the very run being measured.
    //
    // What the hook touches and what the reading side writes lie on separate
    // cache lines: the reader advances `read` for every record, and on the
    // line of `write` each of those stores would take the line from the
    // training thread's core and each report would take it back.
    //
    // The owner keeps its position and the chunk it writes in beside `write`,
    // on the line it writes anyway, so that a report finds its slot without
    // a lookup through the slot array: a load that depends on another, and
    // often a cache miss once the thread's kernels have run.
    struct Log {
        alignas(64) std::atomic<uint64_t> write{0};  // owner: records published; shared: claimed
        Chunk** chunks = nullptr;                // kMaxChunks slots, mapped zero (none); see slot()
        std::atomic<uint64_t> installed_end{0};  // past the highest chunk number installed
        uint64_t owned_next = 0;                 // owner log: `write`, the owner's own copy
        Chunk* owned_chunk = nullptr;            // owner log: the chunk of owned_next - 1
        uintptr_t thread = 0;                    // owner log: the owner's thread pointer
        std::atomic<uint32_t> phase{0};          // owner log: the phase all events are in now
        alignas(64) uint64_t read = 0;           // the reading side's
        uint64_t step_start = 0;                 // `read` at the previous commit
        uint64_t busiest_step = 0;
        std::atomic_ref<Chunk*> slot(uint64_t n) const {
            return std::atomic_ref<Chunk*>(chunks[n % kMaxChunks]);
        }
    };

    // The thread pointer (the TLS base) tells threads apart without a call.
    static uintptr_t threadPointer() {
        return reinterpret_cast<uintptr_t>(__builtin_thread_pointer());
    }
    bool onOwnerThread() const { return threadPointer() == owner_log_.thread; }
    // A record of the phase events happen in now.
    void append(RecordKind kind, uint64_t ptr, uint64_t size, int16_t device, int64_t time,
                uint8_t flags = 0) {
        append(kind, ptr, size, device, time, flags,
               owner_log_.phase.load(std::memory_order_relaxed));
    }
    void append(RecordKind kind, uint64_t ptr, uint64_t size, int16_t device, int64_t time,
                uint8_t flags, uint32_t phase) {
        if (onOwnerThread()) return appendOwned(kind, ptr, size, device, time, flags, phase);
        Log& log = shared_log_;
        const uint64_t i = log.write.fetch_add(1, std::memory_order_relaxed);
        Chunk* chunk = log.slot(i / kChunkRecords).load(std::memory_order_acquire);
        if (chunk == nullptr) chunk = installChunk(log, i / kChunkRecords);
        Record& r = chunk->records[i % kChunkRecords];
        fill(r, kind, ptr, size, device, time, flags, phase);
        r.other = owner_log_.write.load(std::memory_order_acquire);
        r.ready.store(1, std::memory_order_release);
    }
    // The owner's: plain stores, published by the release store of `write`.
    void appendOwned(RecordKind kind, uint64_t ptr, uint64_t size, int16_t device, int64_t time,
                     uint8_t flags, uint32_t phase) {
        Log& log = owner_log_;
        const uint64_t i = log.owned_next;
        Chunk* chunk = log.owned_chunk;
        // A new chunk at each boundary. The reader recycles a chunk only once
        // it has read its last record, which this thread wrote last.
        if (i % kChunkRecords == 0 || chunk == nullptr) {
            chunk = log.slot(i / kChunkRecords).load(std::memory_order_acquire);
            if (chunk == nullptr) chunk = installChunk(log, i / kChunkRecords);
            log.owned_chunk = chunk;
        }
        Record& r = chunk->records[i % kChunkRecords];
        // Asks for the line a few records on now, so that writing it later
        // does not wait: a recycled chunk's lines were last read on the
        // reader's core, and the first store to each would stall this thread.
        if (i % kChunkRecords + kPrefetchRecords < kChunkRecords)
            __builtin_prefetch(&chunk->records[i % kChunkRecords + kPrefetchRecords], 1, 3);
        fill(r, kind, ptr, size, device, time, flags, phase);
        r.other = shared_log_.write.load(std::memory_order_acquire);
        log.owned_next = i + 1;
        log.write.store(i + 1, std::memory_order_release);
    }
    static void fill(Record& r, RecordKind kind, uint64_t ptr, uint64_t size, int16_t device,
                     int64_t time, uint8_t flags, uint32_t phase) {
        r.ptr = ptr;
        r.size = size;
        r.time = time;
        r.phase = phase;
        r.device = device;
        r.kind = static_cast<uint8_t>(static_cast<uint8_t>(kind) | flags);
    }
    // The chunk for chunk number `n`, allocated if nobody has yet (the slow path).
    Chunk* installChunk(Log& log, uint64_t n, bool from_hook = true);
    static Chunk* newChunk();  // mapped, ready flags cleared (its pages touched)
    static void deleteChunk(Chunk* chunk);
    void releaseLogs();  // every chunk and slot array (the destructor's)
    // Reads both logs up to what has been published (mutex_ held); whether
    // there was anything to read. The ledger's thread passes `yielding`.
    bool drain(bool yielding = false);
    static constexpr uint64_t kYieldRecords = 128;  // about 7 us of reading
    // The next record of `log`, once written; its chunk is recycled after.
    Record& recordAt(Log& log);
    void advance(Log& log);
    void process(const Record& r);
    int64_t timeOf(const Record& r) const;  // EpochClock nanoseconds
    void processAlloc(const Record& r);
    void processFree(const Record& r);
    void processTag(uint64_t ptr, Category category);
    void processClassify(uint64_t mark, Category category);
    void processCommit();
    void processPhaseBegin(const Record& r);
    void processPhaseEnd(const Record& r);
    void flushPhases();  // the phases read so far, to the writer
    void readerLoop();
    // Allocates `log`'s chunks for its next `records` slots (commit).
    void reserveAhead(Log& log, uint64_t records);

    Log owner_log_, shared_log_;
    std::atomic<uint64_t> hook_allocations_{0};

    // The phase side's (one thread at a time, see beginPhase): the next id,
    // and the leaves' text. A node container, so that the strings never move
    // and the reading side may read one whose record it has read.
    struct TextHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    uint32_t next_phase_;
    std::unordered_set<std::string, TextHash, std::equal_to<>> leaves_;

    static constexpr uint32_t kNone = UINT32_MAX;
    // What the reading side knows of a pending event besides the event.
    struct PendingInfo {
        uint32_t alloc_ref = kNone;  // for a free: its alloc among the pending events
        bool tagged = false;
    };
    struct Live {
        uint32_t pending = kNone;  // index into pending_, or kNone once committed
        uint64_t seq = 0;          // the owner log's read position when it was read (mark())
        uint64_t size = 0;         // for frees reported without one (the CPU allocator wrapper)
        Category category = Category::Unknown;  // final once committed
    };

    BackgroundTraceWriter& writer_;
    // The reading side's state, whoever reads (the hook never takes this
    // lock), from a cache line of its own on.
    alignas(64) std::mutex mutex_;
    // The events of the step so far, held back until commit, and what the
    // reading side knows of each (parallel): events go to the writer as they are.
    std::vector<Event> pending_;
    std::vector<PendingInfo> pending_info_;
    AddressTable<Live> live_;
    TickMapper ticks_;  // sampled at the start of each drain
    // Phases read and not yet with the writer: they get ids first_pending_phase_, +1, ...
    struct OpenPhase {
        uint32_t id;
        std::string name;
    };
    std::vector<OpenPhase> open_phases_;
    uint32_t first_pending_phase_;
    std::vector<Phase> pending_phases_;
    std::vector<std::string> pending_phase_names_;
    std::vector<std::pair<PhaseId, int64_t>> pending_phase_ends_;  // of phases handed over
    // Fully read chunks, for reserveAhead to reuse.
    std::vector<Chunk*> spare_chunks_;
    Counts counts_;

    // The ledger's thread: it polls the logs, and the destructor wakes it to stop.
    std::mutex wake_mutex_;
    std::condition_variable wake_;
    bool stop_ = false;  // under wake_mutex_
    std::thread reader_;
};

}  // namespace memscope::trainer
