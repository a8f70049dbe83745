#pragma once
// What the tracer records, from the environment `memscope-cli record` sets
// (memscope_cupti/record_env.h).

#include <string>

namespace memscope::cupti {

struct TracerOptions {
    std::string output_dir = ".";
    bool tensor_level = false;   // allocations are tensors (no caching allocator)
    bool stacks = false;         // host stack per allocation (needs a subscriber)
    bool vmm_callbacks = false;  // cuMemCreate/Map/Unmap/Release (needs a subscriber)

    bool needsSubscriber() const { return stacks || vmm_callbacks; }
};

TracerOptions optionsFromEnvironment();

}  // namespace memscope::cupti
