#pragma once
// Encoding of an events chunk: a palette of (kind, category, device, stream)
// and six delta/varint columns (docs/FORMAT.md, "Events").

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "memscope/model/event.h"

namespace memscope::native {

// How an events chunk's address column is coded (the chunk's flags say which).
enum class EventCoding : uint8_t {
    Deltas,        // 1.0: every address is a delta to its context's previous one
    RecentAllocs,  // 1.4: a free may instead name one of its device's last 16 allocations
};

// Keeps its scratch buffers between chunks, so one per writer.
class EventEncoder {
public:
    // Appends the raw (uncompressed) payload for `events` to `out`, in the
    // RecentAllocs coding (Deltas is only read, from files before 1.4).
    void encode(std::span<const Event> events, uint64_t first_index,
                std::vector<unsigned char>& out);

    // Where, in the last encode's `out`, each of the six columns (its length
    // prefix) starts: a writer compresses them apart.
    const std::array<size_t, 6>& columnStarts() const { return column_starts_; }

private:
    uint32_t paletteIndex(uint64_t key);

    std::vector<unsigned char> columns_[6];
    std::array<size_t, 6> column_starts_{};
    std::vector<uint64_t> palette_;    // keys in first-use order
    std::vector<uint64_t> slot_keys_;  // open-addressing table: key + 1, 0 = empty
    std::vector<uint32_t> slot_values_;
};

// What decoded ids must stay below (the tables read so far).
struct EventLimits {
    uint64_t stack_count = 1;   // StackId < stack_count
    uint64_t phase_count = 0;   // PhaseId <= phase_count
    uint64_t stream_count = 1;  // stream < stream_count
};

// Decodes the chunk's events into `out` (exactly `count` slots); checks that
// the chunk starts at event `first_index` and holds `count` events. Returns
// the reason on failure (`out` then holds garbage), an empty string on success.
std::string decodeEvents(std::span<const unsigned char> payload, uint32_t count,
                         uint64_t first_index, const EventLimits& limits, EventCoding coding,
                         std::span<Event> out);

// Same, appending to `out`, which is left as it was on failure.
std::string decodeEvents(std::span<const unsigned char> payload, uint32_t count,
                         uint64_t first_index, const EventLimits& limits, EventCoding coding,
                         std::vector<Event>& out);

}  // namespace memscope::native
