#include "delivery_monitor.h"

namespace memscope::cupti {

void DeliveryMonitor::bufferRequested() {
    std::lock_guard lock(mutex_);
    ++requested_;
}

void DeliveryMonitor::bufferCompleted() {
    std::lock_guard lock(mutex_);
    ++completed_;
}

void DeliveryMonitor::recordsDelivered(uint64_t memory_records, int64_t newest_time) {
    std::lock_guard lock(mutex_);
    memory_records_ += memory_records;
    if (newest_time > newest_record_) newest_record_ = newest_time;
}

void DeliveryMonitor::allocationCall(int64_t enter_time) {
    std::lock_guard lock(mutex_);
    recent_[calls_ % kRecentCalls] = enter_time;
    ++calls_;
}

DeliveryMonitor::Verdict DeliveryMonitor::verdict() const {
    std::lock_guard lock(mutex_);
    Verdict v;
    v.calls_seen = calls_;
    v.memory_records = memory_records_;
    v.buffers_outstanding = requested_ > completed_ ? requested_ - completed_ : 0;
    const uint64_t recent = calls_ < kRecentCalls ? calls_ : kRecentCalls;
    for (uint64_t i = 0; i < recent; ++i)
        if (recent_[i] > newest_record_) ++v.calls_without_record;
    // A record's timestamp is at or after its call's start: a call that began
    // after the newest record has no record among those we received.
    v.taken_over = v.calls_without_record > 0;
    return v;
}

}  // namespace memscope::cupti
