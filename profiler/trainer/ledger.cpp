#include "ledger.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <new>
#include <string>
#include <system_error>

namespace memscope::trainer {
namespace {

Event makeEvent(EventKind kind, uint64_t ptr, uint64_t size, int16_t device, int64_t time,
                PhaseId phase) {
    Event e;
    e.time = time;
    e.address = ptr;
    e.size = size;
    e.phase = phase;
    e.device = device;
    e.kind = kind;
    return e;
}

void* mapZeroed(size_t bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        throw std::system_error(errno, std::generic_category(), "memory for the recording's log");
    return p;
}

}  // namespace

AllocationLedger::Chunk* AllocationLedger::newChunk() {
    return new (mapZeroed(sizeof(Chunk))) Chunk;
}

void AllocationLedger::deleteChunk(Chunk* chunk) {
    if (chunk == nullptr) return;
    chunk->~Chunk();
    munmap(chunk, sizeof(Chunk));
}

AllocationLedger::AllocationLedger(BackgroundTraceWriter& writer)
    : next_phase_(writer.nextPhaseId().value), writer_(writer), first_pending_phase_(next_phase_) {
    owner_log_.thread = threadPointer();
    try {
        // Mapped zero: every slot starts empty, and only the slots used are
        // ever faulted in.
        for (Log* log : {&owner_log_, &shared_log_})
            log->chunks = static_cast<Chunk**>(mapZeroed(kMaxChunks * sizeof(Chunk*)));
        reserveAhead(owner_log_, 16 * kChunkRecords);
        reserveAhead(shared_log_, kChunkRecords);
    } catch (...) {
        releaseLogs();
        throw;
    }
    // The thread starts with every signal blocked (it inherits the mask), so
    // that signals meant for the process land on the threads that handle them.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    try {
        reader_ = std::thread([this] {
            pthread_setname_np(pthread_self(), "memscope-ledger");  // for top, perf, gdb
            readerLoop();
        });
    } catch (...) {
        pthread_sigmask(SIG_SETMASK, &previous, nullptr);
        releaseLogs();
        throw;
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

AllocationLedger::~AllocationLedger() {
    {
        std::lock_guard lock(wake_mutex_);
        stop_ = true;
    }
    wake_.notify_one();
    reader_.join();
    releaseLogs();
}

void AllocationLedger::releaseLogs() {
    for (Log* log : {&owner_log_, &shared_log_}) {
        if (log->chunks == nullptr) continue;
        // Slots below the read position were emptied as they were read.
        const uint64_t from = log->read / kChunkRecords;
        const uint64_t to = log->installed_end.load(std::memory_order_acquire);
        for (uint64_t n = from; n < to && n - from < kMaxChunks; ++n)
            deleteChunk(log->slot(n).exchange(nullptr, std::memory_order_acq_rel));
        munmap(log->chunks, kMaxChunks * sizeof(Chunk*));
        log->chunks = nullptr;
    }
    for (Chunk* c : spare_chunks_) deleteChunk(c);
    spare_chunks_.clear();
}

void AllocationLedger::readerLoop() {
    // Polled, not woken by commit(): the scheduler tends to place a thread
    // woken by the training thread on the training thread's core, where it
    // preempted it (measured: one step in five) and took its caches. Every
    // 10 ms while there is work, every 100 ms while there is none.
    auto period = std::chrono::milliseconds(10);
    while (true) {
        {
            std::unique_lock lock(wake_mutex_);
            if (wake_.wait_for(lock, period, [&] { return stop_; }))
                return;  // what is left is finish()'s, on the owner's thread
        }
        std::lock_guard lock(mutex_);
        period = std::chrono::milliseconds(drain(true) ? 10 : 100);
    }
}

bool AllocationLedger::keepThreadOn(const CpuSet& cpus) {
    return cpus.applyTo(reader_.native_handle());
}

void AllocationLedger::commit() {
    append(RecordKind::Commit, 0, 0, 0, 0);
}

PhaseId AllocationLedger::beginPhase(PhaseKind kind, std::string_view leaf, int step, int block,
                                     int64_t time) {
    auto it = leaves_.find(leaf);
    if (it == leaves_.end()) it = leaves_.emplace(leaf).first;  // a new leaf: kept for the run
    const uint32_t id = next_phase_++;
    const uint64_t where =
        uint64_t{static_cast<uint32_t>(step)} << 32 | static_cast<uint32_t>(block);
    append(RecordKind::PhaseBegin, reinterpret_cast<uint64_t>(&*it), where,
           static_cast<int16_t>(kind), time, 0, id);
    setPhase(PhaseId(id));
    return PhaseId(id);
}

void AllocationLedger::endPhase(PhaseId id, PhaseId parent, int64_t time) {
    append(RecordKind::PhaseEnd, 0, 0, 0, time, 0, id.value);
    setPhase(parent);
}

void AllocationLedger::finish() {
    std::lock_guard lock(mutex_);
    drain();
    flushPhases();
}

AllocationLedger::Chunk* AllocationLedger::installChunk(Log& log, uint64_t n, bool from_hook) {
    const std::atomic_ref<Chunk*> slot = log.slot(n);
    Chunk* current = slot.load(std::memory_order_acquire);
    if (current) return current;
    Chunk* fresh = nullptr;
    if (!from_hook && !spare_chunks_.empty()) {  // reserveAhead, under mutex_
        fresh = spare_chunks_.back();
        spare_chunks_.pop_back();
    } else {
        fresh = newChunk();
    }
    if (slot.compare_exchange_strong(current, fresh, std::memory_order_acq_rel)) {
        if (from_hook) hook_allocations_.fetch_add(1, std::memory_order_relaxed);
        uint64_t end = log.installed_end.load(std::memory_order_relaxed);
        while (end < n + 1 &&
               !log.installed_end.compare_exchange_weak(end, n + 1, std::memory_order_acq_rel)) {
        }
        return fresh;
    }
    deleteChunk(fresh);  // another thread installed one first
    return current;
}

void AllocationLedger::reserveAhead(Log& log, uint64_t records) {
    const uint64_t at = log.write.load(std::memory_order_relaxed);
    const uint64_t from = at / kChunkRecords;
    const uint64_t to = (at + records) / kChunkRecords;
    for (uint64_t n = from; n <= to && n - from < kMaxChunks / 2; ++n) installChunk(log, n, false);
}

AllocationLedger::Record& AllocationLedger::recordAt(Log& log) {
    const std::atomic_ref<Chunk*> slot = log.slot(log.read / kChunkRecords);
    Chunk* chunk;
    // A shared slot claimed on another thread may still be being filled in.
    while ((chunk = slot.load(std::memory_order_acquire)) == nullptr) std::this_thread::yield();
    Record& r = chunk->records[log.read % kChunkRecords];
    if (&log == &shared_log_)
        while (r.ready.load(std::memory_order_acquire) == 0) std::this_thread::yield();
    return r;
}

void AllocationLedger::advance(Log& log) {
    if (&log == &shared_log_) recordAt(log).ready.store(0, std::memory_order_relaxed);
    if (log.read % kChunkRecords == kChunkRecords - 1) {
        // Every slot of the chunk is read (and its ready flags cleared):
        // nothing writes it again, and reserveAhead may reuse it, which
        // spares the page faults of fresh memory on every chunk.
        const std::atomic_ref<Chunk*> slot = log.slot(log.read / kChunkRecords);
        Chunk* chunk = slot.exchange(nullptr, std::memory_order_acq_rel);
        if (spare_chunks_.size() < kMaxSpareChunks)
            spare_chunks_.push_back(chunk);
        else
            deleteChunk(chunk);
    }
    ++log.read;
}

// The two logs are read as one sequence that keeps every happens-before
// between their records: a record's `other` is the other log's write position
// when it was written, so the other log's records below it happened first.
// Records that neither precede were concurrent, and either order is true.
bool AllocationLedger::drain(bool yielding) {
    const uint64_t read_before = owner_log_.read + shared_log_.read;
    // Owner first: the owner's `other`s are then within the shared snapshot
    // (each was loaded before its record was published, and so before ours).
    uint64_t owner_end = owner_log_.write.load(std::memory_order_acquire);
    uint64_t shared_end = shared_log_.write.load(std::memory_order_acquire);
    // After the ends: every record read in this pass read its ticks before
    // this pair, and after the previous pass's pair or near it.
    ticks_.sample();
    const auto reload = [&] {
        owner_end = owner_log_.write.load(std::memory_order_acquire);
        shared_end = shared_log_.write.load(std::memory_order_acquire);
        ticks_.sample();
    };
    while (true) {
        const bool owner_left = owner_log_.read < owner_end;
        const bool shared_left = shared_log_.read < shared_end;
        if (!owner_left && !shared_left) return owner_log_.read + shared_log_.read != read_before;
        if (owner_left) {
            Record& o = recordAt(owner_log_);
            if (o.other <= shared_log_.read) {
                if (yielding && owner_log_.read % kYieldRecords == 0) sched_yield();
                process(o);
                advance(owner_log_);
                continue;
            }
            if (!shared_left) {  // not expected (see above); look again
                reload();
                continue;
            }
        } else if (recordAt(shared_log_).other > owner_log_.read) {
            // Written after owner records this snapshot has not seen: read
            // them first.
            reload();
            continue;
        }
        if (yielding && shared_log_.read % kYieldRecords == 0) sched_yield();
        process(recordAt(shared_log_));
        advance(shared_log_);
    }
}

void AllocationLedger::process(const Record& r) {
    switch (static_cast<RecordKind>(r.kind & ~kInTicks)) {
        case RecordKind::Alloc:
            processAlloc(r);
            return;
        case RecordKind::Free:
            processFree(r);
            return;
        case RecordKind::Tag:
            processTag(r.ptr, static_cast<Category>(r.size));
            return;
        case RecordKind::Classify:
            processClassify(r.ptr, static_cast<Category>(r.size));
            return;
        case RecordKind::Commit:
            processCommit();
            return;
        case RecordKind::PhaseBegin:
            processPhaseBegin(r);
            return;
        case RecordKind::PhaseEnd:
            processPhaseEnd(r);
            return;
    }
}

int64_t AllocationLedger::timeOf(const Record& r) const {
    return (r.kind & kInTicks) ? ticks_.toEpochNs(static_cast<uint64_t>(r.time)) : r.time;
}

void AllocationLedger::processAlloc(const Record& r) {
    Event e = makeEvent(EventKind::Alloc, r.ptr, r.size, r.device, timeOf(r), PhaseId(r.phase));
    e.category = Category::Temporary;
    const auto pending = static_cast<uint32_t>(pending_.size());
    pending_.push_back(e);
    pending_info_.push_back(PendingInfo{});
    // An address can only be live once; a stale entry means we missed its
    // free (freed on a thread without the hook): this one replaces it.
    live_.put(r.ptr, Live{pending, owner_log_.read, r.size, Category::Temporary});
    ++counts_.allocs;
}

void AllocationLedger::processFree(const Record& r) {
    Event e =
        makeEvent(EventKind::FreeCompleted, r.ptr, r.size, r.device, timeOf(r), PhaseId(r.phase));
    PendingInfo info;
    if (const Live* live = live_.find(r.ptr); live == nullptr) {
        // Allocated before recording began: the timeline treats it as a ghost,
        // unless its size is unknown, which a ghost cannot do without.
        ++counts_.unmatched_frees;
        if (r.size == 0) return;
        e.category = Category::Unknown;
    } else {
        info.alloc_ref = live->pending;
        e.category = live->category;
        if (r.size == 0) e.size = live->size;
        live_.erase(r.ptr);
    }
    pending_.push_back(e);
    pending_info_.push_back(info);
    ++counts_.frees;
}

void AllocationLedger::processTag(uint64_t ptr, Category category) {
    const Live* live = live_.find(ptr);
    if (live == nullptr) return;
    if (live->pending == kNone) {
        if (live->category != category) ++counts_.late_tags;
        return;
    }
    pending_[live->pending].category = category;
    pending_info_[live->pending].tagged = true;
}

void AllocationLedger::processClassify(uint64_t mark, Category category) {
    live_.forEach([&](uint64_t, Live& live) {
        if (live.pending == kNone || live.seq < mark) return;
        if (pending_info_[live.pending].tagged) return;
        pending_[live.pending].category = category;
        pending_info_[live.pending].tagged = true;
    });
}

void AllocationLedger::processPhaseBegin(const Record& r) {
    const auto& leaf = *reinterpret_cast<const std::string*>(r.ptr);
    Phase p;
    p.kind = static_cast<PhaseKind>(r.device);
    p.parent = open_phases_.empty() ? PhaseId() : PhaseId(open_phases_.back().id);
    p.step = static_cast<int32_t>(static_cast<uint32_t>(r.size >> 32));
    p.block = static_cast<int32_t>(static_cast<uint32_t>(r.size));
    p.device = -1;
    p.start = p.end = timeOf(r);
    std::string name = p.kind == PhaseKind::Step ? leaf + " " + std::to_string(p.step) : leaf;
    if (!open_phases_.empty()) name = open_phases_.back().name + " / " + name;
    pending_phases_.push_back(p);
    pending_phase_names_.push_back(name);
    open_phases_.push_back(OpenPhase{r.phase, std::move(name)});
}

void AllocationLedger::processPhaseEnd(const Record& r) {
    // Nested strictly (beginPhase): the innermost open phase is this one.
    while (!open_phases_.empty()) {
        const uint32_t id = open_phases_.back().id;
        open_phases_.pop_back();
        if (id == r.phase) break;
    }
    const int64_t end = timeOf(r);
    if (r.phase >= first_pending_phase_ && r.phase - first_pending_phase_ < pending_phases_.size())
        pending_phases_[r.phase - first_pending_phase_].end = end;
    else
        pending_phase_ends_.emplace_back(PhaseId(r.phase), end);
}

void AllocationLedger::flushPhases() {
    // Ends first: they are of phases handed over earlier.
    if (!pending_phase_ends_.empty()) writer_.endPhases(pending_phase_ends_);
    pending_phase_ends_.clear();
    if (pending_phases_.empty()) return;
    // The events already carry these ids: refused (another source of phases
    // on this writer), they are counted, and the run reports it.
    if (!writer_.addPhases(PhaseId(first_pending_phase_), pending_phases_, pending_phase_names_))
        ++counts_.refused_phase_batches;
    first_pending_phase_ += static_cast<uint32_t>(pending_phases_.size());
    pending_phases_.clear();
    pending_phase_names_.clear();
}

void AllocationLedger::processCommit() {
    flushPhases();  // before the events that name them
    // The next step gets chunks for twice the busiest step so far, per log.
    for (Log* log : {&owner_log_, &shared_log_}) {
        log->busiest_step = std::max(log->busiest_step, log->read - log->step_start);
        log->step_start = log->read;
        reserveAhead(*log, 2 * log->busiest_step);
    }
    for (size_t i = 0; i < pending_.size(); ++i)
        if (pending_info_[i].alloc_ref != kNone)
            pending_[i].category = pending_[pending_info_[i].alloc_ref].category;
    live_.forEach([&](uint64_t, Live& live) {
        if (live.pending == kNone) return;
        live.category = pending_[live.pending].category;
        live.pending = kNone;
    });
    // One writer call per step: one lock, not one per event. The hook never
    // waits on the writer: it takes neither this lock nor the writer's.
    writer_.append(std::span<const Event>(pending_));
    pending_.clear();
    pending_info_.clear();
}

AllocationLedger::Counts AllocationLedger::counts() {
    std::lock_guard lock(mutex_);
    drain();
    flushPhases();
    Counts c = counts_;
    c.hook_allocations = hook_allocations_.load(std::memory_order_relaxed);
    return c;
}

}  // namespace memscope::trainer
