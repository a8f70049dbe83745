// core's native trace reader, from memory, on arbitrary bytes.
#include <cstddef>
#include <cstdint>
#include <span>

#include "memscope/format/native_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    memscope::NativeReadReport report;
    (void)memscope::readNativeTrace(std::span(reinterpret_cast<const std::byte*>(data), size), {},
                                    &report);
    return 0;
}
