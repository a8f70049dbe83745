// The torch.profiler memory-timeline importer on arbitrary bytes.
#include <cstddef>
#include <cstdint>
#include <span>

#include "memscope/plugins/memory_timeline.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    (void)memscope::memory_timeline::importBytes(
        std::span(reinterpret_cast<const std::byte*>(data), size));
    return 0;
}
