#pragma once
// Where decoded CUPTI records go. The tracer forwards to the background trace
// writer; tests collect into vectors. Keeps the decoder free of any global
// state, of the driver and of the file format.

#include <cstdint>
#include <string_view>

#include "memscope/model/event.h"

namespace memscope::cupti {

class EventSink {
public:
    virtual ~EventSink() = default;
    // Raw CUDA stream id -> the trace's stream index.
    virtual uint32_t stream(uint64_t raw_stream) = 0;
    // The host stack captured for this correlation id, if any (consumed).
    virtual StackId stackFor(uint32_t correlation_id) { return StackId{}; }
    // The innermost phase active at this time.
    virtual PhaseId phaseAt(int64_t time) { return PhaseId{}; }
    // Returns the event's index, for attributes.
    virtual uint64_t append(const Event& event) = 0;
    virtual void attribute(uint64_t event, std::string_view key, std::string_view value) = 0;
};

}  // namespace memscope::cupti
