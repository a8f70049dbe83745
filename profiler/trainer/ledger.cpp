#include "ledger.h"

#include <algorithm>
#include <thread>

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

}  // namespace

AllocationLedger::AllocationLedger(BackgroundTraceWriter& writer)
    : chunks_(std::make_unique<std::atomic<Chunk*>[]>(kMaxChunks)), writer_(writer) {
    for (size_t i = 0; i < kMaxChunks; ++i) chunks_[i].store(nullptr, std::memory_order_relaxed);
    reserveAhead(16 * kChunkRecords);
}

AllocationLedger::~AllocationLedger() {
    for (size_t i = 0; i < kMaxChunks; ++i) delete chunks_[i].load(std::memory_order_acquire);
}

AllocationLedger::Chunk* AllocationLedger::installChunk(uint64_t n, bool from_hook) {
    std::atomic<Chunk*>& slot = chunks_[n % kMaxChunks];
    Chunk* current = slot.load(std::memory_order_acquire);
    if (current) return current;
    auto* fresh = new Chunk;
    for (Record& r : fresh->records) r.ready.store(0, std::memory_order_relaxed);
    if (slot.compare_exchange_strong(current, fresh, std::memory_order_acq_rel)) {
        if (from_hook) hook_allocations_.fetch_add(1, std::memory_order_relaxed);
        return fresh;
    }
    delete fresh;  // another thread installed one first
    return current;
}

void AllocationLedger::reserveAhead(uint64_t records) {
    const uint64_t from = write_.load(std::memory_order_relaxed) / kChunkRecords;
    const uint64_t to = (write_.load(std::memory_order_relaxed) + records) / kChunkRecords;
    for (uint64_t n = from; n <= to && n - from < kMaxChunks / 2; ++n) installChunk(n, false);
}

void AllocationLedger::drain() const {
    const uint64_t end = write_.load(std::memory_order_acquire);
    for (; read_ < end; ++read_) {
        const uint64_t n = read_ / kChunkRecords;
        std::atomic<Chunk*>& slot = chunks_[n % kMaxChunks];
        Chunk* chunk;
        // A slot claimed on another thread may still be being filled in.
        while ((chunk = slot.load(std::memory_order_acquire)) == nullptr) std::this_thread::yield();
        Record& r = chunk->records[read_ % kChunkRecords];
        while (r.ready.load(std::memory_order_acquire) == 0) std::this_thread::yield();
        process(r);
        r.ready.store(0, std::memory_order_relaxed);
        if (read_ % kChunkRecords == kChunkRecords - 1) {
            // Every slot of the chunk is read: nothing writes it again.
            slot.store(nullptr, std::memory_order_release);
            delete chunk;
        }
    }
}

void AllocationLedger::process(const Record& r) const {
    Pending p;
    const PhaseId phase(r.phase);
    if (!r.is_free) {
        p.event = makeEvent(EventKind::Alloc, r.ptr, r.size, r.device, r.time, phase);
        p.event.category = Category::Temporary;
        const auto index = static_cast<uint32_t>(pending_.size());
        pending_.push_back(p);
        // An address can only be live once; a stale entry means we missed its
        // free (freed on a thread without the hook): the new allocation replaces it.
        live_[r.ptr] = Live{index, seq_++, Category::Temporary};
        ++counts_.allocs;
        return;
    }
    p.event = makeEvent(EventKind::FreeCompleted, r.ptr, r.size, r.device, r.time, phase);
    auto it = live_.find(r.ptr);
    if (it == live_.end()) {
        // Allocated before recording began: the timeline treats it as a ghost.
        p.event.category = Category::Unknown;
        ++counts_.unmatched_frees;
    } else {
        p.alloc_ref = it->second.pending;
        p.event.category = it->second.category;
        live_.erase(it);
    }
    pending_.push_back(p);
    ++counts_.frees;
}

void AllocationLedger::tag(uint64_t ptr, Category category) {
    std::lock_guard lock(mutex_);
    drain();
    auto it = live_.find(ptr);
    if (it == live_.end()) return;
    if (it->second.pending == kNone) {
        if (it->second.category != category) ++counts_.late_tags;
        return;
    }
    Pending& p = pending_[it->second.pending];
    p.event.category = category;
    p.tagged = true;
}

uint64_t AllocationLedger::mark() const {
    std::lock_guard lock(mutex_);
    drain();
    return seq_;
}

void AllocationLedger::classifyLiveSince(uint64_t mark, Category category) {
    std::lock_guard lock(mutex_);
    drain();
    for (auto& [ptr, live] : live_) {
        if (live.pending == kNone || live.seq < mark) continue;
        Pending& p = pending_[live.pending];
        if (p.tagged) continue;
        p.event.category = category;
        p.tagged = true;
    }
}

void AllocationLedger::commit() {
    std::vector<Pending> events;
    {
        std::lock_guard lock(mutex_);
        drain();
        // The next step gets chunks for twice the busiest step so far.
        const uint64_t written = write_.load(std::memory_order_relaxed);
        busiest_step_ = std::max(busiest_step_, written - step_start_);
        step_start_ = written;
        reserveAhead(2 * busiest_step_);
        for (Pending& p : pending_)
            if (p.event.kind == EventKind::FreeCompleted && p.alloc_ref != kNone)
                p.event.category = pending_[p.alloc_ref].event.category;
        for (auto& [ptr, live] : live_) {
            if (live.pending == kNone) continue;
            live.category = pending_[live.pending].event.category;
            live.pending = kNone;
        }
        events.swap(pending_);
    }
    // Outside the lock: the writer takes its own, and the hook must not wait on it.
    for (const Pending& p : events) writer_.append(p.event);
}

AllocationLedger::Counts AllocationLedger::counts() const {
    std::lock_guard lock(mutex_);
    drain();
    Counts c = counts_;
    c.hook_allocations = hook_allocations_.load(std::memory_order_relaxed);
    return c;
}

}  // namespace memscope::trainer
