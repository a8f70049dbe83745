#pragma once
// Large, realistic Traces for benchmarks: a simulated training loop on a few
// devices, through a caching-allocator-like address model (segments, blocks
// reused by size), with shared deep stacks, nested phases and an end state.

#include <cstdint>

#include "memscope/model/trace.h"

namespace memscope::bench {

struct GeneratorOptions {
    uint64_t events = 10'000'000;  // exactly this many events
    uint64_t seed = 1;             // same options and seed, same trace
    int devices = 2;
    int blocks = 24;  // model blocks per forward/backward
    int distinct_frames = 2000;
    int distinct_stacks = 5000;
    int min_stack_depth = 20;
    int max_stack_depth = 60;
};

Trace generateTrace(const GeneratorOptions& options);

}  // namespace memscope::bench
