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
    for (Chunk* c : spare_chunks_) delete c;
}

AllocationLedger::Chunk* AllocationLedger::installChunk(uint64_t n, bool from_hook) {
    std::atomic<Chunk*>& slot = chunks_[n % kMaxChunks];
    Chunk* current = slot.load(std::memory_order_acquire);
    if (current) return current;
    Chunk* fresh = nullptr;
    if (!from_hook && !spare_chunks_.empty()) {  // reserveAhead, under mutex_
        fresh = spare_chunks_.back();
        spare_chunks_.pop_back();
    } else {
        fresh = new Chunk;
        for (Record& r : fresh->records) r.ready.store(0, std::memory_order_relaxed);
    }
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
            // Every slot of the chunk is read (and its ready flags cleared):
            // nothing writes it again, and reserveAhead may reuse it, which
            // spares the page faults of fresh memory on every chunk.
            slot.store(nullptr, std::memory_order_release);
            if (spare_chunks_.size() < kMaxSpareChunks)
                spare_chunks_.push_back(chunk);
            else
                delete chunk;
        }
    }
}

void AllocationLedger::process(const Record& r) const {
    const PhaseId phase(r.phase);
    if (!r.is_free) {
        Event e = makeEvent(EventKind::Alloc, r.ptr, r.size, r.device, r.time, phase);
        e.category = Category::Temporary;
        const auto index = static_cast<uint32_t>(pending_.size());
        pending_.push_back(e);
        pending_info_.push_back(PendingInfo{});
        // An address can only be live once; a stale entry means we missed its
        // free (freed on a thread without the hook): the new allocation replaces it.
        live_.put(r.ptr, Live{index, seq_++, r.size, Category::Temporary});
        ++counts_.allocs;
        return;
    }
    Event e = makeEvent(EventKind::FreeCompleted, r.ptr, r.size, r.device, r.time, phase);
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

void AllocationLedger::tag(uint64_t ptr, Category category) {
    std::lock_guard lock(mutex_);
    drain();
    const Live* live = live_.find(ptr);
    if (live == nullptr) return;
    if (live->pending == kNone) {
        if (live->category != category) ++counts_.late_tags;
        return;
    }
    pending_[live->pending].category = category;
    pending_info_[live->pending].tagged = true;
}

uint64_t AllocationLedger::mark() const {
    std::lock_guard lock(mutex_);
    drain();
    return seq_;
}

void AllocationLedger::classifyLiveSince(uint64_t mark, Category category) {
    std::lock_guard lock(mutex_);
    drain();
    live_.forEach([&](uint64_t, Live& live) {
        if (live.pending == kNone || live.seq < mark) return;
        if (pending_info_[live.pending].tagged) return;
        pending_[live.pending].category = category;
        pending_info_[live.pending].tagged = true;
    });
}

void AllocationLedger::commit() {
    {
        std::lock_guard lock(mutex_);
        drain();
        // The next step gets chunks for twice the busiest step so far.
        const uint64_t written = write_.load(std::memory_order_relaxed);
        busiest_step_ = std::max(busiest_step_, written - step_start_);
        step_start_ = written;
        reserveAhead(2 * busiest_step_);
        for (size_t i = 0; i < pending_.size(); ++i)
            if (pending_info_[i].alloc_ref != kNone)
                pending_[i].category = pending_[pending_info_[i].alloc_ref].category;
        live_.forEach([&](uint64_t, Live& live) {
            if (live.pending == kNone) return;
            live.category = pending_[live.pending].category;
            live.pending = kNone;
        });
        // The two buffers trade places: no copy, and both keep their capacity.
        events_.clear();
        events_.swap(pending_);
        pending_info_.clear();
    }
    // Outside the lock: the writer takes its own, and the hook must not wait
    // on it. One call per step: one lock, not one per event.
    writer_.append(std::span<const Event>(events_));
}

AllocationLedger::Counts AllocationLedger::counts() const {
    std::lock_guard lock(mutex_);
    drain();
    Counts c = counts_;
    c.hook_allocations = hook_allocations_.load(std::memory_order_relaxed);
    return c;
}

}  // namespace memscope::trainer
