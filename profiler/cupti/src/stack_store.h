#pragma once
// Host stacks at allocation calls. Capturing (backtrace of raw addresses) runs
// on the allocating thread and is kept short; symbolizing (dladdr, demangling)
// runs later on CUPTI's buffer thread, when the record naming the same
// correlation id is decoded, with a cache per address.

#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "memscope/format/native_format.h"

namespace memscope::cupti {

class StackStore {
public:
    static constexpr int kMaxFrames = 48;

    // Call once before the first capture: backtrace() loads libgcc lazily,
    // which must not happen first inside an allocation callback.
    static void warmUp();

    // Captures the calling thread's stack; returns the raw addresses.
    static std::vector<void*> captureHere();

    void put(uint32_t correlation_id, const std::vector<void*>& frames);
    // Removes and symbolizes the stack for this correlation id.
    StackId take(uint32_t correlation_id, BackgroundTraceWriter& writer);

    size_t pending() const;

private:
    FrameId symbolize(void* address, BackgroundTraceWriter& writer);

    mutable std::mutex mutex_;
    std::unordered_map<uint32_t, std::vector<void*>> pending_;
    std::deque<uint32_t> order_;  // oldest first: bounds stacks never claimed
    std::mutex symbol_mutex_;     // CUPTI may deliver buffers on more than one thread
    std::unordered_map<void*, FrameId> frames_;  // symbolization cache
};

}  // namespace memscope::cupti
