#include "ledger.h"

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

void AllocationLedger::onAlloc(uint64_t ptr, uint64_t size, int16_t device, int64_t time) {
    std::lock_guard lock(mutex_);
    Pending p;
    p.event = makeEvent(EventKind::Alloc, ptr, size, device, time, phase_);
    p.event.category = Category::Temporary;
    const auto index = static_cast<uint32_t>(pending_.size());
    pending_.push_back(p);
    // An address can only be live once; a stale entry means we missed its free
    // (freed on a thread without the hook): the new allocation replaces it.
    live_[ptr] = Live{index, seq_++, Category::Temporary};
    ++counts_.allocs;
}

void AllocationLedger::onFree(uint64_t ptr, uint64_t size, int16_t device, int64_t time) {
    std::lock_guard lock(mutex_);
    Pending p;
    p.event = makeEvent(EventKind::FreeCompleted, ptr, size, device, time, phase_);
    auto it = live_.find(ptr);
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

void AllocationLedger::setPhase(PhaseId phase) {
    std::lock_guard lock(mutex_);
    phase_ = phase;
}

void AllocationLedger::tag(uint64_t ptr, Category category) {
    std::lock_guard lock(mutex_);
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
    return seq_;
}

void AllocationLedger::classifyLiveSince(uint64_t mark, Category category) {
    std::lock_guard lock(mutex_);
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
    return counts_;
}

}  // namespace memscope::trainer
