#pragma once
// Which phase was innermost at a given time. CUPTI delivers allocation records
// up to a second after they happened, when the NVTX stack has moved on, so
// the phase of an event is looked up by its timestamp, not taken from "now".
// Thread-safe: NVTX threads add and end phases, the CUPTI thread looks up.

#include <cstdint>
#include <deque>
#include <mutex>

#include "memscope/model/types.h"

namespace memscope::cupti {

class PhaseIndex {
public:
    // Phases that ended this long before the newest one began can no longer
    // contain a record still to come (CUPTI hands buffers over every 500 ms).
    static constexpr int64_t kHorizonNs = 120'000'000'000;
    // Every this many opens, the index forgets what is past the horizon, so
    // that it stays small even when no CUPTI buffer ever arrives (NVTX only,
    // or CUPTI taken over by another tool).
    static constexpr uint32_t kPruneEvery = 1024;
    // Hard bound: beyond it the oldest closed phases go whatever their age
    // (a record that late gets no phase; a lookup scans 512 entries anyway).
    static constexpr size_t kMaxEntries = 1u << 18;

    // Phases must be opened in (roughly) increasing start order, which holds
    // for NVTX: start is "now" when the range is pushed.
    void open(PhaseId id, int64_t start);
    void close(PhaseId id, int64_t end);

    // The phase with the latest start among those containing `time`
    // (start <= time < end, or still open); null when none is found within a
    // bounded backward scan (keeps a lookup cheap under millions of ranges).
    PhaseId innermostAt(int64_t time) const;

    // Forgets closed phases that ended before `horizon` (records older than
    // that are not expected any more); keeps memory bounded on long runs.
    void forgetBefore(int64_t horizon);

    size_t size() const;

private:
    struct Entry {
        int64_t start;
        int64_t end;  // INT64_MAX while open
        PhaseId id;
    };
    void pruneLocked(int64_t newest_start);

    mutable std::mutex mutex_;
    std::deque<Entry> entries_;  // ordered by start (ties: insertion order)
    uint32_t opens_since_prune_ = 0;
};

}  // namespace memscope::cupti
