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
    // vmm_callbacks was turned on because PyTorch's allocator is configured
    // with expandable segments (its memory is cuMemMap'ed: no activity record).
    bool vmm_for_expandable_segments = false;

    bool needsSubscriber() const { return stacks || vmm_callbacks; }
};

// Looks up one environment variable (null when unset); tests pass their own.
using EnvLookup = const char* (*)(const char* name);

TracerOptions optionsFromEnvironment(EnvLookup lookup);
TracerOptions optionsFromEnvironment();  // std::getenv

// True when a PyTorch allocator configuration string (PYTORCH_CUDA_ALLOC_CONF,
// "key:value,key:value") turns expandable segments on.
bool expandableSegmentsEnabled(const char* alloc_conf);

}  // namespace memscope::cupti
