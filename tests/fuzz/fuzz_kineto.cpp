// The kineto importer (gzip + streaming JSON) on arbitrary bytes.
#include <cstddef>
#include <cstdint>
#include <span>

#include "memscope/plugins/kineto.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    (void)memscope::kineto::importBytes(std::span(reinterpret_cast<const std::byte*>(data), size));
    (void)memscope::kineto::probe(
        std::span(reinterpret_cast<const std::byte*>(data), size < 4096 ? size : 4096), "f.json");
    return 0;
}
